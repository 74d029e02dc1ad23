"""Run a live session in a front end: the JSON stream or the TUI (``sectormon`` and ``sectormon sim``).

Also the command-line checks both share: number options, the stream's output file, and the exit
status, which is a launched command's own as with ``perf stat``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from typing import TYPE_CHECKING

from sectormon.commands.options import numbers
from sectormon.commands.options.openmetrics import add_openmetrics_options, check_output_mode
from sectormon.commands.options.output import StreamOutput, require_terminal
from sectormon.commands.options.theme import add_theme_option, check_theme
from sectormon.data.hotspots import DEFAULT_TOP
from sectormon.errors import UsageError
from sectormon.files.output import check_writable, is_stdout
from sectormon.files.text import is_ascii_digits, print_message, print_warning
from sectormon.rotation.plan import AUTO, KERNEL_READ_EVERY, ROTATION_MODES
from sectormon.session import stopping
from sectormon.session.options import DEFAULT_MAX_OVERHEAD, SessionRequest
from sectormon.sources.base import SampleRequest
from sectormon.sources.perf.launch import shell_status

if TYPE_CHECKING:  # the session and the exporter are imported by the commands that make them
    from sectormon.export.server import OpenMetricsExporter
    from sectormon.session.live import LiveSession
    from sectormon.ui.attach import AttachOffer

TIMESLICE = numbers.TIMESLICE_OPTION
INTERVAL = numbers.INTERVAL_OPTION
RECENT = numbers.RECENT_OPTION


def add_session_options(
    how: argparse._ArgumentGroup,
    out: argparse._ArgumentGroup,
    *,
    clock: str,
    timeslice: str,
    interval: str,
    output_help: str = "write the JSON stream to FILE instead of stdout",
) -> None:
    """The options of a live session; ``clock`` says whose seconds they are, ``timeslice`` and
    ``interval`` their defaults (help texts), ``output_help`` what ``-o`` writes. The ranges of
    the time options depend on the source, known once the whole command line is read
    (:func:`session_request` reads them)."""
    how.add_argument("--groups", help="comma-separated groups to rotate (default: all of the profile's)")
    how.add_argument(
        "--timeslice",
        type=TIMESLICE,
        help=TIMESLICE.help(f"{clock} seconds each group runs before the next ({timeslice})"),
    )
    how.add_argument(
        "--interval", type=INTERVAL, help=INTERVAL.help(f"{clock} seconds between frames ({interval})")
    )
    how.add_argument(
        "--rotation",
        choices=ROTATION_MODES,
        default=AUTO,
        help="who rotates the groups: 'sync' switches them in lock-step on every unit each timeslice "
        "(two ioctls per unit and slice; metrics over CMG-wide and per-PE events see the same slices), "
        "'kernel' enables them all and lets the kernel's multiplexer rotate them (reads only, every "
        f"--timeslice or {KERNEL_READ_EVERY:g} s), 'auto' (default) takes kernel unless a group mixes "
        "CMG-wide and per-PE events or the source cannot multiplex, and switches sync to kernel "
        "over --max-overhead (docs/perf.md)",
    )
    how.add_argument(
        "--max-overhead",
        type=numbers.MAX_OVERHEAD.parser("--max-overhead"),
        metavar="PCT",
        help=numbers.MAX_OVERHEAD.help(
            f"sampler CPU budget in %% of one core (default {DEFAULT_MAX_OVERHEAD:g}); over it the "
            "timeslice doubles, or auto rotation switches sync to kernel, with a warning"
        ),
    )
    how.add_argument(
        "--proxy",
        type=numbers.PROXY.parser("--proxy"),
        metavar="N",
        help=numbers.PROXY.help(
            "per CMG, only N stand-ins (the busiest threads, handed on when one idles; with --cpus "
            "the first N CPUs) count the rotating groups and their counts are scaled to the CMG; the "
            "other units count only the always-on events, their rows show the proxied figures as "
            "n/a, and every estimate is flagged 'proxy' (docs/perf.md)"
        ),
    )
    how.add_argument(
        "--region-level",
        type=numbers.REGION_LEVEL.parser("--region-level"),
        default=0,
        metavar="N",
        help=numbers.REGION_LEVEL.help(
            "a launched program's fapp_start/fapp_stop calls with a level above N are ignored, as "
            "fapp -L N does (default 0); its marked regions are counted exactly (docs/regions.md)"
        ),
    )
    how.add_argument(
        "--sample",
        metavar="EVENT[:PERIOD]",
        help="also sample EVENT (a profile event, or a perf event spec) every PERIOD events and show "
        "its hot spots: functions and data objects (TUI view 6, the frames' 'hotspots')",
    )
    how.add_argument(
        "--sample-top",
        type=numbers.TOP.parser("--sample-top"),
        metavar="N",
        help=numbers.TOP.help(f"hot-spot rows per view in each frame (default {DEFAULT_TOP})"),
    )
    how.add_argument(
        "--recent",
        type=RECENT,
        help=RECENT.help(
            "rolling window in seconds (default 10; on the simulator 10 intervals of simulated time)"
        ),
    )
    out.add_argument(
        "--json", action="store_true", help="headless: JSON Lines on stdout (header, then frames)"
    )
    out.add_argument("-o", "--output", metavar="FILE", help=output_help)
    out.add_argument(
        "--count", type=numbers.COUNT.parser("--count"), help=numbers.COUNT.help("stop after N frames")
    )
    out.add_argument(
        "--duration",
        type=numbers.DURATION.parser("--duration"),
        help=numbers.DURATION.help(f"stop after S {clock} seconds"),
    )
    out.add_argument(
        "--baseline-after",
        type=numbers.BASELINE_AFTER.parser("--baseline-after"),
        metavar="S",
        help=numbers.BASELINE_AFTER.help("mark the baseline once S seconds have run"),
    )
    out.add_argument(
        "--record",
        metavar="FILE",
        help="record raw readings to FILE (.gz to compress); checked before the session starts",
    )
    add_theme_option(out)
    add_openmetrics_options(out)


def session_request(args: argparse.Namespace, clock: str) -> SessionRequest:
    """The typed request of :func:`add_session_options`' options; the time options are read
    against the ranges of the source's ``clock`` (``perf`` or ``sim``) and kept in ``args`` as
    seconds (the simulator's pace uses the interval)."""
    numbers.read_clock_options(args, clock)
    groups = None
    if args.groups is not None:
        groups = tuple(part.strip() for part in args.groups.split(",") if part.strip())
        if not groups:
            raise UsageError(f"--groups {args.groups!r}: name at least one group, e.g. --groups SC1,SC3")
    sample = sample_request(args.sample, args.sample_top)
    check_output_mode(args, record=args.record)
    if args.output and args.record and args.output != "-" and _same_file(args.output, args.record):
        raise UsageError(
            f"-o {args.output} and --record {args.record} name the same file: the frame stream and the "
            "recording would overwrite each other; give them different files"
        )
    if args.record:
        if _writes_stdout(args) and is_stdout(args.record):
            raise UsageError(
                f"--record {args.record} is where stdout goes: the recording and the "
                f"{'frame stream' if args.json else 'TUI'} would be mixed in one file; record to another file"
            )
        check_writable(args.record, "--record")
    return SessionRequest(
        groups=groups,
        timeslice=args.timeslice,
        interval=args.interval,
        recent=args.recent,
        count=args.count,
        duration=args.duration,
        baseline_after=args.baseline_after,
        record=args.record,
        sample=sample,
        rotation=args.rotation,
        max_overhead=args.max_overhead,
        proxy=args.proxy,
        region_level=args.region_level,
    )


def sample_request(text: str | None, top: float | None) -> SampleRequest | None:
    """``--sample EVENT[:PERIOD]`` and ``--sample-top N``, checked. A spec's own colons (perf
    modifiers such as ``cycles:u``) stay in EVENT: only a number after the last one is a period."""
    if text is None:
        if top is not None:
            raise UsageError(f"--sample-top {top} sets the rows of --sample's hot spots; add --sample EVENT")
        return None
    event, colon, tail = text.rpartition(":")
    period = None
    if colon and event and is_ascii_digits(tail):
        period = int(tail)
        if not numbers.PERIOD.contains(period):
            raise UsageError(
                f"--sample {text}: give the period as {numbers.PERIOD.describe()}, e.g. {event}:10007"
            )
    else:
        event = text
    if not event.strip():
        raise UsageError("--sample: name the event to sample, e.g. --sample L1D_CACHE_REFILL:10007")
    return SampleRequest(event.strip(), period, DEFAULT_TOP if top is None else int(top))


class CommandLog:
    """Where a command launched under the TUI writes (stdout and stderr, in order) and reads
    (``/dev/null``): a file kept under ``$TMPDIR`` while it runs, copied to our stderr at the end."""

    def __init__(self, path: str, fd: int, stdin_fd: int) -> None:
        self.path = path
        self.fd = fd
        self.stdin_fd = stdin_fd

    @classmethod
    def create(cls) -> CommandLog:
        import tempfile  # only a command under the TUI has a log

        fd, path = tempfile.mkstemp(prefix="sectormon-command-", suffix=".log")
        return cls(path, fd, os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))

    def note(self) -> str:
        return f"the command's output goes to {self.path}; it is shown when you quit"

    def show_and_remove(self) -> None:
        """The command's output on stderr, as it would have been without the TUI."""
        for fd in (self.fd, self.stdin_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            with open(self.path, "rb") as log:
                if os.fstat(log.fileno()).st_size:
                    sys.stderr.flush()
                    print_message("the command's output:")
                    shutil.copyfileobj(log, sys.stderr.buffer)
                    sys.stderr.buffer.flush()
            os.unlink(self.path)
        except OSError as exc:  # not shown (the terminal is gone: SIGHUP): the file keeps it
            with contextlib.suppress(OSError):
                print_warning(f"the command's output is kept in {self.path} ({exc.strerror})")


def open_output(args: argparse.Namespace) -> StreamOutput | None:
    """The JSON stream's output (``None``: the TUI, or ``--headless``), opened before anything
    starts so a bad path, a closed stdout or a missing terminal fails at once."""
    if not args.json:
        if args.output:
            raise UsageError("-o/--output is for the --json stream; add --json (or use --record FILE)")
        if not args.headless:
            require_terminal()
        return None
    check_theme(args.theme)
    return StreamOutput(args.output)


def run_session(
    session: LiveSession,
    output: StreamOutput | None,
    *,
    headless: bool = False,
    theme: str | None = None,
    command_log: CommandLog | None = None,
    exporter: OpenMetricsExporter | None = None,
    attach: AttachOffer | None = None,
) -> int:
    """Run ``session`` into ``output`` (JSON Lines), ``headless`` (only the recording and the
    ``exporter`` see its frames) or in the TUI (``attach``: what its ``p`` offers); the exit status
    (a launched command's own when it ended by itself)."""
    latch = stopping.current()
    if latch is not None and latch.attach(session.stop):
        # SIGINT/SIGTERM came while the session was set up: it ends before it counts.
        session.discard()
        if exporter is not None:
            exporter.close()
        if command_log is not None:
            command_log.show_and_remove()
        return 0
    if exporter is not None:
        exporter.start(session.header)
        session.subscribe(exporter.publish)
    try:
        if headless:
            session.run_headless()
            status = 0
        elif output is not None:
            status = _run_json(session, output)
        else:
            from sectormon.ui.app import run_tui

            stopping.release()  # the TUI quits on SIGTERM its own way
            try:
                status = run_tui(session, theme=theme, attach=attach)
            finally:
                if command_log is not None:
                    command_log.show_and_remove()
    finally:
        if exporter is not None:
            exporter.close()
    status = _command_status(session) if status == 0 else status
    if status == 0 and session.recording_failed:
        return 1  # the warning said why; a script must not take the run's recording as whole
    return status


def _run_json(session: LiveSession, output: StreamOutput) -> int:
    from sectormon.io.stream import JsonStream

    def failed() -> None:
        output.failed()
        session.stop()

    stream = JsonStream(output.handle, on_closed=session.stop, on_error=failed)
    try:
        session.when_counting(lambda: stream.write_header(session.header))
        session.subscribe(stream.write_frame)
        session.run_headless()
    except BaseException:
        output.close()
        raise
    output.finish(stream.error)
    return 0


def _command_status(session: LiveSession) -> int:
    """sectormon's exit status after a clean run: the launched command's own, as with ``perf stat``
    and ``time`` (a job script sees a failed run fail), said on stderr when it is not 0. 0 when
    there was no command, or it did not end by itself (stopped with sectormon)."""
    code = session.command_exit_code()
    if not code:
        return 0
    note = session.end_note()  # the source's words for how its target ended
    if note is not None:
        print_warning(note)
    return shell_status(code)


def _writes_stdout(args: argparse.Namespace) -> bool:
    """Whether the session writes stdout: the JSON stream without ``-o FILE``, or the TUI."""
    if args.headless:
        return False
    return not args.json or args.output in (None, "-")


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (an existing one through links, else by resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
