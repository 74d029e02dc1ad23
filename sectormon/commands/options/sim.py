"""The simulator's command-line options, shared by ``sectormon sim`` and ``sectormon --source sim``,
so both spell them the same way and hand the same :class:`SimOptions` to the simulated source."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from sectormon.commands.options import numbers
from sectormon.errors import UsageError
from sectormon.host.topology import parse_cpu_list
from sectormon.sim.config import (
    CMGS,
    CPUS_PER_CMG,
    L1_WAYS,
    L2_WAYS_TOTAL,
    MAX_THREADS,
    parse_l2_sets,
    parse_ways,
)
from sectormon.sim.kernels import KERNELS
from sectormon.sources.sim.defaults import DEFAULT_THREADS, DEFAULT_WARMUP, SIM_DEFAULT_INTERVAL, TUI_PACE

if TYPE_CHECKING:  # the source itself: imported when a simulation is built, not for the parser
    from sectormon.sources.sim.source import SimOptions, SimSource

THREADS = numbers.whole(1, MAX_THREADS, "threads (the simulated A64FX's cores)")
L2_WAYS = numbers.whole(1, L2_WAYS_TOTAL, "ways")


def add_sim_options(parser: argparse._ActionsContainer) -> list[argparse.Action]:
    """The simulator's options (on a parser or an argument group); returns the actions added, so
    a command that also counts real targets can refuse them there."""
    actions: list[argparse.Action] = []

    def add(*args: Any, **kwargs: Any) -> None:
        actions.append(parser.add_argument(*args, **kwargs))

    add(
        "--warmup",
        type=numbers.WARMUP.parser("--warmup"),
        metavar="S",
        help=numbers.WARMUP.help(
            "simulated seconds run uncounted before counting starts, like a measured region after "
            f"initialisation (default {DEFAULT_WARMUP:g} for kernels, 0 for traces; 0 counts from the "
            "first access)"
        ),
    )
    add(
        "--pace",
        type=numbers.PACE.parser("--pace"),
        metavar="S",
        help=numbers.PACE.help(
            "wall seconds per frame interval: the simulated clock is held back to it, so the TUI "
            f"refreshes like a monitor (default {TUI_PACE:g} in the TUI and while serving --openmetrics; "
            "otherwise headless 0, as fast as the model runs)"
        ),
    )
    add(
        "--kernel",
        choices=KERNELS,
        default="scenario-a",
        help="simulated workload: scenario-a (reused + streamed array), scenario-b (tiled "
        "matrix product), random (default scenario-a)",
    )
    add(
        "--trace",
        action="append",
        metavar="FILE",
        help="replay a Dinero din trace ('<label> <hex address> [sector]') instead of a kernel; "
        "repeat for one thread per trace",
    )
    add(
        "--objects",
        metavar="FILE",
        help="name the data objects of the --trace addresses: '<name> <hex start> <size>' per line",
    )
    add(
        "--threads",
        type=THREADS.parser("--threads"),
        metavar="N",
        help=THREADS.help(f"simulated threads, spread over the 4 CMGs (default {DEFAULT_THREADS})"),
    )
    add(
        "--l1-sectors",
        metavar="W0,W1,W2,W3",
        help="max L1D ways per sector 0-3 (default per kernel, e.g. 3,1,0,0 for scenario-a)",
    )
    add(
        "--l2-sectors",
        metavar="W0,W1[,W2,W3]",
        help="max L2 ways of SET0 sectors 0/1 (and SET1 sectors 2/3), e.g. 12,2",
    )
    add(
        "--l2-set",
        metavar="S[,S...]",
        default="0",
        help="L2 sector set (0 or 1) of each thread, round robin (default 0)",
    )
    add(
        "--l2-ways",
        type=L2_WAYS.parser("--l2-ways"),
        default=14,
        metavar="N",
        help=L2_WAYS.help("L2 ways usable by the application (default 14 of 16)"),
    )
    add(
        "--sector-cache",
        choices=("on", "off"),
        help="start with the sector restriction on or off (default on for kernels, off for traces)",
    )
    add("--no-prefetch", action="store_true", help="disable the hardware stream prefetcher")
    add(
        "--no-tag-override",
        action="store_true",
        help="no HPC tag address override: every access uses the default sector 0",
    )
    add(
        "--size",
        action="append",
        metavar="KEY=VALUE[,...]",
        help="kernel parameters, e.g. reused=48K,passes=100 (scenario-a), n=256,tile_i=16 "
        "(scenario-b), table=32M,accesses=1M (random)",
    )
    add(
        "--assign",
        action="append",
        metavar="ARRAY=SECTOR[,...]",
        help="sector of each array, e.g. reused=0,stream=1 or A=0,B=1,C=2",
    )
    add(
        "--seed",
        type=numbers.SEED.parser("--seed"),
        default=1,
        help=numbers.SEED.help("random seed of the kernels (default 1)"),
    )
    once_or_loop = parser.add_mutually_exclusive_group()
    actions.append(
        once_or_loop.add_argument(
            "--loop",
            action="store_true",
            default=None,
            help="repeat the workload forever (default in the TUI)",
        )
    )
    actions.append(
        once_or_loop.add_argument(
            "--once",
            dest="loop",
            action="store_false",
            help="run the workload once and stop (default with --json and --summary)",
        )
    )
    return actions


BIND_HELP = (
    "with -- CMD: run the program's t-th thread on the t-th of these simulated CPUs (FX700 numbering "
    "0-47, CMG = CPU // 12), e.g. 0,1,12: its first two threads share CMG 0's L2; threads past the "
    "list are not simulated (default: spread over the 4 CMGs, thread t on CMG t %% 4)"
)


def add_placement_option(group: argparse._ArgumentGroup) -> None:
    """``--bind LIST`` of ``sectormon sim``: where a traced program's threads run, in the monitor's
    ``--bind`` vocabulary (``args.sim_bind``; the monitor's own ``--bind`` pins real threads)."""
    group.add_argument("--bind", dest="sim_bind", metavar="LIST", help=BIND_HELP)


def sim_cpus(text: str | None) -> tuple[int, ...]:
    """The simulated CPUs of ``--bind`` (empty when not given), checked: one error naming the fix."""
    if text is None:
        return ()
    cpus = parse_cpu_list(text, what="--bind")
    outside = [cpu for cpu in cpus if cpu >= CMGS * CPUS_PER_CMG]
    if outside:
        raise UsageError(
            f"--bind {text}: CPU {outside[0]} is not a simulated core; the simulated A64FX has CPUs "
            f"0-{CMGS * CPUS_PER_CMG - 1} (CMG = CPU // {CPUS_PER_CMG})"
        )
    return cpus


def add_region_option(parser: argparse._ActionsContainer) -> None:
    """``sim``'s ``--region``: the marked region ``--summary`` (and the advisor) report."""
    parser.add_argument(
        "--region",
        metavar="NAME[#NUMBER]",
        help="with --summary or --advise: the figures of this marked region (a kernel's is named after "
        "the kernel; a traced program's are its marker calls') instead of the whole run",
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


def sim_options(args: argparse.Namespace) -> SimOptions:
    """The typed options of a parsed command line that has :func:`add_sim_options`. Trace and
    objects files are opened here, once: a pipe can be read only once, and every source built
    from the options (one per configuration of the advisor) reads the same content. A traced
    program (``sim -- CMD``, captured once by the command for ``--summary``) is ``args.sim_program``;
    one running while it is simulated (the frame stream) is ``args.sim_running``."""
    from sectormon.sim.objects import parse_objects
    from sectormon.sim.trace import open_trace
    from sectormon.sources.sim.source import SimOptions

    traces = tuple(open_trace(p) for p in args.trace or ())
    program = getattr(args, "sim_program", None)
    running = getattr(args, "sim_running", None)
    cpus = sim_cpus(getattr(args, "sim_bind", None))
    if cpus and not getattr(args, "sim_command", None):
        raise UsageError(
            f"--bind {args.sim_bind}: places the threads of a traced program (sim --bind LIST -- CMD); "
            "a kernel's threads spread over the CMGs (--threads N)"
        )
    l1 = parse_ways(args.l1_sectors, "--l1-sectors", (4,), L1_WAYS) if args.l1_sectors else None
    l2 = parse_ways(args.l2_sectors, "--l2-sectors", (2, 4), args.l2_ways) if args.l2_sectors else None
    return SimOptions(
        kernel=args.kernel,
        traces=traces,
        objects=parse_objects(args.objects)
        if args.objects and (traces or program or running)
        else args.objects,
        threads=args.threads,
        sizes=_pairs(args.size, "--size"),
        assign=_pairs(args.assign, "--assign"),
        seed=args.seed,
        l1_sectors=(l1[0], l1[1], l1[2], l1[3]) if l1 else None,
        l2_sectors=l2,
        l2_sets=parse_l2_sets(args.l2_set or "0"),
        l2_ways=args.l2_ways,
        sector_cache=None if args.sector_cache is None else args.sector_cache == "on",
        prefetch=not args.no_prefetch,
        tag_override=not args.no_tag_override,
        warmup=args.warmup,
        loop=args.loop,
        program=program,
        running=running,
        cpus=cpus,
        region=getattr(args, "region", None),  # sim's own option; --source sim has no --summary
    )


def sim_source(args: argparse.Namespace, *, headless: bool) -> SimSource:
    """The simulated source of a command line. Unless ``--loop``/``--once`` say otherwise, the TUI
    loops the workload; a headless run goes once, unless ``--count`` or ``--duration`` say how
    long to run (a single pass of a kernel can be shorter than one interval), or it serves
    ``--openmetrics``: an endpoint is there to be scraped, so it loops until SIGINT/SIGTERM. The
    TUI's simulated clock, and a served endpoint's, keep ``--pace`` (default :data:`TUI_PACE`)
    wall seconds per frame interval. A program simulated while it runs ends a headless run when
    it ends, as a monitored command does (``--count``/``--duration`` are then at most)."""
    numbers.read_clock_options(args, "sim")
    bounded = args.count is not None or args.duration is not None
    serving = getattr(args, "openmetrics", None) is not None and not bounded
    running = getattr(args, "sim_running", None) is not None
    loop = not headless if running else bounded or serving or not headless
    from sectormon.sources.sim.source import build_sim_source

    source = build_sim_source(sim_options(args), loop=loop)
    paced = serving or not headless
    pace = args.pace if args.pace is not None else TUI_PACE if paced else 0.0
    source.pace = pace / (args.interval or SIM_DEFAULT_INTERVAL)
    return source
