"""``sectormon hotspots``: which functions and which data objects take the events (sampled attribution).

It samples one event on a target (``--pid``, ``--cpus`` or ``-- CMD``), counts the same event in
the same run for the scale factor, then resolves and aggregates the samples and prints per function,
source line and data object: samples, estimate, share and latency buckets. The three steps stay
apart: the sampling run (``sources/perf/samples.py``), attribution (``attribution/``), the report.
Without ``--event`` it samples the profile's sampling event, or page-faults where that cannot be.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from sectormon.commands.options import numbers
from sectormon.commands.options.output import require_stdout, write_stdout
from sectormon.errors import UsageError
from sectormon.files.text import print_warning
from sectormon.perf.errors import EventUnsupported, InvalidAttribute
from sectormon.perf.events import EventSpec, parse_event
from sectormon.profiles.model import Profile
from sectormon.sources.perf.samples import default_rate, resolve_event

if TYPE_CHECKING:
    from sectormon.sources.perf.samples import CountedTotal, RecordStream

FALLBACK_EVENT = "page-faults"
DEFAULT_TOP = 20


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("what to sample (one of)")
    target.add_argument(
        "--pid",
        type=numbers.PID.parser("--pid"),
        help=numbers.PID.help("every thread of this running process"),
    )
    target.add_argument(
        "--cpus", metavar="LIST", help="everything on these CPUs, e.g. 0-3 (needs paranoid <= 0)"
    )
    target.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- CMD ARGS: launch CMD and sample it from exec"
    )
    how = parser.add_argument_group("how to sample")
    how.add_argument(
        "--event",
        help="a profile event name or a perf event spec (default: the profile's sampling event, "
        "else page-faults where there is no hardware PMU)",
    )
    rate = how.add_mutually_exclusive_group()
    rate.add_argument(
        "--period",
        type=numbers.PERIOD.parser("--period"),
        metavar="N",
        help=numbers.PERIOD.help("one sample every N events"),
    )
    rate.add_argument(
        "--freq",
        type=numbers.FREQUENCY.parser("--freq"),
        metavar="HZ",
        help=numbers.FREQUENCY.help("about HZ samples a second (the kernel adapts the period)"),
    )
    how.add_argument("--profile", default="auto", help="event profile: auto, a64fx, generic, or a YAML path")
    how.add_argument(
        "--duration",
        type=numbers.DURATION.parser("--duration"),
        metavar="S",
        help=numbers.DURATION.help("stop after S seconds (default: when the target ends)"),
    )
    how.add_argument(
        "--mmap-pages",
        type=numbers.RING_PAGES.parser("--mmap-pages"),
        default=128,
        metavar="N",
        help=numbers.RING_PAGES.help(
            "ring buffer data pages per CPU, a power of two (default 128: 512 KiB with 4 KiB pages)"
        ),
    )
    how.add_argument(
        "--include-kernel", action="store_true", help="also sample kernel mode (needs paranoid <= 1)"
    )
    how.add_argument(
        "--precise",
        type=numbers.PRECISE.parser("--precise"),
        default=0,
        metavar="0-3",
        help=numbers.PRECISE.help("perf's precise_ip: 0 any skid .. 3 zero skid (PEBS events on x86)"),
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    out.add_argument("--lines", action="store_true", help="also show hot cache lines")
    out.add_argument(
        "--line-size",
        type=numbers.LINE_SIZE.parser("--line-size"),
        metavar="BYTES",
        help=numbers.LINE_SIZE.help("cache line size, a power of two (default: this host's L1D)"),
    )
    out.add_argument(
        "--top",
        type=numbers.TOP.parser("--top"),
        default=DEFAULT_TOP,
        metavar="N",
        help=numbers.TOP.help("rows per view (default 20)"),
    )


def run(args: argparse.Namespace) -> int:
    from sectormon.attribution.aggregate import HotspotAggregator
    from sectormon.attribution.report import HotspotReport, Overhead, render_text
    from sectormon.attribution.symbolize import Symbolizer
    from sectormon.data.samples import LatencyBucket
    from sectormon.host.topology import data_cache_line_size
    from sectormon.perf.sampling import SamplingConfig, check_sampling
    from sectormon.sources.perf import samples as perf_samples

    command = _command(args)
    _validate(args, command)
    require_stdout()  # before the target runs: the report could not be written
    profile = _profile(args.profile)
    name, spec, period, freq, warnings = _choose_event(args, profile)
    try:
        config = SamplingConfig(
            period=period,
            freq=freq,
            pages=args.mmap_pages,
            exclude_kernel=not args.include_kernel,
            precise_ip=args.precise,
        )
    except ValueError as exc:
        raise UsageError(f"--mmap-pages {args.mmap_pages}: {exc}") from None
    try:
        check_sampling(spec, config, name=name)
    except EventUnsupported as exc:
        raise EventUnsupported(
            f"--event {name}: {spec.spec} cannot be sampled on this host ({exc.errno_name}: no such event "
            f"on this PMU, or it cannot sample) (fix: another --event; {FALLBACK_EVENT} samples on any host)",
            errno=exc.errno,
            event=name,
        ) from None
    target = perf_samples.make_target(
        pid=args.pid,
        cpus=_cpus(args.cpus) if args.cpus is not None else (),
        command=command,
        stdout=2 if args.json else None,
    )
    sampled = perf_samples.sample_target(target, spec, config, name=name, duration=args.duration)

    buckets = [LatencyBucket(b.name, b.max_cycles) for b in profile.latency_buckets]
    aggregator = HotspotAggregator(
        buckets, line_size=args.line_size or data_cache_line_size(), lines=args.lines
    )
    symbolizer = Symbolizer(read_proc=sampled.cpu_wide)
    stream = sampled.stream()
    for event in stream:
        attributed = symbolizer.feed(event)
        if attributed is not None:
            aggregator.add(attributed)
    # The kernel's own count of the lost samples is exact; the LOST records also count the
    # side-band records dropped with them and miss the drops after the last one: they are only
    # the fallback on kernels without PERF_FORMAT_LOST.
    lost = sampled.lost if sampled.lost is not None else stream.lost
    aggregator.add_lost(lost)
    counted = sampled.counted
    table = aggregator.table(total=counted.value if counted is not None else None, top=args.top)
    warnings += symbolizer.images.warnings
    warnings += _run_warnings(table.samples, lost, stream, counted, name)
    status, ended = perf_samples.exit_status(target)
    if ended:
        warnings.append(ended)
    report = HotspotReport(
        event=name,
        spec=spec.spec,
        period=period,
        freq=freq,
        table=table,
        overhead=Overhead(sampled.wall_seconds, sampled.cpu_seconds, sampled.target_cpu_seconds),
        target=_describe_target(args, command),
        multiplexed=counted.multiplexed if counted is not None else False,
        throttled=stream.throttled,
        lines=args.lines,
        warnings=tuple(warnings),
    )
    if args.json:
        write_stdout(json.dumps(report.to_json(), separators=(",", ":")) + "\n")
        for warning in warnings:
            print_warning(warning)
    else:
        write_stdout(render_text(report) + "\n")
    return status


def _command(args: argparse.Namespace) -> list[str]:
    command = [c for c in (args.command or []) if c]
    return command[1:] if command and command[0] == "--" else command


def _validate(args: argparse.Namespace, command: list[str]) -> None:
    chosen = (("--pid", args.pid is not None), ("--cpus", args.cpus is not None), ("-- CMD", bool(command)))
    given = [option for option, on in chosen if on]
    if not given:
        raise UsageError("nothing to sample: give --pid PID, --cpus LIST or -- CMD ARGS")
    if len(given) > 1:
        raise UsageError(f"choose one target: {' and '.join(given)} were both given")
    if args.line_size is not None and args.line_size & (args.line_size - 1):
        raise UsageError(f"--line-size {args.line_size}: give a power of two, e.g. 64 or 256")


def _profile(choice: str) -> Profile:
    from sectormon.host.topology import load_topology
    from sectormon.profiles.resolve import auto_profile_name, load_profile

    topology = load_topology()
    name = auto_profile_name(topology) if choice == "auto" else choice
    return load_profile(name, variant=topology.variant)


def _choose_event(args: argparse.Namespace, profile: Profile) -> tuple[str, EventSpec, int, int, list[str]]:
    """(name, spec, period, freq, warnings): the event to sample and how often."""
    from sectormon.perf.sampling import SamplingConfig, check_sampling

    warnings: list[str] = []
    if args.event:
        name, spec = resolve_event(args.event, profile, option="--event")
        default_period = 0
    elif profile.sampling is not None:
        name = profile.sampling.event
        spec = parse_event(profile.events[name].spec)
        default_period = profile.sampling.period
        try:
            check_sampling(spec, SamplingConfig(period=default_period), name=name)
        except (EventUnsupported, InvalidAttribute) as exc:
            warnings.append(
                f"the {profile.name} profile's sampling event {name} ({spec.spec}) cannot be sampled here "
                f"({exc.errno_name}: no hardware PMU, or it cannot sample); sampling {FALLBACK_EVENT} instead"
            )
            name, spec, default_period = FALLBACK_EVENT, parse_event(FALLBACK_EVENT), 0
    else:
        name, spec, default_period = FALLBACK_EVENT, parse_event(FALLBACK_EVENT), 0
    if args.period or args.freq:
        return name, spec, args.period or 0, args.freq or 0, warnings
    if default_period:
        return name, spec, default_period, 0, warnings
    period, freq = default_rate(name, spec, profile)
    return name, spec, period, freq, warnings


def _cpus(text: str) -> tuple[int, ...]:
    from sectormon.host.topology import load_topology, parse_cpu_list

    cpus = parse_cpu_list(text, what="--cpus")
    return load_topology().require_cpus(cpus, option="--cpus")


def _run_warnings(
    samples: int, lost: int, stream: RecordStream, counted: CountedTotal | None, name: str
) -> list[str]:
    warnings = []
    if lost:
        warnings.append(
            f"{lost:,} samples lost: the ring buffer filled faster than it was read "
            "(give more --mmap-pages or a larger --period); the scale factor makes up for them"
        )
    if stream.throttled:
        warnings.append(
            f"the kernel throttled sampling {stream.throttled} times (kernel.perf_event_max_sample_rate): "
            "give a larger --period"
        )
    if stream.errors:
        warnings.append(f"part of the sample data could not be read: {stream.errors[0]}")
    if stream.malformed:
        warnings.append(f"{stream.malformed} malformed records were skipped")
    if not samples:
        warnings.append(f"no samples: {name} did not occur often enough in the target (in user space)")
    if counted is None:
        warnings.append(f"the counted total of {name} could not be read: estimates are n/a")
    return warnings


def _describe_target(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    if args.pid is not None:
        return {"mode": "pid", "pid": args.pid}
    if args.cpus is not None:
        return {"mode": "cpus", "cpus": args.cpus}
    return {"mode": "command", "argv": command}
