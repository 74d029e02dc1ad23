"""Samples of the simulated A64FX: every Nth modelled L1D refill, attributed like a real sample.

Each refill the model's ``RefillSampler`` keeps becomes an ``AttributedSample``: the statement that
made the access stands for the IP, the array for the data object, the line's address for the data
address, and the exact latency the model gave it for the weight, so latency buckets, the scale
factor, the TUI and recordings all work on any machine. The feed runs on the sampler thread with the
model, so a take sees exactly the refills counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sectormon.data.hotspots import HotspotSettings
from sectormon.data.samples import AttributedSample, CodeLocation, DataLocation, LatencyBucket, SampleBatch
from sectormon.errors import UsageError
from sectormon.profiles.model import Profile
from sectormon.sim import events as sim_events
from sectormon.sim.config import FREQ_HZ, LINE_SHIFT, TICKS, Energy
from sectormon.sim.engine import Machine
from sectormon.sim.qemu.heap import HEAP_PREFIX, STACK_PREFIX
from sectormon.sim.sampling import Refill, RefillSampler
from sectormon.sim.stream import OBJECT_SHIFT
from sectormon.sim.thread import SimThread
from sectormon.sim.workload import Workload
from sectormon.sources.base import SampleRequest

SIM_DEFAULT_PERIOD = 101
"""One refill in 101 by default: a few hundred samples per frame of a simulated thread (the a64fx
profile's 10007 is made for the billions of refills a second of real hardware)."""

# The L1D refill events the model can sample, by code: (demand refills, prefetch refills).
SAMPLED_CODES: dict[int, tuple[bool, bool]] = {
    0x0003: (True, True),  # L1D_CACHE_REFILL
    0x0200: (True, False),  # L1D_CACHE_REFILL_DM
    0x0202: (False, True),  # L1D_CACHE_REFILL_HWPRF
    0x0049: (False, True),  # L1D_CACHE_REFILL_PRF (the model has no software prefetch)
}
CARRIES = (
    "the statement that accessed the array (as the IP), the array (data object), the line's "
    "address and the refill's exact modelled latency"
)
OTHER = DataLocation("[other]", "unknown")

Labels = tuple[tuple[CodeLocation, DataLocation], ...]


def _labels(workload: Workload, tid: int, objects: Sequence[str]) -> Labels:
    """Per data object id of thread ``tid`` (the ids its access flags carry): the statement that
    accesses it and the object. A kernel names its arrays and statements; a din trace names its
    objects with ``--objects`` (else everything is ``[other]``) and no statements: its file
    stands for the IP."""
    kernel = workload.kernel
    if kernel is not None:
        module = kernel.name
        return tuple(
            (CodeLocation(text, module, f"{module}:{number}"), DataLocation(name, "symbol", module))
            for name, (text, number) in zip(kernel.objects, kernel.statements, strict=True)
        )
    traces = workload.description.get("traces", [])
    path = traces[tid].get("path", "") if tid < len(traces) else ""
    code = CodeLocation(f"[{Path(str(path)).name or 'trace'}]", "trace")
    return tuple(
        (code, OTHER if i == 0 or not name else DataLocation(name, _kind(name), "trace"))
        for i, name in enumerate(objects)
    )


def _kind(name: str) -> str:
    """A traced program's heap site (``heap:...``) or stack (``stack:T``), else a variable."""
    return "heap" if name.startswith(HEAP_PREFIX) else "stack" if name.startswith(STACK_PREFIX) else "symbol"


def resolve_sim_event(request: SampleRequest, profile: Profile) -> tuple[str, int]:
    """The profile event ``--sample`` names, and its code; only L1D refills can be sampled."""
    names = [name for name, e in profile.events.items() if e.code in SAMPLED_CODES]
    event = profile.events.get(request.event)
    if event is None or event.code not in SAMPLED_CODES:
        why = "not an event of the profile" if event is None else "not an L1D refill event"
        raise UsageError(
            f"--sample {request.event}: {why}; the simulated A64FX samples its L1D refills: "
            f"{', '.join(names) or 'none in this profile'}"
        )
    assert event.code is not None
    return event.name, event.code


class SimSampleFeed:
    """A :class:`~sectormon.sources.base.SampleFeed` over the model's sampled refills.

    Runs on the sampler thread, as the model does: a take hands over what the model recorded
    while it ran up to the take, and the event's exact count since the last take.
    """

    def __init__(
        self,
        machine: Machine,
        workload: Workload,
        energy: Energy,
        request: SampleRequest,
        profile: Profile,
        *,
        origin: int,
    ) -> None:
        name, code = resolve_sim_event(request, profile)
        period = request.period or SIM_DEFAULT_PERIOD
        demand, prefetch = SAMPLED_CODES[code]
        seed = workload.kernel.seed if workload.kernel is not None else 1
        self.sampler = RefillSampler(period, demand=demand, prefetch=prefetch, seed=seed)
        self.settings = HotspotSettings(
            event=name,
            spec=f"sim:{code:#06x}",
            source="sim",
            period=period,
            top=request.top,
            buckets=tuple(LatencyBucket(b.name, b.max_cycles) for b in profile.latency_buckets),
            carries=CARRIES,
        )
        self._machine = machine
        self._code = code
        self._energy = energy
        self._origin = origin
        self._workload = workload
        self._labels: dict[int, Labels] = {}
        self._objects: dict[int, Sequence[str]] = {}  # a running program's grow (sim/qemu/live_objects.py)
        for thread in machine.threads:
            self.adopt(thread)
        self._last = self._count()

    def adopt(self, thread: SimThread) -> None:
        """Sample ``thread`` too: one of the machine's, or a running program's new one (its
        counts start at 0 when it joins, so the exact count since the last take stays exact)."""
        self._labels[thread.tid] = _labels(self._workload, thread.tid, thread.spec.objects)
        self._objects[thread.tid] = thread.spec.objects
        thread.sampler = self.sampler

    def _count(self) -> int:
        return sum(sim_events.read_pe(self._code, t, self._energy) for t in self._machine.threads)

    def _attribute(self, refill: Refill) -> AttributedSample:
        issued, tid, cpu, line, flags, latency = refill
        address = line << LINE_SHIFT
        labels, obj = self._labels[tid], flags >> OBJECT_SHIFT
        if obj >= len(labels):  # named since the labels were made: its name is in the list by now
            labels = self._labels[tid] = _labels(self._workload, tid, self._objects[tid])
        code, data = labels[obj]
        ns = (issued - self._origin) * 1_000_000_000 // (TICKS * int(FREQ_HZ))
        return AttributedSample(ns, tid, cpu, self.sampler.period, latency // TICKS, code, data, address)

    def take(self, t: float, *, final: bool = False) -> SampleBatch:
        samples = tuple(self._attribute(r) for r in self.sampler.drain())
        now = self._count()
        counted, self._last = now - self._last, now
        return SampleBatch(t, samples, 0, counted)

    def warnings(self) -> list[str]:
        return []

    def close(self) -> None:
        for thread in self._machine.threads:
            thread.sampler = None
