"""``sim --summary --region NAME``: one marked region's figures in place of the whole run's.

On the hardware a user measures the kernel a program wraps in ``fapp_start``/``fapp_stop``, not the
whole run (docs/regions.md); the simulator does the same with the regions its workload marks: a
kernel's measured phase (named after the kernel) or a traced program's marked regions
(:mod:`sectormon.sources.sim.marks`). The region's counts are summed over its threads and calls
exactly as the frames' regions are (:class:`~sectormon.metrics.regions.RegionScopes`: CMG-wide
events once per CMG), and the profile's metrics are evaluated over them and the region's time,
the longest any of its threads spent inside. The advisor ranks on ``summarize``, so it follows the
region too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.compare.regions import resolve_region
from sectormon.data.frames import RegionStats
from sectormon.data.regions import RegionSnapshot
from sectormon.files.text import print_warning
from sectormon.metrics.formulas import MetricSet, evaluate_metrics
from sectormon.metrics.regions import RegionScopes, cmg_of_topology
from sectormon.profiles.model import EventDef, Profile
from sectormon.sim.config import FREQ_HZ
from sectormon.sources.sim.source import SimSource


def count_region(source: SimSource, modelled: dict[str, EventDef]) -> None:
    """Before the run: every region counts every modelled event, and the marked ones their data
    objects."""
    source.add_region_group(list(modelled.values()))
    source.marks.track_objects()


def region_summary(source: SimSource, profile: Profile, wanted: str, whole: dict[str, Any]) -> dict[str, Any]:
    """The summary ``whole`` of the run with region ``wanted``'s figures in place of the run's
    (``region``, ``calls``, ``open``, and its seconds, cycles, counts, metrics, objects, threads and
    CMGs); a region the run did not mark is a UsageError naming the regions it did."""
    snapshot = source.regions()
    _warn_unpaired(snapshot)
    cmg_events = [name for name, e in profile.events.items() if e.scope == "cmg"]
    scopes = RegionScopes(MetricSet(profile), cmg_events, cmg_of_topology(source.topology_json()))
    regions = scopes.build(snapshot.threads)
    program = whole["kernel"].get("kind") == "program"
    run = "the traced program (it has run: its output is above)" if program else "the simulated run"
    label = resolve_region(regions, wanted, run=run)
    stats = regions[label]
    counts = _exact(stats.total.counts)
    placed = {str(t.tid): t for t in source.machine.threads}
    return {
        **whole,
        "region": label,
        "calls": stats.calls,
        "open": stats.open,
        "seconds": stats.seconds,
        "cycles": round(stats.seconds * FREQ_HZ),
        "counts": dict(sorted(counts.items())),
        "metrics": evaluate_metrics(profile, counts, stats.seconds),
        "objects": _objects(source, stats, whole),
        "threads": {
            tid: {"cpu": placed[tid].cpu, "cmg": placed[tid].cmg.ident, "counts": _exact(s.counts)}
            for tid, s in stats.threads.items()
        },
        "cmgs": {cmg: {"counts": _exact(s.counts)} for cmg, s in stats.cmgs.items()},
    }


def _exact(counts: Mapping[str, float]) -> dict[str, int]:
    """The model counts every event throughout (coverage 1): its region counts are integers."""
    return {name: round(value) for name, value in counts.items()}


def _objects(source: SimSource, stats: RegionStats, whole: dict[str, Any]) -> Any:
    """Per data object inside the region: a marked region's from its marks; a kernel's region is
    its measured phase, whose objects the whole summary already counts."""
    kernel = source.workload.kernel
    if kernel is not None and (stats.name, stats.number) == (kernel.name, 0):
        return whole["objects"]
    return source.marks.objects(stats.name, stats.number)


def _warn_unpaired(snapshot: RegionSnapshot) -> None:
    if snapshot.unpaired:
        print_warning(
            f"{snapshot.unpaired} unpaired region marker call(s) ignored (a stop without a start, or a "
            "start of a region already open in that thread)"
        )
