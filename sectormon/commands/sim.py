"""``sectormon sim``: run the simulated A64FX (a kernel or a din trace) through the normal pipeline.

``--summary`` runs the workload to completion and prints one JSON object with the final counts of
every modelled event and the profile's metrics over them. Without it the source goes through the
same sampler, engine and sinks as a real measurement (``--json`` or the TUI).

The simulator's options are shared with ``sectormon --source sim`` (:mod:`.sim_options`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from sectormon.commands.live import (
    add_session_options,
    open_output,
    print_warning,
    run_session,
    session_request,
)
from sectormon.commands.openmetrics import open_exporter
from sectormon.commands.output import require_stdout, write_stdout
from sectormon.commands.sim_options import add_sim_options, sim_source
from sectormon.errors import UsageError
from sectormon.profiles.loader import resolve_profile
from sectormon.session.setup import open_session
from sectormon.sources.sim import SIM_DEFAULT_INTERVAL, SIM_DEFAULT_TIMESLICE, SimSource


def configure(parser: argparse.ArgumentParser) -> None:
    add_sim_options(parser.add_argument_group("simulated workload and machine"))
    out = parser.add_argument_group("output")
    out.add_argument(
        "--summary",
        action="store_true",
        help="run to completion and print one JSON object: final counts and metrics",
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
                ("--headless", args.headless),
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
        write_stdout(json.dumps(summarize(source, args.profile), sort_keys=False) + "\n")
        return 0
    request = session_request(args, "sim")
    output = open_output(args)
    source = sim_source(args, headless=args.headless or output is not None)
    profile, _ = resolve_profile(args.profile, None)
    exporter = open_exporter(args)  # the port is bound before anything starts
    try:
        session = open_session(source, profile, request, on_warning=print_warning)
    except BaseException:
        if exporter is not None:
            exporter.close()
        raise
    return run_session(session, output, headless=args.headless, theme=args.theme, exporter=exporter)


def summarize(source: SimSource, profile_name: str = "auto") -> dict[str, Any]:
    """Run ``source`` to completion; final counts per scope and the metrics over the totals.

    Like the frame stream, the summary counts from the end of the warm-up: the counts the warm-up
    left are subtracted, and ``seconds`` and ``cycles`` start there too.
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

    source.start()  # the warm-up, uncounted
    warm_pe = {t.tid: pe_now(t) for t in machine.threads}
    warm_cmg = {c.ident: cmg_now(c) for c in machine.cmgs.values()}
    warm_cycles = machine.cycle
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
    return {
        "source": "sim",
        "simulated": True,
        "model": described["model"],
        "kernel": described["kernel"],
        "sector_config": described["sector_config"],
        "seconds": seconds,
        "cycles": machine.cycle - warm_cycles,
        "warmup_s": source.warmup,
        "counts": dict(sorted(total.items())),
        "metrics": evaluate_metrics(profile, total, seconds),
        "threads": threads,
        "cmgs": cmgs,
        "unsupported": sorted(n for n, e in profile.events.items() if n not in modelled),
    }
