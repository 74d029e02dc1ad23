"""``sectormon stat [options] -- CMD`` / ``--pid PID`` / ``--cpus LIST``: perf stat's front end.

A headless live session, the one ``sectormon --json`` runs (:func:`open_session`,
:meth:`LiveSession.run_headless`), and at its end perf stat's summary on stderr (or ``-o FILE``):
counts, the share of time each ran, the profile's metrics with their coverage, the elapsed time
and the command's user and system time. ``-x SEP`` writes perf's CSV fields, ``-I MS`` interval
rows as the frames come, ``-r N`` runs the command N times and prints means with perf's spread;
a marked program's regions get blocks of their own. ``--json`` still streams the frames on
stdout (the summary then goes to stderr). The exit status is the command's, as with perf stat.
The figures come from :mod:`.stat_counts`, the layout from :mod:`.stat_report`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import sys
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TextIO

from sectormon.commands import startup, stat_report
from sectormon.commands.front_end import add_session_options, run_session, session_request
from sectormon.commands.options import numbers
from sectormon.commands.options.binding import add_bind_option, bind_cpus
from sectormon.commands.options.events import RunEvents, add_events_option, perf_profile
from sectormon.commands.options.openmetrics import open_exporter
from sectormon.commands.options.output import StreamOutput
from sectormon.commands.stat_counts import Intervals, Shown, run_blocks
from sectormon.data.binding import ThreadBinding
from sectormon.data.frames import Frame
from sectormon.errors import UsageError
from sectormon.files.output import OutputError, open_output
from sectormon.files.text import print_warning
from sectormon.host.topology import format_cpu_list, load_topology, parse_cpu_list
from sectormon.session.options import SessionRequest
from sectormon.sources.perf.source import PerfSource
from sectormon.sources.perf.targets import CommandTarget, CpuTarget, PidTarget, Target

REPEAT = numbers.whole(1, 100, "runs")  # perf stat's own limit for -r
INTERVAL_MS = numbers.whole(10, 86_400_000, "milliseconds")  # perf stat's -I floor is 10 ms


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("what to count (one of)")
    target.add_argument(
        "--pid",
        type=numbers.ListParser(numbers.PID, "--pid"),
        metavar="PID[,PID...]",
        help=numbers.PID.help("count these processes until Ctrl-C or --duration"),
    )
    target.add_argument(
        "--no-children",
        action="store_true",
        help="count only the threads of the --pid processes or the command, not the processes they start",
    )
    target.add_argument("--cpus", metavar="LIST", help="count these CPUs system-wide, e.g. 12-23 or 0,2-3")
    add_bind_option(target)
    target.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS: launch CMD and count it")
    report = parser.add_argument_group("report (perf stat's options)")
    report.add_argument(
        "-x",
        "--field-separator",
        metavar="SEP",
        help="CSV: perf stat's fields (value, unit, event, run time, percentage running, metric "
        "value, metric unit) separated by SEP",
    )
    report.add_argument(
        "-I",
        "--interval-print",
        type=INTERVAL_MS.parser("-I"),
        metavar="MS",
        help=INTERVAL_MS.help("also print the counts of every MS milliseconds (the frame interval)"),
    )
    report.add_argument(
        "-r",
        "--repeat",
        type=REPEAT.parser("-r"),
        default=1,
        metavar="N",
        help=REPEAT.help("run the command N times; print the means and their spread ( +- x.xx%% )"),
    )
    how = parser.add_argument_group("how to count")
    how.add_argument("--profile", default="auto", help="event profile: auto, a64fx, generic, or a YAML path")
    how.add_argument(
        "--include-kernel", action="store_true", help="also count kernel mode (needs paranoid <= 1)"
    )
    add_events_option(how)
    out = parser.add_argument_group("output")
    add_session_options(
        how,
        out,
        clock="perf",
        timeslice=f"default {PerfSource.default_timeslice:g}",
        interval=f"default {PerfSource.default_interval:g}",
        output_help="write the report to FILE instead of stderr (with --json: the JSON stream)",
    )


def run(args: argparse.Namespace) -> int:
    command = _command(args.command)
    title = _title(args, command)
    for option, given in (("--headless", args.headless), ("--theme", args.theme is not None)):
        if given:
            raise UsageError(f"{option} is for the monitor's TUI and services; stat prints a report: drop it")
    if args.interval_print is not None:
        if args.interval is not None:
            raise UsageError("-I MS and --interval both set the interval; give one")
        args.interval = args.interval_print / 1000.0
    runs = int(args.repeat)
    if runs > 1:
        for option, given in (
            ("--pid/--cpus", not command),
            ("--json", args.json),
            ("--record", args.record),
            ("--openmetrics", args.openmetrics),
        ):
            if given:
                raise UsageError(f"-r {runs} repeats a launched command; it cannot be combined with {option}")
    request = session_request(args, "perf")
    sep = args.field_separator
    if sep is not None and not sep:
        raise UsageError("-x '': give the separator, e.g. -x ,")
    report = _Report(None if args.json else args.output)
    try:
        stream = StreamOutput(args.output) if args.json else None  # opened before anything starts
        return _run(args, command, title, request, report, runs, stream)
    finally:
        report.close()


def _run(
    args: argparse.Namespace,
    command: Sequence[str],
    title: str,
    request: SessionRequest,
    report: _Report,
    runs: int,
    stream: StreamOutput | None,
) -> int:
    """``runs`` sessions (one with ``stream``, the JSON stream), then the report; the status of
    the last run."""
    thousands = stat_report.thousands_separator()
    finals: list[Frame] = []
    walls: list[float] = []
    status = 0
    shown: Shown | None = None
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    binding: list[str] = []
    for _ in range(runs):
        run = _one_run(args, command, request, report, stream, thousands)
        status, shown, binding = run.status, run.shown, run.binding or binding
        walls.append(run.wall)
        if run.final is not None:
            finals.append(run.final)
        if not run.ended:
            break  # stopped before the command ended (Ctrl-C): no more runs
    if shown is None or not finals:
        return status
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    blocks = run_blocks(shown, title, finals)
    user_sys = (cpu_after.ru_utime - cpu_before.ru_utime, cpu_after.ru_stime - cpu_before.ru_stime)
    elapsed = stat_report.elapsed_of(walls, user_sys if command else None)
    report.write(
        stat_report.report_lines(
            blocks, elapsed, runs=len(finals), sep=args.field_separator, separator=thousands, binding=binding
        )
    )
    return status


def _one_run(
    args: argparse.Namespace,
    command: Sequence[str],
    request: SessionRequest,
    report: _Report,
    stream: StreamOutput | None,
    thousands: str,
) -> _OneRun:
    """One session (:class:`_OneRun`)."""
    from sectormon.session.setup import open_session  # the session's modules: once options are read

    events, source, target = _open_source(args, command)
    exporter = open_exporter(args)
    startup.done()  # what follows is the run's, not the start's: collected as usual
    try:
        session = open_session(
            source, events.profile, request, on_warning=print_warning, required=events.required
        )
    except BaseException:
        source.close()
        if exporter is not None:
            exporter.close()
        if stream is not None:
            stream.close()
        raise
    shown = Shown(events.profile, events.labels, frozenset(session.plan.dropped))
    if args.interval_print is not None:
        session.subscribe(_interval_printer(shown, report, args.field_separator, thousands))
    seen = _BindingSeen(_binding_source(args, source))
    if seen.how:
        session.subscribe(seen.on_frame)
    started = time.perf_counter()
    status = run_session(session, stream, headless=stream is None, exporter=exporter)
    wall = time.perf_counter() - started
    ended = not isinstance(target, CommandTarget) or session.command_exit_code() is not None
    return _OneRun(status, shown, session.final_frame, wall, ended, seen.lines())


class _OneRun(NamedTuple):
    """One session: its status, what it shows, its final frame, its wall-clock seconds, whether
    a launched command ended by itself (else the session was stopped), its binding lines."""

    status: int
    shown: Shown
    final: Frame | None
    wall: float
    ended: bool
    binding: list[str]


def _binding_source(args: argparse.Namespace, source: PerfSource) -> str:
    """Why the report says the binding (``""``: it does not): ``--bind`` was given, or the run
    counts an A64FX, whose sector cache needs every thread bound (PMU document 6.7, note 1)."""
    if args.bind is not None:
        return f"--bind {args.bind}"
    return "sector cache: binding required" if source.topology.is_a64fx else ""


class _BindingSeen:
    """Each thread's newest binding over the run's frames (a thread that ended early too)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.threads: dict[str, ThreadBinding] = {}

    def on_frame(self, frame: Frame) -> None:
        self.threads.update(frame.bindings)

    def lines(self) -> list[str]:
        if not self.how or not self.threads:
            return []
        threads = [
            (int(tid), format_cpu_list(binding.cpus), binding.migrations)
            for tid, binding in sorted(self.threads.items(), key=lambda item: int(item[0]))
        ]
        return stat_report.binding_lines(threads, self.how)


def _command(words: Sequence[str] | None) -> list[str]:
    command = list(words or [])
    dashes = command[:1] == ["--"]
    if dashes:
        command = command[1:]
    if (dashes or command) and not (command and command[0].strip()):
        raise UsageError("no program name after --: write the program to count, e.g. sectormon stat -- ./app")
    return command


def _title(args: argparse.Namespace, command: Sequence[str]) -> str:
    """What perf names the target in its header; exactly one target is given."""
    given = [
        name
        for name, on in (
            ("--pid", args.pid is not None),
            ("--cpus", args.cpus is not None),
            ("-- CMD", bool(command)),
        )
        if on
    ]
    if len(given) != 1:
        raise UsageError(
            f"choose one target: {' and '.join(given)} were both given"
            if given
            else "stat needs a target: -- CMD ARGS, --pid PID or --cpus LIST"
        )
    if args.pid is not None:
        return f"process id '{','.join(str(pid) for pid in args.pid)}'"
    if args.cpus is not None:
        if args.no_children:
            raise UsageError(
                "--no-children applies to --pid and -- CMD (CPUs have no child processes); drop it"
            )
        return f"'CPU(s) {args.cpus}'"
    return "'" + " ".join(command) + "'"


def _open_source(args: argparse.Namespace, command: Sequence[str]) -> tuple[RunEvents, PerfSource, Target]:
    """The run's events and its perf source on the target; a launched command writes to stdout
    as without sectormon (to stderr when the JSON stream has stdout)."""
    topology = load_topology()
    events = perf_profile(args, topology)
    if args.bind is not None and not command:
        bind_cpus(args.bind, command, topology)  # says --bind needs a launched command
    target: Target
    if args.pid is not None:
        target = PidTarget(args.pid, follow_children=not args.no_children)
    elif args.cpus is not None:
        cpus = parse_cpu_list(args.cpus, what="--cpus")
        topology.require_cpus(cpus, option="--cpus")
        target = CpuTarget(cpus)
    else:
        stdout = 2 if args.json and args.output in (None, "-") else None
        target = CommandTarget(
            list(command),
            stdout=stdout,
            follow_children=not args.no_children,
            bind=bind_cpus(args.bind, command, topology),
        )
    source = PerfSource(
        target,
        topology,
        exclude_kernel=not events.include_kernel,
        exclude_user=events.exclude_user,
        per_core_warning=False,  # the report has no per-core figure; the A64FX binding check stays
    )
    return events, source, target


def _interval_printer(
    shown: Shown, report: _Report, sep: str | None, thousands: str
) -> Callable[[Frame], None]:
    intervals = Intervals(shown)
    printed = [0]

    def on_frame(frame: Frame) -> None:
        events = intervals.lines(frame)
        if not events:
            return
        lines = stat_report.interval_lines(frame.t, events, index=printed[0], sep=sep, separator=thousands)
        printed[0] += 1
        report.write(lines)

    return on_frame


class _Report:
    """Where the report goes: stderr, or ``-o FILE`` opened before anything starts."""

    def __init__(self, path: str | None) -> None:
        self.path = None if path in (None, "-") else path
        self.handle: TextIO = (
            sys.stderr
            if self.path is None
            else io.TextIOWrapper(open_output(self.path, "-o"), encoding="utf-8")
        )

    def write(self, lines: Sequence[str]) -> None:
        try:
            self.handle.write("".join(line + "\n" for line in lines))
            self.handle.flush()
        except OSError as exc:
            raise OutputError(
                f"cannot write the report to {self.path or 'stderr'}: {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):  # what could not be flushed, write said already
                self.handle.close()
