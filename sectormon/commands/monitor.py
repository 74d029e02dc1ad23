"""The main job: monitor a process, CPUs, a command, or the simulated A64FX (the default).

``sectormon --pid PID`` / ``--cpus LIST`` / ``-- CMD ARGS`` count this host's events through
perf_event_open; with none of these, sectormon runs the built-in simulated A64FX (Scenario A) so a
new user sees the sector-cache dashboards on any machine. ``--json`` streams frames headless;
otherwise the Textual UI starts.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import IO, Any

from sectormon.errors import UsageError
from sectormon.export.options import add_openmetrics_options, check_output_mode, open_exporter
from sectormon.pipeline import Session, SessionOptions, build_header, default_cpu_model
from sectormon.profiles.model import Profile
from sectormon.schedule import plan_rotation, select_groups
from sectormon.sources.base import Source

PERF_TIMESLICE = 0.02
PERF_INTERVAL = 1.0
PERF_RECENT = 10.0


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("what to count (default: the simulated A64FX demo)")
    target.add_argument(
        "--pid", type=int, help="count every thread of this process (followed as they come and go)"
    )
    target.add_argument("--cpus", metavar="LIST", help="count these CPUs system-wide, e.g. 12-23 or 0,2-3")
    target.add_argument(
        "--source",
        choices=("perf", "sim"),
        help="perf (this host) or sim (simulated A64FX); default: perf when a target is given",
    )
    target.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- CMD ARGS: launch CMD and count it from exec"
    )
    how = parser.add_argument_group("how to count")
    how.add_argument("--profile", default="auto", help="event profile: auto, a64fx, generic, or a YAML path")
    how.add_argument("--groups", help="comma-separated groups to rotate (default: all of the profile's)")
    how.add_argument(
        "--timeslice", type=float, help="seconds each group runs before the next (perf default 0.02)"
    )
    how.add_argument("--interval", type=float, help="seconds between frames (perf default 1)")
    how.add_argument(
        "--recent",
        type=float,
        help="rolling window in seconds (default 10; on the simulator 10 intervals of simulated time)",
    )
    how.add_argument(
        "--include-kernel", action="store_true", help="also count kernel mode (needs paranoid <= 1)"
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--json", action="store_true", help="headless: JSON Lines on stdout (header, then frames)"
    )
    out.add_argument("-o", "--output", metavar="FILE", help="write the JSON stream to FILE instead of stdout")
    out.add_argument("--count", type=int, help="stop after N frames")
    out.add_argument("--duration", type=float, help="stop after S seconds (source time)")
    out.add_argument(
        "--baseline-after", type=float, metavar="S", help="mark the baseline once S seconds have run"
    )
    out.add_argument("--record", metavar="FILE", help="record raw readings to FILE (.gz to compress)")
    out.add_argument("--theme", help="TUI theme name or path (dark, light, high-contrast, or a file)")
    add_openmetrics_options(out)
    _add_sim_options(parser)


def _add_sim_options(parser: argparse.ArgumentParser) -> None:
    try:
        from sectormon.commands.sim import add_sim_options
    except ImportError:  # pragma: no cover - the simulator ships with the package
        return
    group = _Remembered(parser.add_argument_group("simulated A64FX (with --source sim or no target)"))
    add_sim_options(group)
    parser.set_defaults(sim_options=tuple(group.actions))


class _Remembered:
    """An argument group that keeps the actions added to it (argparse lists them only privately)."""

    def __init__(self, group: Any, actions: list[argparse.Action] | None = None) -> None:
        self.group = group
        self.actions: list[argparse.Action] = [] if actions is None else actions

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        action = self.group.add_argument(*args, **kwargs)
        self.actions.append(action)
        return action

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Any:
        return _Remembered(self.group.add_mutually_exclusive_group(required=required), self.actions)


def _refuse_sim_options(args: argparse.Namespace, target: str) -> None:
    """The simulator's options do nothing on a real target: say so instead of ignoring them."""
    actions: tuple[argparse.Action, ...] = getattr(args, "sim_options", ())
    defaults: dict[str, Any] = {}
    for action in actions:  # a dest's default is its first action's (--loop and --once share one)
        defaults.setdefault(action.dest, action.default)
    given = [
        action.option_strings[0]
        for action in actions
        if getattr(args, action.dest) != defaults[action.dest]
        and (action.const is None or getattr(args, action.dest) == action.const)
    ]
    if given:
        raise UsageError(
            f"{', '.join(dict.fromkeys(given))} set the simulated A64FX, and {target} counts this host; "
            "drop them, or count the simulator with --source sim"
        )


def run(args: argparse.Namespace) -> int:
    command = [c for c in (args.command or []) if c]
    if command and command[0] == "--":
        command = command[1:]
    args.command = command
    modes = [
        name
        for name, given in (
            ("--pid", args.pid is not None),
            ("--cpus", bool(args.cpus)),
            ("-- CMD", bool(command)),
        )
        if given
    ]
    if len(modes) > 1:
        raise UsageError(f"choose one target: {' and '.join(modes)} were both given")
    source_kind = args.source or ("perf" if modes else "sim")
    if source_kind == "sim" and modes:
        raise UsageError(f"--source sim simulates its own threads; it cannot count {modes[0]}")
    if source_kind == "perf" and not modes:
        raise UsageError("--source perf needs a target: --pid PID, --cpus LIST or -- CMD ARGS")
    if source_kind == "perf":
        _refuse_sim_options(args, modes[0])
    source, profile, topology_json = _sim_setup(args) if source_kind == "sim" else _perf_setup(args, command)
    return run_with_source(source, args, profile=profile, topology=topology_json)


def _perf_setup(args: argparse.Namespace, command: Sequence[str]) -> tuple[Source, Profile, dict[str, Any]]:
    from sectormon.profiles.loader import auto_profile_name, load_profile
    from sectormon.sources.perf import PerfSource
    from sectormon.targets import CommandTarget, CpuTarget, PidTarget
    from sectormon.topology import load_topology, parse_cpu_list

    topology = load_topology()
    name = auto_profile_name(topology) if args.profile == "auto" else args.profile
    profile = load_profile(name, variant=getattr(topology, "variant", ""))
    if profile.name == "a64fx" and not topology.is_a64fx:
        raise UsageError(
            f"--profile a64fx needs an A64FX, and this CPU is {topology.model or 'not one'}; "
            "use --profile generic here, or --source sim to run the a64fx profile on the simulated A64FX"
        )
    target: Any
    if args.pid is not None:
        target = PidTarget(args.pid)
    elif args.cpus:
        cpus = parse_cpu_list(args.cpus, what="--cpus")
        topology.require_cpus(cpus, option="--cpus")
        target = CpuTarget(cpus)
    elif args.json or args.headless:
        # The JSON stream owns stdout, and a headless service writes nothing there: the command's
        # own output goes to stderr instead.
        target = CommandTarget(list(command), stdout=None if args.json and args.output else 2)
    else:
        # The TUI owns the terminal: the command reads nothing from it and writes to a log shown
        # after the TUI ends (it drew over the screen and took the keys meant for the TUI).
        log = CommandLog.create()
        args.command_log = log
        target = CommandTarget(list(command), stdin=log.stdin_fd, stdout=log.fd, stderr=log.fd)
    source = PerfSource(target, topology, exclude_kernel=not args.include_kernel)
    if args.timeslice is None:
        args.timeslice = PERF_TIMESLICE
    if args.interval is None:
        args.interval = PERF_INTERVAL
    return source, profile, topology.to_json()


def _sim_setup(args: argparse.Namespace) -> tuple[Source, Profile, dict[str, Any]]:
    from sectormon.commands.sim import build_sim_source
    from sectormon.profiles.loader import load_profile
    from sectormon.sources import sim as sim_source

    profile = load_profile("a64fx" if args.profile == "auto" else args.profile)
    source = build_sim_source(args)
    if args.timeslice is None:
        args.timeslice = sim_source.SIM_DEFAULT_TIMESLICE
    if args.interval is None:
        args.interval = sim_source.SIM_DEFAULT_INTERVAL
    topology = getattr(source, "topology_json", None)
    return source, profile, topology() if callable(topology) else {}


def run_with_source(
    source: Source,
    args: argparse.Namespace,
    *,
    profile: Profile | None = None,
    topology: dict[str, Any] | None = None,
) -> int:
    """Probe, plan the rotation, and run the session headless (``--json``) or in the TUI."""
    from sectormon.profiles.loader import load_profile, profile_to_dict

    if profile is None:
        profile = load_profile("a64fx" if getattr(args, "profile", "auto") == "auto" else args.profile)
    _validate_numbers(args)
    check_output_mode(args)
    output, record = getattr(args, "output", None), getattr(args, "record", None)
    if output and record and output != "-" and _same_file(output, record):
        raise UsageError(
            f"-o {output} and --record {record} name the same file: the frame stream and the "
            "recording would overwrite each other; give them different files"
        )
    timeslice = _or_default(getattr(args, "timeslice", None), PERF_TIMESLICE)
    interval = _or_default(getattr(args, "interval", None), PERF_INTERVAL)
    if interval < timeslice:
        raise UsageError(f"--interval ({interval} s) must be at least one --timeslice ({timeslice} s)")
    group_names = select_groups(profile, _split(getattr(args, "groups", None)))
    wanted = {e for g in group_names for e in profile.group(g).events}
    events = [profile.events[name] for name in profile.events if name in wanted]
    probe = source.probe(events)
    unavailable = {
        name: result.reason or result.state for name, result in probe.items() if result.state == "unsupported"
    }
    cmg_reason = getattr(source, "cmg_unavailable_reason", None)
    if cmg_reason:
        for event in events:
            if event.scope == "cmg":
                unavailable.setdefault(event.name, f"CMG-wide event needs per-CPU counting: {cmg_reason}")
    plan = plan_rotation(profile, group_names, unavailable)
    notes: list[str] = []

    def _warn(message: str) -> None:
        notes.append(message)
        _print_warning(message)

    if unavailable:
        kernel_only = sorted(n for n, why in unavailable.items() if why.startswith("user-only"))
        _warn(
            f"{len(unavailable)} event(s) cannot be counted here and are dropped; "
            "metrics that need them show n/a: "
            + ", ".join(sorted(unavailable))
            + (
                f" ({', '.join(kernel_only)}: kernel-mode events, add --include-kernel)"
                if kernel_only
                else ""
            )
            + "; `sectormon check` says why for each"
        )
    if plan.skipped_groups:
        _warn("groups left empty and skipped: " + ", ".join(plan.skipped_groups))
    suspicious = sorted(
        n for n, r in probe.items() if r.state == "zero" and profile.events[n].code is not None
    )
    if suspicious:
        _warn("opened but counted nothing in the probe (suspicious, not zero): " + ", ".join(suspicious))
    command_log: CommandLog | None = getattr(args, "command_log", None)
    if command_log is not None:
        notes.append(f"the command's output goes to {command_log.path}; it is shown when you quit")
    handle = _open_output(args)
    exporter = open_exporter(args)  # the port is bound before anything starts
    source.start()  # after the probe (not timed), before the header (which names the target's pid)
    options = SessionOptions(
        interval=interval,
        timeslice=timeslice,
        recent_seconds=_recent_window(args, source, interval),
        count=getattr(args, "count", None),
        duration=getattr(args, "duration", None),
        baseline_after=getattr(args, "baseline_after", None),
        record=getattr(args, "record", None),
    )
    header = build_header(
        source=source,
        profile=profile,
        plan=plan,
        options=options,
        topology=topology,
        cpu_model="simulated A64FX" if source.kind == "sim" else default_cpu_model(),
        profile_dict=profile_to_dict(profile),
        probe={n: {"state": r.state, "reason": r.reason} for n, r in probe.items()},
    )
    session = Session(
        source=source,
        profile=profile,
        plan=plan,
        options=options,
        header=header,
        on_warning=_print_warning,
        cmg_enabled=not cmg_reason,
        startup_warnings=notes,
    )
    if exporter is not None:
        exporter.start(session.header)
        session.subscribe(exporter.publish)
    try:
        if getattr(args, "headless", False):
            session.run_headless()
            status = 0
        elif getattr(args, "json", False):
            status = _run_json(session, handle)
        else:
            from sectormon.ui.app import run_tui

            try:
                status = run_tui(session, theme=getattr(args, "theme", None))
            finally:
                if command_log is not None:
                    command_log.show_and_remove()
    finally:
        if exporter is not None:
            exporter.close()
    return _command_status(session) if status == 0 else status


class CommandLog:
    """Where a command launched under the TUI writes (stdout and stderr, in order) and reads
    (``/dev/null``): a file kept under ``$TMPDIR`` while it runs, copied to our stderr at the end."""

    def __init__(self, path: str, fd: int, stdin_fd: int) -> None:
        self.path = path
        self.fd = fd
        self.stdin_fd = stdin_fd

    @classmethod
    def create(cls) -> CommandLog:
        fd, path = tempfile.mkstemp(prefix="sectormon-command-", suffix=".log")
        return cls(path, fd, os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))

    def show_and_remove(self) -> None:
        """The command's output on stderr, as it would have been without the TUI."""
        for fd in (self.fd, self.stdin_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            with open(self.path, "rb") as log:
                if os.fstat(log.fileno()).st_size:
                    sys.stderr.flush()
                    print("sectormon: the command's output:", file=sys.stderr, flush=True)
                    shutil.copyfileobj(log, sys.stderr.buffer)
                    sys.stderr.buffer.flush()
            os.unlink(self.path)
        except OSError as exc:  # not shown (the terminal is gone: SIGHUP): the file keeps it
            with contextlib.suppress(OSError):
                _print_warning(f"the command's output is kept in {self.path} ({exc.strerror})")


def _command_status(session: Session) -> int:
    """sectormon's exit status after a clean run: the launched command's own, as with ``perf stat``
    and ``time`` (a job script sees a failed run fail), said on stderr when it is not 0. 0 when
    there was no command, or it did not end by itself (stopped with sectormon)."""
    from sectormon.targets import describe_exit, shell_status

    code = session.command_exit_code()
    if not code:
        return 0
    _print_warning(describe_exit(code))
    return shell_status(code)


def _open_output(args: argparse.Namespace) -> IO[str]:
    """The JSON stream's file, opened before anything starts so a bad path fails at once."""
    output = getattr(args, "output", None)
    if not getattr(args, "json", False):
        if output:
            raise UsageError("-o/--output is for the --json stream; add --json (or use --record FILE)")
        return sys.stdout
    if not output or output == "-":
        return sys.stdout
    try:
        return open(output, "w", encoding="utf-8")  # closed by _run_json
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"-o {output}: cannot write there ({reason}); give a writable file path") from exc


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (an existing one through links, else by resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _run_json(session: Session, handle: IO[str]) -> int:
    from sectormon.io.stream import JsonStream

    try:
        stream = JsonStream(handle, on_closed=session.stop, on_error=session.stop)
        stream.write_header(session.header)
        session.subscribe(stream.write_frame)
        session.run_headless()
    finally:
        if handle is not sys.stdout:
            handle.close()
    if stream.error:
        raise UsageError(stream.error)
    return 0


def _validate_numbers(args: argparse.Namespace) -> None:
    """Times must be positive and finite, counts positive: a clear error instead of odd behaviour."""
    for option, attr in (
        ("--timeslice", "timeslice"),
        ("--interval", "interval"),
        ("--recent", "recent"),
        ("--duration", "duration"),
    ):
        value = getattr(args, attr, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"{option} {value}: give a number of seconds > 0")
    if getattr(args, "baseline_after", None) is not None and not (
        math.isfinite(args.baseline_after) and args.baseline_after >= 0
    ):
        raise UsageError(f"--baseline-after {args.baseline_after}: give a number of seconds >= 0")
    count = getattr(args, "count", None)
    if count is not None and count < 1:
        raise UsageError(f"--count {count}: give a number of frames >= 1")
    groups = getattr(args, "groups", None)
    if groups is not None and not _split(groups):
        raise UsageError(f"--groups {groups!r}: name at least one group, e.g. --groups SC1,SC3")


def _or_default(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def _recent_window(args: argparse.Namespace, source: Source, interval: float) -> float:
    """The rolling window: 10 s live; 10 intervals on the simulator, whose seconds are simulated."""
    recent = getattr(args, "recent", None)
    if recent is not None:
        if recent < interval:
            raise UsageError(f"--recent ({recent} s) must be at least one --interval ({interval} s)")
        return float(recent)
    return 10 * interval if source.kind == "sim" else PERF_RECENT


def _split(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _print_warning(message: str) -> None:
    print(f"sectormon: warning: {message}", file=sys.stderr, flush=True)
