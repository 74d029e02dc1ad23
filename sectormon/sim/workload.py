"""What the simulated machine runs: threads placed on FX700-numbered cores, each with its stream.

Threads are spread over the CMGs round robin (thread t on CMG t % 4, the (t // 4)-th core of it),
the way a spread OpenMP binding places them, so CPU = 12 * CMG + t // 4 and CMG = CPU // 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sectormon.errors import UsageError
from sectormon.sim.config import CMGS, CPUS_PER_CMG, MAX_THREADS
from sectormon.sim.kernels import KernelSpec
from sectormon.sim.objects import DataObjects
from sectormon.sim.stream import ThreadSpec
from sectormon.sim.trace import TraceFile, TraceInfo, open_trace, stream_factory, validate

TRACE_INST_PER_ACCESS = 2.0


def placement(thread: int, threads: int) -> int:
    """The CPU of simulated thread ``thread``: spread over the CMGs in use."""
    cmgs = min(CMGS, threads)
    return (thread % cmgs) * CPUS_PER_CMG + thread // cmgs


@dataclass(frozen=True, slots=True)
class Workload:
    """The thread specs plus a JSON description for the header; ``kernel`` when a kernel runs (its
    arrays' statements are what the samples of ``--sample`` name as their IPs)."""

    specs: tuple[ThreadSpec, ...]
    description: dict[str, Any] = field(default_factory=dict)
    kernel: KernelSpec | None = None


def _check_threads(threads: int) -> None:
    if not 1 <= threads <= MAX_THREADS:
        raise UsageError(f"--threads {threads}: the simulated A64FX has 1 to {MAX_THREADS} cores")


def kernel_workload(kernel: KernelSpec, threads: int, tag_override: bool, prefetch: bool) -> Workload:
    _check_threads(threads)
    specs = tuple(
        ThreadSpec(
            t,
            placement(t, threads),
            kernel.stream_factory(t, tag_override, prefetch),
            kernel.cycles_per_access,
            kernel.inst_per_access,
            kernel.objects,
        )
        for t in range(threads)
    )
    return Workload(
        specs,
        {"kind": "kernel", **kernel.describe(), "threads": threads, "cpus": [s.cpu for s in specs]},
        kernel,
    )


def trace_workload(
    paths: Sequence[str | TraceFile],
    tag_override: bool,
    prefetch: bool,
    objects: DataObjects | None = None,
    assign: tuple[int | None, ...] | None = None,
) -> Workload:
    """One thread per trace file. Traces with instruction fetches count those as the instructions.
    ``objects`` (``--objects``) names the data objects of every trace's addresses; ``assign``
    (``--assign``, per object id) sets their sectors. A path is opened with
    :func:`~sectormon.sim.trace.open_trace` (a pipe is copied once)."""
    _check_threads(len(paths))
    traces = [p if isinstance(p, TraceFile) else open_trace(p) for p in paths]
    infos: list[TraceInfo] = [validate(t) for t in traces]
    names = objects.names if objects is not None else ("",)
    specs = tuple(
        ThreadSpec(
            t,
            placement(t, len(paths)),
            stream_factory(p, tag_override, prefetch, objects, assign),
            1.0,
            0.0 if info.ifetches else TRACE_INST_PER_ACCESS,
            names,
        )
        for t, (p, info) in enumerate(zip(traces, infos, strict=True))
    )
    return Workload(
        specs,
        {
            "kind": "trace",
            "traces": [i.to_json() for i in infos],
            "threads": len(paths),
            "cpus": [s.cpu for s in specs],
            "inst_per_access": TRACE_INST_PER_ACCESS,
            **({"data_objects": objects.to_json()} if objects is not None else {}),
            **(
                {"object_sectors": {n: s for n, s in zip(names, assign, strict=True) if s is not None}}
                if assign is not None
                else {}
            ),
            "note": "ifetch lines count as instructions; without them each data access "
            f"counts {TRACE_INST_PER_ACCESS:g} instructions",
        },
    )
