"""The main job: monitor a process, CPUs, a command, or the simulated A64FX (the default).

``sectormon --pid PID`` / ``--cpus LIST`` / ``-- CMD ARGS`` count this host's events through
perf_event_open; with none of these, sectormon runs the built-in simulated A64FX (Scenario A) so a
new user sees the sector-cache dashboards on any machine. ``--json`` streams frames headless;
otherwise the Textual UI starts.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sectormon.commands import startup
from sectormon.commands.front_end import (
    CommandLog,
    add_session_options,
    open_output,
    run_session,
    session_request,
)
from sectormon.commands.options import numbers
from sectormon.commands.options.binding import add_bind_option, bind_cpus
from sectormon.commands.options.control import add_control_options, control_fds, delay_seconds
from sectormon.commands.options.events import OPTION as EVENTS_OPTION
from sectormon.commands.options.events import add_events_option, perf_profile, run_events
from sectormon.commands.options.openmetrics import open_exporter
from sectormon.commands.options.output import require_terminal
from sectormon.commands.options.sim import add_sim_options, sim_source
from sectormon.commands.reattach import Reattach
from sectormon.errors import UsageError
from sectormon.files.text import print_message, print_warning
from sectormon.host.topology import load_topology, parse_cpu_list
from sectormon.profiles.model import Profile
from sectormon.session import stopping
from sectormon.sources.base import Source
from sectormon.sources.perf.source import PerfSource
from sectormon.sources.perf.targets import CommandTarget, CpuTarget, PidTarget, Target


class _Pick:
    """The value of ``--pid`` given alone (not a string: argparse would parse that as pids)."""

    def __repr__(self) -> str:
        return "the process list"


PICK = _Pick()
"""``--pid`` given without a value: pick the process from the list."""


def pick_process() -> int | None:
    """The pid chosen in the process list (``None``: left without choosing); needs a terminal."""
    try:
        require_terminal()
    except UsageError:
        raise UsageError(
            "the process list needs a terminal: give the process as --pid PID to count without one"
        ) from None
    from sectormon.ui.process_picker import ProcessPicker  # textual: only when the list opens

    return ProcessPicker().run()


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("what to count (default: the simulated A64FX demo)")
    target.add_argument(
        "--pid",
        type=numbers.ListParser(numbers.PID, "--pid"),
        nargs="?",
        const=PICK,
        metavar="PID[,PID...]",
        help=numbers.PID.help(
            "count these processes: every thread and every process they start, followed as they come "
            "and go; --pid alone lists the processes to pick one from (as sectormon top)"
        ),
    )
    target.add_argument(
        "--no-children",
        action="store_true",
        help="count only the threads of the --pid processes or the command, not the processes they start",
    )
    target.add_argument("--cpus", metavar="LIST", help="count these CPUs system-wide, e.g. 12-23 or 0,2-3")
    add_bind_option(target)
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
    how.add_argument(
        "--include-kernel", action="store_true", help="also count kernel mode (needs paranoid <= 1)"
    )
    add_control_options(how)
    add_events_option(how)
    out = parser.add_argument_group("output")
    add_session_options(
        how,
        out,
        clock="source",
        timeslice=f"perf default {PerfSource.default_timeslice:g}",
        interval=f"perf default {PerfSource.default_interval:g}",
    )
    sim = parser.add_argument_group("simulated A64FX (with --source sim or no target)")
    parser.set_defaults(sim_options=tuple(add_sim_options(sim)))


def run(args: argparse.Namespace) -> int:
    """Count what the options say; then, as long as ``p`` in the TUI picked a process to attach
    to, the same options on that process (:mod:`sectormon.commands.reattach`)."""
    reattach = Reattach(args, _attach_check)
    status = _run_target(args, reattach)
    while (options := reattach.next_options()) is not None:
        print_message(f"attaching to pid {options.pid[0]}")
        reattach = Reattach(options, _attach_check)
        status = _run_target(options, reattach)
    return status


def _attach_check(args: argparse.Namespace) -> None:
    """Raise the :class:`UsageError` a run of these options on ``--pid`` would meet before counting."""
    modes = _target_modes(args, [])
    if _choose_source(args, modes).clock == "perf":
        perf_profile(args, load_topology())


def _run_target(args: argparse.Namespace, reattach: Reattach) -> int:
    if args.pid is PICK:
        startup.done()  # the list waits for the user: collect as usual meanwhile
        chosen = pick_process()
        if chosen is None:
            return 0  # left the list without choosing: nothing to count
        args.pid = (chosen,)
    command = list(args.command or [])
    dashes = command[:1] == ["--"]
    if dashes:
        command = command[1:]
    if (dashes or command) and not (command and command[0].strip()):
        # `sectormon -- "$APP"` with APP unset must not fall back to the simulator demo.
        raise UsageError(
            "no program name after --: write the program to launch, e.g. sectormon -- ./app args"
        )
    # Imported here, not at the top: `sectormon --help` and `--version` need only the options
    # (benchmarks/bench_start.py).
    from sectormon.session.setup import open_session

    choice = _choose_source(args, _target_modes(args, command))
    request = dataclasses.replace(
        session_request(args, choice.clock),
        control=control_fds(args.control),
        delay=delay_seconds(args.delay),
    )
    output = open_output(args)
    headless = args.headless or output is not None
    profile, source, command_log = choice.open(args, command, headless)
    exporter = open_exporter(args)  # the port is bound before anything starts
    startup.done()  # what follows is the run's, not the start's: collected as usual
    try:
        session = open_session(
            source,
            profile,
            request,
            on_warning=print_warning,
            notes=(command_log.note(),) if command_log is not None else (),
            required=EVENTS_OPTION if args.events is not None else None,
        )
    except BaseException:
        source.close()
        if exporter is not None:
            exporter.close()
        if command_log is not None:
            command_log.show_and_remove()
        raise
    return run_session(
        session,
        output,
        headless=args.headless,
        theme=args.theme,
        command_log=command_log,
        exporter=exporter,
        attach=reattach,
    )


OpenedSource = tuple[Profile, Source, CommandLog | None]
"""A run's profile, its source, and the log a command under the TUI writes to."""


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """The source a run counts, chosen from the options before it exists: whose seconds the
    time options are (``perf`` or ``sim``, see :func:`session_request`) and how it is made."""

    clock: str
    open: Callable[[argparse.Namespace, Sequence[str], bool], OpenedSource]  # options, command, headless


def _target_modes(args: argparse.Namespace, command: Sequence[str]) -> list[str]:
    """The targets given (at most one may be): ``--pid``, ``--cpus``, ``-- CMD``."""
    modes = [
        name
        for name, given in (
            ("--pid", args.pid is not None),
            ("--cpus", args.cpus is not None),  # --cpus '' is a bad list, not "no target"
            ("-- CMD", bool(command)),
        )
        if given
    ]
    if len(modes) > 1:
        raise UsageError(f"choose one target: {' and '.join(modes)} were both given")
    return modes


def _choose_source(args: argparse.Namespace, modes: Sequence[str]) -> SourceChoice:
    """perf when a target is given, the simulated A64FX without one; ``--source`` names one
    outright. The options the chosen source cannot honour are refused here, before anything starts."""
    if (args.source or ("perf" if modes else "sim")) == "sim":
        if modes:
            hint = " (sectormon sim -- CMD ARGS runs a program on it)" if modes[0] == "-- CMD" else ""
            raise UsageError(f"--source sim simulates its own threads; it cannot count {modes[0]}{hint}")
        if args.no_children:
            raise _no_children_refused()
        if args.bind is not None:
            raise UsageError("--bind pins a launched command's threads; the simulator has none (drop --bind)")
        return SourceChoice("sim", _sim_setup)
    if not modes:
        raise UsageError("--source perf needs a target: --pid PID, --cpus LIST or -- CMD ARGS")
    if args.no_children and args.cpus is not None:
        raise _no_children_refused()
    _refuse_sim_options(args, modes[0])
    return SourceChoice("perf", _perf_setup)


def _no_children_refused() -> UsageError:
    return UsageError(
        "--no-children applies to --pid and -- CMD (CPUs and the simulator have no child processes); drop it"
    )


def _sim_setup(args: argparse.Namespace, command: Sequence[str], headless: bool) -> OpenedSource:
    """The profile and source of the simulated A64FX (``command`` is empty: it runs its own threads)."""
    from sectormon.profiles.resolve import resolve_profile

    profile, _ = resolve_profile(args.profile, None)
    return run_events(args, profile).profile, sim_source(args, headless=headless), None


def _perf_setup(args: argparse.Namespace, command: Sequence[str], headless: bool) -> OpenedSource:
    """The profile and source of a real target; a command under the TUI also gets its log, and
    a second Ctrl-C kills the command."""
    topology = load_topology()
    events = perf_profile(args, topology)
    profile = events.profile
    bind = bind_cpus(args.bind, command, topology)
    target: Target
    log = None
    if args.pid is not None:
        target = PidTarget(args.pid, follow_children=not args.no_children)
    elif args.cpus is not None:
        cpus = parse_cpu_list(args.cpus, what="--cpus")
        topology.require_cpus(cpus, option="--cpus")
        target = CpuTarget(cpus)
    elif headless:
        # The JSON stream owns stdout, and a headless service writes nothing there: the command's
        # own output goes to stderr instead.
        target = CommandTarget(
            list(command),
            stdout=None if args.json and args.output else 2,
            follow_children=not args.no_children,
            bind=bind,
        )
    else:
        # The TUI owns the terminal: the command reads nothing from it and writes to a log shown
        # after the TUI ends (it would draw over the screen and take the keys meant for the TUI).
        log = CommandLog.create()
        try:
            target = CommandTarget(
                list(command),
                stdin=log.stdin_fd,
                stdout=log.fd,
                stderr=log.fd,
                follow_children=not args.no_children,
                bind=bind,
            )
        except BaseException:
            log.show_and_remove()
            raise
    source = PerfSource(
        target, topology, exclude_kernel=not events.include_kernel, exclude_user=events.exclude_user
    )
    latch = stopping.current()
    if latch is not None and isinstance(target, CommandTarget):
        latch.on_force = target.kill
    return profile, source, log


def _refuse_sim_options(args: argparse.Namespace, target: str) -> None:
    """The simulator's options do nothing on a real target: say so instead of ignoring them."""
    actions: tuple[argparse.Action, ...] = args.sim_options
    defaults: dict[str, object] = {}
    for action in actions:  # a dest's default is its first action's (--loop and --once share one)
        defaults.setdefault(action.dest, action.default)
    given = [
        action.option_strings[0]
        for action in actions
        if vars(args)[action.dest] != defaults[action.dest]
        and (action.const is None or vars(args)[action.dest] == action.const)
    ]
    if given:
        raise UsageError(
            f"{', '.join(dict.fromkeys(given))} set the simulated A64FX, and {target} counts this host; "
            "drop them, or count the simulator with --source sim"
        )
