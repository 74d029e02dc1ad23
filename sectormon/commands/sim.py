"""``sectormon sim``: run the simulated A64FX (a kernel or a din trace) through the normal pipeline.

``--summary`` runs the workload to completion and prints one JSON object with the final counts of
every modelled event and the profile's metrics over them. Without it the source goes through the
same sampler, engine and sinks as a real measurement (``--json`` or the TUI).

:func:`add_sim_options` and :func:`build_sim_source` are shared with the live monitor
(``sectormon --source sim``), so both spell the simulator's options the same way.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sectormon.errors import UsageError
from sectormon.sim import advisor
from sectormon.sim.config import (
    L1_WAYS,
    L2_WAYS_TOTAL,
    ModelConfig,
    Prefetch,
    SectorConfig,
    parse_l2_sets,
    parse_ways,
)
from sectormon.sim.engine import SimThread
from sectormon.sim.kernels import KERNELS, default_sectors, make_kernel
from sectormon.sim.objects import object_sectors, parse_objects
from sectormon.sim.workload import kernel_workload, trace_workload
from sectormon.sources.sim import SIM_DEFAULT_INTERVAL, SIM_DEFAULT_TIMESLICE, SimSource

DEFAULT_THREADS = 2


class _Adder(Protocol):
    def add_argument(self, *args: Any, **kwargs: Any) -> Any: ...

    def add_mutually_exclusive_group(self, *, required: bool = ...) -> Any: ...


DEFAULT_WARMUP = 50e-6  # simulated seconds: the kernels' cold misses are over by then
TRACE_WARMUP = 0.0  # a trace is the measured region: all of it counts


def add_sim_options(parser: _Adder) -> None:
    """The simulator's options (works on a parser or an argument group)."""
    parser.add_argument(
        "--warmup",
        type=float,
        metavar="S",
        help="simulated seconds run uncounted before counting starts, like a measured region after "
        "initialisation (default 5e-05 for kernels, 0 for traces; 0 counts from the first access)",
    )
    parser.add_argument(
        "--kernel",
        choices=KERNELS,
        default="scenario-a",
        help="simulated workload: scenario-a (reused + streamed array), scenario-b (tiled "
        "matrix product), random (default scenario-a)",
    )
    parser.add_argument(
        "--trace",
        action="append",
        metavar="FILE",
        help="replay a Dinero din trace ('<label> <hex address> [sector]') instead of a kernel; "
        "repeat for one thread per trace",
    )
    parser.add_argument(
        "--objects",
        metavar="FILE",
        help="name the data objects of the --trace addresses: '<name> <hex start> <size>' per line",
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help=f"simulated threads, spread over the 4 CMGs (default {DEFAULT_THREADS})",
    )
    parser.add_argument(
        "--l1-sectors",
        metavar="W0,W1,W2,W3",
        help="max L1D ways per sector 0-3 (default per kernel, e.g. 3,1,0,0 for scenario-a)",
    )
    parser.add_argument(
        "--l2-sectors",
        metavar="W0,W1[,W2,W3]",
        help="max L2 ways of SET0 sectors 0/1 (and SET1 sectors 2/3), e.g. 12,2",
    )
    parser.add_argument(
        "--l2-set",
        metavar="S[,S...]",
        default="0",
        help="L2 sector set (0 or 1) of each thread, round robin (default 0)",
    )
    parser.add_argument(
        "--l2-ways",
        type=int,
        default=14,
        metavar="N",
        help="L2 ways usable by the application (default 14 of 16)",
    )
    parser.add_argument(
        "--sector-cache",
        choices=("on", "off"),
        help="start with the sector restriction on or off (default on for kernels, off for traces)",
    )
    parser.add_argument("--no-prefetch", action="store_true", help="disable the hardware stream prefetcher")
    parser.add_argument(
        "--no-tag-override",
        action="store_true",
        help="no HPC tag address override: every access uses the default sector 0",
    )
    parser.add_argument(
        "--size",
        action="append",
        metavar="KEY=VALUE[,...]",
        help="kernel parameters, e.g. reused=48K,passes=100 (scenario-a), n=256,tile_i=16 "
        "(scenario-b), table=32M,accesses=1M (random)",
    )
    parser.add_argument(
        "--assign",
        action="append",
        metavar="ARRAY=SECTOR[,...]",
        help="sector of each array, e.g. reused=0,stream=1 or A=0,B=1,C=2",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed of the kernels (default 1)")
    once_or_loop = parser.add_mutually_exclusive_group()
    once_or_loop.add_argument(
        "--loop", action="store_true", default=None, help="repeat the workload forever (default in the TUI)"
    )
    once_or_loop.add_argument(
        "--once",
        dest="loop",
        action="store_false",
        help="run the workload once and stop (default with --json and --summary)",
    )


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values or []:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, text = item.partition("=")
            if not sep or not key.strip() or not text.strip():
                raise UsageError(f"{option} {item!r}: expected KEY=VALUE, e.g. {option} reused=48K")
            out[key.strip()] = text.strip()
    return out


def sector_config(args: argparse.Namespace, kernel: str | None) -> SectorConfig:
    """The sector configuration from the options (kernel defaults where not given)."""
    l1_default, l2_default = default_sectors(kernel or "")
    l2_ways = getattr(args, "l2_ways", 14)
    l1 = parse_ways(args.l1_sectors, "--l1-sectors", (4,), L1_WAYS) if args.l1_sectors else l1_default
    if args.l2_sectors:
        l2v = parse_ways(args.l2_sectors, "--l2-sectors", (2, 4), l2_ways)
        l2 = (*l2v, 7, 7) if len(l2v) == 2 else l2v
    else:
        l2 = (*l2_default, 7, 7)
    l2 = tuple(min(w, l2_ways) for w in l2)
    if args.sector_cache is not None:
        enabled = args.sector_cache == "on"
    else:
        enabled = kernel is not None or bool(args.l1_sectors or args.l2_sectors)
    return SectorConfig(
        enabled=enabled,
        l1=(l1[0], l1[1], l1[2], l1[3]),
        l2=(l2[0], l2[1], l2[2], l2[3]),
        l2_sets=parse_l2_sets(getattr(args, "l2_set", "0") or "0"),
        tag_override=not args.no_tag_override,
    )


def build_sim_source(args: argparse.Namespace, *, loop: bool | None = None) -> SimSource:
    """The SimSource the options describe. ``loop`` overrides ``--loop``/``--once``; unset, the
    workload loops in the TUI and runs once with ``--json`` or ``--summary``."""
    l2_ways = getattr(args, "l2_ways", 14)
    if not 1 <= l2_ways <= L2_WAYS_TOTAL:
        raise UsageError(f"--l2-ways {l2_ways}: the L2 has {L2_WAYS_TOTAL} ways; give 1 to {L2_WAYS_TOTAL}")
    traces = list(getattr(args, "trace", None) or [])
    prefetch = not args.no_prefetch
    if traces:
        if args.threads is not None and args.threads != len(traces):
            raise UsageError(
                f"--threads {args.threads} with {len(traces)} --trace file(s): a trace is one thread; "
                "give one --trace per thread and leave out --threads"
            )
        if args.size:
            raise UsageError("--size sets kernel parameters; a --trace carries its own addresses")
        sectors = sector_config(args, None)
        objects = parse_objects(args.objects) if getattr(args, "objects", None) else None
        assign = object_sectors(objects, _pairs(args.assign, "--assign")) if args.assign else None
        workload = trace_workload(traces, sectors.tag_override, prefetch, objects, assign)
    else:
        if getattr(args, "objects", None):
            raise UsageError("--objects names the data objects of a --trace; a kernel names its arrays")
        kernel = make_kernel(
            args.kernel, _pairs(args.size, "--size"), _pairs(args.assign, "--assign"), args.seed
        )
        sectors = sector_config(args, args.kernel)
        threads = DEFAULT_THREADS if args.threads is None else args.threads
        workload = kernel_workload(kernel, threads, sectors.tag_override, prefetch)
    config = ModelConfig(l2_ways=l2_ways, prefetch=Prefetch(enabled=prefetch), sectors=sectors)
    if loop is None:
        loop = args.loop
    if loop is None:
        # The TUI loops; a headless run goes once, unless a frame count or duration says how long
        # to run (a single pass of a kernel can be shorter than one interval).
        bounded = getattr(args, "count", None) is not None or getattr(args, "duration", None) is not None
        loop = bounded or not (getattr(args, "json", False) or getattr(args, "summary", False))
    warmup = getattr(args, "warmup", None)
    if warmup is None:
        warmup = TRACE_WARMUP if traces else DEFAULT_WARMUP
    return SimSource(workload, config, loop=loop, warmup=warmup)


def configure(parser: argparse.ArgumentParser) -> None:
    add_sim_options(parser.add_argument_group("simulated workload and machine"))
    out = parser.add_argument_group("output")
    out.add_argument(
        "--summary",
        action="store_true",
        help="run to completion and print one JSON object: final counts and metrics",
    )
    out.add_argument("--json", action="store_true", help="headless: JSON Lines frames on stdout")
    out.add_argument(
        "--advise",
        action="store_true",
        help="search sector assignments and way splits for the workload; print them ranked (--json: as JSON)",
    )
    advisor.add_options(out)
    out.add_argument("-o", "--output", metavar="FILE", help="write the JSON stream to FILE instead of stdout")
    out.add_argument("--record", metavar="FILE", help="record raw readings to FILE (.gz to compress)")
    out.add_argument("--count", type=int, help="stop after N frames")
    out.add_argument("--duration", type=float, help="stop after S simulated seconds")
    out.add_argument(
        "--baseline-after", type=float, metavar="S", help="mark the baseline after S simulated seconds"
    )
    out.add_argument("--theme", help="TUI theme name or path")
    how = parser.add_argument_group("how to count")
    how.add_argument("--profile", default="auto", help="event profile (default a64fx)")
    how.add_argument("--groups", help="comma-separated groups to rotate (default: all)")
    how.add_argument(
        "--timeslice", type=float, help=f"simulated seconds per group (default {SIM_DEFAULT_TIMESLICE:g})"
    )
    how.add_argument(
        "--interval", type=float, help=f"simulated seconds between frames (default {SIM_DEFAULT_INTERVAL:g})"
    )
    how.add_argument(
        "--recent",
        type=float,
        help="rolling window in seconds (default 10; on the simulator 10 intervals of simulated time)",
    )


def run(args: argparse.Namespace) -> int:
    advisor.refuse_without_advise(args)
    if args.advise:
        advice = advisor.advise(
            args,
            lambda ns: summarize(build_sim_source(ns), ns.profile),
            lambda ns: build_sim_source(ns, loop=False).workload.specs,
        )
        print(json.dumps(advice) if args.json else advisor.render(advice, args.top))
        return 0
    if args.summary and args.loop:
        raise UsageError("--summary runs the workload to completion; it cannot --loop")
    if args.summary:
        ignored = [
            option
            for option, attr in (
                ("--json", "json"),
                ("-o", "output"),
                ("--record", "record"),
                ("--count", "count"),
                ("--duration", "duration"),
                ("--baseline-after", "baseline_after"),
                ("--theme", "theme"),
            )
            if getattr(args, attr, None) not in (None, False)
        ]
        if ignored:
            raise UsageError(
                f"--summary prints one JSON object at the end; {', '.join(ignored)} "
                "belong to the frame stream (drop --summary to use them)"
            )
    source = build_sim_source(args)
    if args.summary:
        print(json.dumps(summarize(source, args.profile), sort_keys=False))
        return 0
    if getattr(args, "timeslice", None) is None:
        args.timeslice = SIM_DEFAULT_TIMESLICE
    if getattr(args, "interval", None) is None:
        args.interval = SIM_DEFAULT_INTERVAL
    from sectormon.commands.monitor import run_with_source

    profile = _profile(args.profile)
    return run_with_source(source, args, profile=profile, topology=source.topology_json())


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


def _profile(name: str) -> Any:
    from sectormon.profiles.loader import load_profile

    return load_profile("a64fx" if name in ("auto", None) else name)


def summarize(source: SimSource, profile_name: str = "auto") -> dict[str, Any]:
    """Run ``source`` to completion; final counts per scope and the metrics over the totals.

    Like the frame stream, the summary counts from the end of the warm-up: the counts the warm-up
    left are subtracted, and ``seconds`` and ``cycles`` start there too.
    """
    from sectormon.metrics.engine import evaluate_metrics
    from sectormon.sim import events as sim_events

    profile = _profile(profile_name)
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
    return {
        "source": "sim",
        "simulated": True,
        "model": described["model"],
        "kernel": described["kernel"],
        "sector_config": described["sector_config"],
        "seconds": seconds,
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
