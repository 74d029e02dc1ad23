"""Frames that carry marked regions, for the Regions view's tests: the generic host's frames with
the regions of ``tests/regions/programs/marked.c`` (a fapp region entered once per frame, up to 4
times, 6,000 page faults each; a LIKWID region of 1,500 faults from the second frame, counted for
half of it under rotation; three threads marking ``worker`` from the third frame, open in it), and
the A64FX session's frames with one rotating region. Test data: the metrics here are computed by
the fixture, never by the UI.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sectormon.data.frames import Frame, RegionStats, ScopeStats
from tests.ui.frames_fixture import ROTATION_SHARE, a64fx_frames, generic_frames

Metrics = Callable[[Mapping[str, float], float], dict[str, float | None]]


@dataclass(frozen=True)
class Thread:
    """One marking thread's reading of a region."""

    tid: int
    cpu: int
    cmg: int
    counts: Mapping[str, float]
    seconds: float
    coverage: float = 1.0
    pid: int = 8572
    rank: int | None = None
    extra: Mapping[str, float] = field(default_factory=dict)


def _generic_metrics(counts: Mapping[str, float], seconds: float) -> dict[str, float | None]:
    return {
        "IPC": None,
        "cache_miss_rate": None,
        "branch_miss_rate": None,
        "cpu_utilization": counts.get("TASK_CLOCK", 0.0) / 1e9 / seconds,
        "page_fault_rate": counts.get("PAGE_FAULTS", 0.0) / seconds,
        "context_switch_rate": None,
        "migration_rate": None,
        "major_fault_rate": counts.get("MAJOR_FAULTS", 0.0) / seconds,
    }


def _a64fx_metrics(counts: Mapping[str, float], seconds: float) -> dict[str, float | None]:
    cycles, inst = counts.get("CPU_CYCLES", 0.0), counts.get("INST_RETIRED", 0.0)
    access, refill = counts.get("L1D_CACHE", 0.0), counts.get("L1D_CACHE_REFILL", 0.0)
    return {
        "IPC": inst / cycles if cycles else None,
        "L1D_miss_rate": refill / access if access else None,
        "mem_stall_rate": counts.get("LD_COMP_WAIT_L2_MISS", 0.0) / cycles if cycles else None,
        "power_core_W": None,
    }


def _scope(threads: Sequence[Thread], metrics: Metrics) -> ScopeStats:
    counts: dict[str, float] = {}
    for thread in threads:
        for name, value in thread.counts.items():
            counts[name] = counts.get(name, 0.0) + value
    seconds = max(t.seconds for t in threads)
    coverage = min(t.coverage for t in threads)
    values = metrics(counts, seconds)
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=values,
        coverage={**dict.fromkeys(counts, coverage), **dict.fromkeys(values, coverage)},
        seconds=seconds,
    )


def region(
    name: str, number: int, calls: int, threads: Sequence[Thread], *, open_: bool = False, metrics: Metrics
) -> RegionStats:
    def split(key: str) -> dict[str, ScopeStats]:
        parts: dict[str, list[Thread]] = {}
        for thread in threads:
            value = getattr(thread, key)
            if value is not None:
                parts.setdefault(str(value), []).append(thread)
        return {k: _scope(v, metrics) for k, v in parts.items()}

    return RegionStats(
        name=name,
        number=number,
        calls=calls,
        thread_count=len(threads),
        open=open_,
        seconds=max(t.seconds for t in threads),
        total=_scope(threads, metrics),
        threads=split("tid"),
        cores=split("cpu"),
        cmgs=split("cmg"),
        ranks=split("rank"),
        procs=split("pid"),
    )


def marked_regions(step: int) -> dict[str, RegionStats]:
    """The generic host's regions after frame ``step`` (whole run so far), first-marked order."""
    calls = step + 1
    out = {
        "fapp_pages#1": region(
            "fapp_pages",
            1,
            calls,
            [
                Thread(
                    8572,
                    1,
                    0,
                    {"PAGE_FAULTS": 6000.0 * calls, "TASK_CLOCK": 9.6e6 * calls},
                    0.0096 * calls,
                    rank=0,
                )
            ],
            metrics=_generic_metrics,
        )
    }
    if step >= 1:
        likwid = Thread(
            8572, 1, 0, {"PAGE_FAULTS": 1502.4, "TASK_CLOCK": 2.1e6}, 0.0021, coverage=0.5, rank=0
        )
        out["likwid_pages"] = region("likwid_pages", 0, 1, [likwid], metrics=_generic_metrics)
    if step >= 2:  # open in its first frame: half of its pages, half of its time so far
        pages, seconds = (400.0, 0.0008) if step == 2 else (800.0, 0.0016)
        workers = [
            Thread(tid, cpu, 0, {"PAGE_FAULTS": pages, "TASK_CLOCK": seconds * 1e9}, seconds, rank=0)
            for tid, cpu in ((8573, 0), (8574, 1), (8575, 0))
        ]
        out["worker"] = region("worker", 0, 3, workers, open_=step == 2, metrics=_generic_metrics)
    # The engine gives first-marked order; the view keeps it even if a frame lists them otherwise.
    return dict(reversed(out.items())) if step >= 3 else out


def with_regions(frame: Frame, regions: Mapping[str, RegionStats]) -> Frame:
    run = dataclasses.replace(frame.run, regions=regions)
    return dataclasses.replace(frame, run=run)


def generic_region_frames(count: int) -> list[Frame]:
    """Generic host frames whose whole-run window carries :func:`marked_regions`."""
    return [with_regions(f, marked_regions(i)) for i, f in enumerate(generic_frames(count))]


def kernel_regions(step: int) -> dict[str, RegionStats]:
    """An A64FX region counted under the five-group rotation (coverage 20 %), in 12 threads."""
    scale = step + 1
    per_second = {  # IPC 0.5, L1D miss rate 5 %, memory stall rate 20 %
        "CPU_CYCLES": 2.0e6,
        "INST_RETIRED": 1.0e6,
        "L1D_CACHE": 4.0e5,
        "L1D_CACHE_REFILL": 2.0e4,
        "LD_COMP_WAIT_L2_MISS": 4.0e5,
    }
    threads = [
        Thread(
            100 + cpu,
            cpu,
            (cpu - 12) // 12,
            {name: value * scale * (1 + cpu % 3) for name, value in per_second.items()},
            0.5 * scale,
            coverage=ROTATION_SHARE,
            pid=4242,
        )
        for cpu in range(12, 24)
    ]
    return {"sector_kernel#1": region("sector_kernel", 1, scale, threads, metrics=_a64fx_metrics)}


def a64fx_region_frames(count: int, *, sector_from: int | None = None) -> list[Frame]:
    return [
        with_regions(f, kernel_regions(i)) for i, f in enumerate(a64fx_frames(count, sector_from=sector_from))
    ]
