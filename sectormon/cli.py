"""Command-line entry point: picks the subcommand module and turns errors into one-line messages.

``sectormon [options] [-- CMD ARGS]`` is the live monitor (TUI, or ``--json``); the other jobs are
subcommands (``check``, ``events``, ``sim``, ``replay``, ``fapp``, ``import``, ``compare``,
``hotspots``, ``stat``). Each
lives in ``sectormon/commands/<name>.py`` with ``configure(parser)`` and ``run(args) -> int``, so
this module stays a dispatcher and imports only the command that runs (the JSON path never pulls in
Textual).
"""

from __future__ import annotations

import errno
import sys

from sectormon import __version__
from sectormon.commands import startup
from sectormon.errors import SectormonError, UsageError
from sectormon.files.text import print_message

TYPE_CHECKING = False  # typing itself takes 8 ms, a quarter of `sectormon stat`'s quick start
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from sectormon.commands.parser import Command

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": (
        "check",
        "Report whether sectormon can count here: CPU, paranoid level, PMUs, topology, event probe.",
    ),
    "events": ("events", "List a profile's events with code, scope, groups and support on this host."),
    "sim": ("sim", "Run the simulated A64FX sector-cache model (kernels or a din trace)."),
    "replay": ("replay", "Replay a recording in the TUI or as a JSON stream."),
    "fapp": ("fapp", "Compute the CPU PA report and sector metrics from fapp cpupa exports (CSV or XML)."),
    "import": ("import_", "Convert foreign data (fapp cpupa CSV or XML) into a sectormon recording."),
    "top": ("top", "List the processes (htop's keys) and count the one you pick, as sectormon --pid does."),
    "compare": ("compare", "Compare a baseline run with a tuned run (recordings or fapp directories)."),
    "merge": (
        "merge",
        "Merge the nodes' recordings of one job into a job file (replay and compare read it).",
    ),
    "hotspots": (
        "hotspots",
        "Sample an event and attribute it to functions and data objects (scale factor, latency buckets).",
    ),
    "markers": ("markers", "Print the flags to compile and link a program marked with fapp or LIKWID calls."),
    "stat": ("stat", "Count a command, processes or CPUs and print perf stat's summary at the end."),
}


COUNTING_MODULES = ("monitor", "stat")
"""The commands that end the start themselves, before they build a session (sectormon.commands.startup)."""


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["stat"]:
        status = _quick_stat(words[1:])
        if status is not None:
            return status
    if argv is None:  # the process's own command line: its start pauses the collector
        startup.pause()
    try:
        return _main(words)
    finally:
        startup.done()


def _quick_stat(rest: list[str]) -> int | None:
    """``stat`` without the engine when the command line allows it (sectormon.commands.stat_quick);
    ``None``: the engine runs it."""
    from sectormon.commands.stat_quick import quick_request, run_quick

    request = quick_request(rest)
    if request is None:
        return None
    try:
        return run_quick(request)
    except SectormonError as exc:
        print_message(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:  # before the command was released: nothing ran, nothing to report
        return 130


def _load(module: str) -> Command:
    from sectormon.commands.parser import load_command

    return load_command(module)


def build_parser(name: str | None) -> argparse.ArgumentParser:
    """The parser of one command (``None``: the live monitor)."""
    from sectormon.commands.parser import build_parser as build

    return build(name, SUBCOMMANDS)


def _main(argv: list[str]) -> int:
    name = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    rest = argv[1:] if name else argv
    module = SUBCOMMANDS[name][0] if name else "monitor"
    # The live monitor takes SIGINT/SIGTERM before anything else: a signal during start-up ends
    # it cleanly too (sectormon.session.stopping).
    import contextlib

    from sectormon.session import stopping

    latch = stopping.installed() if name is None else contextlib.nullcontext()
    try:
        if name is None and rest == ["--version"]:
            # Answered before the parser is built (that imports the monitor's options): scripts
            # ask this often, and it should take no longer than the interpreter's start.
            from sectormon.commands.options.output import write_stdout

            write_stdout(f"sectormon {__version__}\n", "version")
            return 0
        with latch:
            if name is None:
                _refuse_misspelt_subcommand(rest)
            parser = build_parser(name)
            args = parser.parse_args(rest)
            command = _load(module)
            if module not in COUNTING_MODULES:
                startup.done()
            return command.run(args)
    except SectormonError as exc:
        print_message(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `sectormon --json | head`: the reader is gone; exit quietly like other Unix filters.
        _silence_stdout()
        return 0
    except OSError as exc:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        # Out of fds outside a perf_event_open (a pipe, a /proc file): one line, as for the opens.
        from sectormon.perf.errors import fd_numbers

        print(
            f"sectormon: out of file descriptors ({exc.strerror}), {fd_numbers()} "
            "(fix: raise the limit with `ulimit -n`, or count fewer threads or events)",
            file=sys.stderr,
        )
        return 2


def _refuse_misspelt_subcommand(argv: Sequence[str]) -> None:
    """``sectormon replai x`` would try to launch a program ``replai``: say what was probably meant.

    Only a first word that is close to a subcommand and names no program on PATH is refused; a
    program is still launched by its name, its path, or after ``--``.
    """
    if not argv or argv[0].startswith("-") or "/" in argv[0]:
        return
    import shutil  # here, as difflib: --version needs neither

    if shutil.which(argv[0]):
        return
    import difflib  # only for a word that is not a subcommand

    close = difflib.get_close_matches(argv[0], SUBCOMMANDS, n=1, cutoff=0.6)
    if close:
        raise UsageError(
            f"'{argv[0]}' is neither a subcommand nor a program on PATH: did you mean "
            f"'sectormon {close[0]}'? (to launch a program, give its path or put it after --)"
        )


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not complain."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
