"""``sectormon sim``: run the simulated A64FX (a kernel or a din trace) through the normal pipeline.

``--summary`` runs the workload to completion and prints one JSON object with the final counts of
every modelled event and the profile's metrics over them. Without it the source goes through the
same sampler, engine and sinks as a real measurement (``--json`` or the TUI).

The simulator's options are shared with ``sectormon --source sim`` (:mod:`.sim_options`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sectormon.commands.front_end import (
    CommandLog,
    add_session_options,
    open_output,
    run_session,
    session_request,
)
from sectormon.commands.options import numbers
from sectormon.commands.options.openmetrics import open_exporter
from sectormon.commands.options.output import require_stdout, write_stdout
from sectormon.commands.options.sim import (
    add_placement_option,
    add_region_option,
    add_sim_options,
    sim_options,
    sim_source,
)
from sectormon.commands.sim_region import count_region, region_summary
from sectormon.errors import UsageError
from sectormon.files.text import print_message, print_warning
from sectormon.io import strict_json
from sectormon.profiles.resolve import resolve_profile
from sectormon.session import stopping
from sectormon.session.setup import open_session
from sectormon.sim import advisor
from sectormon.sim.config import MAX_THREADS
from sectormon.sim.qemu.capture import Program, TracedRun, trace_program
from sectormon.sim.qemu.symbols import check_assign
from sectormon.sim.qemu.target import read_target
from sectormon.sim.qemu.workload import left_out_note, not_simulated
from sectormon.sim.thread import SimThread
from sectormon.sources.perf.launch import describe_exit, shell_status
from sectormon.sources.sim.source import (
    SIM_DEFAULT_INTERVAL,
    SIM_DEFAULT_TIMESLICE,
    SimSource,
    build_sim_source,
    check_program_options,
)


def configure(parser: argparse.ArgumentParser) -> None:
    workload = parser.add_argument_group("simulated workload and machine")
    add_sim_options(workload)
    add_placement_option(workload)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--summary",
        action="store_true",
        help="run to completion and print one JSON object: final counts and metrics",
    )
    add_region_option(out)
    advise = parser.add_argument_group("sector advisor")
    advise.add_argument(
        "--advise",
        action="store_true",
        help="search sector assignments and way splits for the workload; print them ranked (--json: as JSON)",
    )
    advise.add_argument(
        "--rank-by",
        choices=tuple(advisor.METRICS),
        help="with --advise: the metric whose change against sectors off ranks the configurations "
        "(default IPC)",
    )
    advise.add_argument(
        "--budget",
        type=numbers.BUDGET.parser("--budget"),
        metavar="N",
        help=numbers.BUDGET.help(
            "with --advise: simulate every configuration if there are at most N, else prune the "
            f"search (default {advisor.DEFAULT_BUDGET}, fewer for a workload of over "
            f"{advisor.ACCESS_BUDGET // advisor.DEFAULT_BUDGET:,} accesses)"
        ),
    )
    advise.add_argument(
        "--time-limit",
        type=numbers.ADVISE_TIME_LIMIT.parser("--time-limit"),
        metavar="S",
        help=numbers.ADVISE_TIME_LIMIT.help(
            "with --advise: wall seconds the search may take; it starts no simulation that would end "
            f"later and says how many ran (default none; {advisor.PROGRAM_TIME_LIMIT:g} for a program "
            "given after --)"
        ),
    )
    advise.add_argument(
        "--top",
        type=numbers.TOP.parser("--top"),
        metavar="N",
        help=numbers.TOP.help(
            f"with --advise: rows of the table (default {advisor.DEFAULT_TOP}; --json gives every one)"
        ),
    )
    parser.add_argument(
        "sim_command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ARGS",
        help="trace this x86_64 or aarch64 program under QEMU and simulate its own loads and stores",
    )
    how = parser.add_argument_group("how to count")
    how.add_argument("--profile", default="auto", help="event profile (default a64fx)")
    add_session_options(
        how,
        out,
        clock="simulated",
        timeslice=f"default {SIM_DEFAULT_TIMESLICE:g}",
        interval=f"default {SIM_DEFAULT_INTERVAL:g}",
    )


def run(args: argparse.Namespace) -> int:
    if not (args.summary or args.advise) and (command := _checked_command(args)) is not None:
        # The frame stream, simulated while the program runs: SIGINT/SIGTERM end it as they end
        # the monitor's session with its command (sectormon.session.stopping), so a session
        # whose model waits for a thread of the program that does not go on still ends.
        with stopping.installed():
            return _run(args, command)
    program = _trace_command(args)
    status = _run(args)
    if program is None or status:
        return status
    if program.exit_code:
        print_warning(f"{program.argv[0]}: {describe_exit(program.exit_code)}")
    return shell_status(program.exit_code)


def _start_program(args: argparse.Namespace, command: Sequence[str], log: CommandLog | None) -> TracedRun:
    """``sim -- CMD ARGS`` for the frame stream: the program started under QEMU, simulated
    while it runs (``args.sim_running``). Its output goes where a monitored command's does: to
    ``log`` under the TUI (which owns the terminal), to stderr when the JSON stream owns stdout."""
    if log is not None:
        stdio: tuple[int | None, int | None, int | None] = (log.stdin_fd, log.fd, log.fd)
    else:
        stdio = (None, None if args.json and args.output else 2, None)
    running = TracedRun(command, live=True, stdio=stdio)
    args.sim_running = running
    latch = stopping.current()
    if latch is not None:
        latch.on_force = running.kill
    return running


def _trace_command(args: argparse.Namespace) -> Program | None:
    """``sim --summary -- CMD ARGS``: check the other options, run the program under QEMU to its
    end and keep its capture in ``args.sim_program`` for every source built from the options."""
    command = _checked_command(args)
    if command is None:
        return None
    program = trace_program(command)
    args.sim_program = program
    if (untraced := program.untraced_sve()) is not None:
        print_warning(untraced)
    if (unnamed := program.unnamed_heap()) is not None:
        print_warning(unnamed)
    if (left_out := _left_out(program, sim_options(args).cpus)) is not None:
        print_warning(left_out)
    return program


def _left_out(program: Program, cpus: Sequence[int]) -> str | None:
    """The warning for a program's threads past the simulated CPUs, None when all are simulated."""
    rest = not_simulated(program, cpus)
    if not rest:
        return None
    cores = len(cpus) or MAX_THREADS
    return f"sim -- {program.argv[0]}: " + left_out_note(len(rest), sum(t.accesses for t in rest), cores)


def _checked_command(args: argparse.Namespace) -> list[str] | None:
    """The program of ``sim -- CMD ARGS`` once the other options are checked; None without one."""
    command = list(args.sim_command or [])
    dashes = command[:1] == ["--"]
    command = command[1:] if dashes else command
    if not command and not dashes:
        return None
    if not command or not command[0].strip():
        raise UsageError("no program name after --: write the program to trace, e.g. sectormon sim -- ./app")
    if not dashes:
        raise UsageError(f"sim {command[0]}: put -- before the program to trace (sectormon sim -- CMD ARGS)")
    if args.advise:
        _check_advise_options(args)  # before the program runs
    options = sim_options(args)
    check_program_options(options)  # the options' errors before the program runs
    if options.assign and options.objects is None:
        check_assign(read_target(command[0]).path, dict(options.assign))
    return command


def _run(args: argparse.Namespace, command: Sequence[str] | None = None) -> int:
    """``command``: a program to simulate while it runs (the frame stream only)."""
    if args.advise:
        return _advise(args)
    given = [
        option
        for option, value in (
            ("--rank-by", args.rank_by),
            ("--budget", args.budget),
            ("--time-limit", args.time_limit),
            ("--top", args.top),
        )
        if value
    ]
    if given:
        raise UsageError(f"{', '.join(given)} go with --advise (the sector advisor)")
    if args.summary and args.loop:
        raise UsageError("--summary runs the workload to completion; it cannot --loop")
    if args.summary:
        ignored = [
            option
            for option, value in (
                ("--json", args.json),
                ("-o", args.output),
                ("--record", args.record),
                ("--count", args.count),
                ("--duration", args.duration),
                ("--baseline-after", args.baseline_after),
                ("--theme", args.theme),
                ("--openmetrics", args.openmetrics),
                ("--openmetrics-threads", args.openmetrics_threads),
                ("--openmetrics-procs", args.openmetrics_procs),
                ("--headless", args.headless),
                ("--sample", args.sample),
                ("--pace", args.pace),
            )
            if value not in (None, False)
        ]
        if ignored:
            raise UsageError(
                f"--summary prints one JSON object at the end; {', '.join(ignored)} "
                "belong to the frame stream (drop --summary to use them)"
            )
        require_stdout()  # before the simulation runs: the summary could not be written
        source = sim_source(args, headless=True)
        write_stdout(strict_json.dumps(summarize(source, args.profile)) + "\n")
        return 0
    if args.region is not None:
        raise UsageError(
            f"--region {args.region} picks the region --summary or --advise reports; the frames carry "
            "every region (regions, run.regions): drop --region, or add --summary"
        )
    request = session_request(args, "sim")
    output = open_output(args)
    headless = args.headless or output is not None
    log = None if command is None or headless else CommandLog.create()
    running = None
    started = False  # run_session shows the log at its end
    try:
        if command is not None:
            running = _start_program(args, command, log)
        source = sim_source(args, headless=headless)
        profile, _ = resolve_profile(args.profile, None)
        exporter = open_exporter(args)  # the port is bound before anything starts
        try:
            notes = (log.note(),) if log is not None else ()
            session = open_session(source, profile, request, on_warning=print_warning, notes=notes)
        except BaseException:
            if exporter is not None:
                exporter.close()
            raise
        started = True
        status = run_session(
            session, output, headless=args.headless, theme=args.theme, command_log=log, exporter=exporter
        )
    finally:
        if running is not None:
            running.close()  # however the session ended, the program does not outlive it
        if log is not None and not started:
            log.show_and_remove()
    if (note := source.program_note()) is not None:
        print_message(note)
    return status


# Options the advisor sets itself, and the frame stream's (it produces none).
_NOT_WITH_ADVISE = (
    ("--l1-sectors", "l1_sectors"),
    ("--l2-sectors", "l2_sectors"),
    ("--sector-cache", "sector_cache"),
    ("--assign", "assign"),
    ("--summary", "summary"),
    ("-o", "output"),
    ("--record", "record"),
    ("--count", "count"),
    ("--duration", "duration"),
    ("--baseline-after", "baseline_after"),
    ("--theme", "theme"),
    ("--loop", "loop"),
    ("--openmetrics", "openmetrics"),
    ("--headless", "headless"),
)


def _check_advise_options(args: argparse.Namespace) -> None:
    """Refuse the options the advisor sets itself (a program's: before it runs)."""
    given = [option for option, dest in _NOT_WITH_ADVISE if vars(args)[dest] not in (None, False)]
    if given:
        raise UsageError(
            f"--advise searches the sector options and prints a table; drop {', '.join(given)} "
            "(give only the workload's options: --kernel/--trace, --size, --threads, ...)"
        )


def _advise(args: argparse.Namespace) -> int:
    """The sector advisor on the workload the options describe (:mod:`sectormon.sim.advisor`); a
    traced program (``args.sim_program``) is searched on its one capture, within
    :data:`~sectormon.sim.advisor.PROGRAM_TIME_LIMIT` unless ``--time-limit`` says otherwise."""
    _check_advise_options(args)
    top = advisor.DEFAULT_TOP if args.top is None else args.top
    workload = sim_options(args)
    program = workload.program
    time_limit = args.time_limit
    if time_limit is None and program is not None:
        time_limit = advisor.PROGRAM_TIME_LIMIT

    def summary(candidate: advisor.Candidate | None, names: Sequence[str]) -> dict[str, Any]:
        """``sim --summary`` of the workload in the candidate's configuration (None: sectors off)."""
        if candidate is None:
            options = replace(workload, sector_cache=False)
        else:
            options = replace(
                workload,
                sector_cache=True,
                assign=dict(zip(names, map(str, candidate.assignment), strict=True)),
                l1_sectors=candidate.l1,
                l2_sectors=(*candidate.l2, *candidate.l2),
            )
        return summarize(build_sim_source(options, loop=False), args.profile)

    progress = AdviseProgress()
    try:
        advice = advisor.advise(
            build_sim_source(workload, loop=False).workload.specs,
            summary,
            l2_ways=workload.l2_ways,
            rank_by=args.rank_by or next(iter(advisor.METRICS)),
            budget=args.budget,
            time_limit=time_limit,
            progress=progress,
            command=program.argv if program is not None else (),
            caveats=[untraced] if program is not None and (untraced := program.untraced_sve()) else [],
            region=workload.region,
        )
    finally:
        progress.close()
    print(strict_json.dumps(advice) if args.json else advisor.render(advice, top))
    return 0


class AdviseProgress:
    """The advisor's progress on stderr: a bar redrawn in place on a terminal (cleared at the
    end), else one line per simulation, so a log shows the search moving."""

    WIDTH = 30

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.terminal = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, runs: int, planned: int, left: float | None) -> None:
        elapsed = time.monotonic() - self.started
        remaining = "" if left is None else f", {max(0.0, left):.0f} s left"
        if not self.terminal:
            line = f"sectormon: advise: {runs}/{planned} simulations ({elapsed:.1f} s{remaining})"
            print(line, file=sys.stderr, flush=True)
            return
        filled = self.WIDTH * runs // max(1, planned)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        line = f"\rsectormon: advise [{bar}] {runs}/{planned} simulations, {elapsed:.0f} s{remaining}"
        sys.stderr.write(line + "\x1b[K")  # erase the tail of a longer line drawn before
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        """Clear the bar (the table or JSON follows on stdout)."""
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.drawn = False


def object_summary(
    threads: Sequence[SimThread], before: Mapping[int, list[tuple[int, int, int]]]
) -> dict[str, Any]:
    """Per data object (summed over threads, by name): accesses, L1D demand refills and memory
    reads since ``before`` (the counts at the end of the warm-up)."""
    out: dict[str, dict[str, int]] = {}
    for t in threads:
        for name, now, then in zip(t.spec.objects, t.object_counts(), before[t.tid], strict=True):
            row = out.setdefault(name, {"accesses": 0, "l1d_demand_refills": 0, "memory_reads": 0})
            row["accesses"] += now[0] - then[0]
            row["l1d_demand_refills"] += now[1] - then[1]
            row["memory_reads"] += now[2] - then[2]
    return out


def summarize(source: SimSource, profile_name: str = "auto") -> dict[str, Any]:
    """Run ``source`` to completion; final counts per scope and the metrics over the totals.

    Like the frame stream, the summary counts from the end of the warm-up: the counts the warm-up
    left are subtracted, and ``seconds`` and ``cycles`` start there too. With the source's
    ``region`` (``--region``), the figures are that marked region's (:mod:`.sim_region`).
    """
    from sectormon.metrics.engine import evaluate_metrics
    from sectormon.sim import events as sim_events

    profile, _ = resolve_profile(profile_name, None)
    energy = source.config.energy
    modelled = {name: e for name, e in profile.events.items() if sim_events.is_modelled(e.code)}
    machine = source.machine

    def pe_now(thread: Any) -> dict[str, int]:
        return {
            n: sim_events.read_pe(e.code, thread, energy)
            for n, e in modelled.items()
            if e.code in sim_events.PE_EVENTS
        }

    def cmg_now(cmg: Any) -> dict[str, int]:
        return {
            n: sim_events.read_cmg(e.code, cmg, energy)
            for n, e in modelled.items()
            if e.code in sim_events.CMG_EVENTS
        }

    if source.region is not None:
        count_region(source, modelled)
    source.start()  # the warm-up, uncounted
    warm_pe = {t.tid: pe_now(t) for t in machine.threads}
    warm_cmg = {c.ident: cmg_now(c) for c in machine.cmgs.values()}
    warm_cycles = machine.cycle
    skipped = sum(t.acc for t in machine.threads)
    warm_objects = {t.tid: t.object_counts() for t in machine.threads}
    source.run_to_completion()

    def pe_counts(thread: Any) -> dict[str, int]:
        before = warm_pe[thread.tid]
        return {n: v - before.get(n, 0) for n, v in pe_now(thread).items()}

    def cmg_counts(cmg: Any) -> dict[str, int]:
        before = warm_cmg[cmg.ident]
        return {n: v - before.get(n, 0) for n, v in cmg_now(cmg).items()}

    threads = {
        str(t.tid): {"cpu": t.cpu, "cmg": t.cmg.ident, "counts": pe_counts(t)} for t in machine.threads
    }
    cmgs = {str(c.ident): {"counts": cmg_counts(c)} for c in machine.cmgs.values()}
    total: dict[str, int] = {}
    scopes: list[Mapping[str, int]] = [pe_counts(t) for t in machine.threads]
    scopes += [cmg_counts(c) for c in machine.cmgs.values()]
    for counts in scopes:
        for name, value in counts.items():
            total[name] = total.get(name, 0) + value
    seconds = source.now()
    described = source.describe()
    summary = {
        "source": "sim",
        "simulated": True,
        "model": described["model"],
        "kernel": described["kernel"],
        "sector_config": described["sector_config"],
        "seconds": seconds,
        "core": machine.core,
        "cycles": machine.cycle - warm_cycles,
        "warmup_s": source.warmup,
        "accesses": {
            "counted": sum(t.acc for t in machine.threads) - skipped,
            "skipped": skipped,
            "warmup_s": source.warmup,
        },
        "counts": dict(sorted(total.items())),
        "metrics": evaluate_metrics(profile, total, seconds),
        "objects": object_summary(machine.threads, warm_objects),
        "threads": threads,
        "cmgs": cmgs,
        "unsupported": sorted(n for n, e in profile.events.items() if n not in modelled),
    }
    if source.region is not None:
        return region_summary(source, profile, source.region, summary)
    return summary
