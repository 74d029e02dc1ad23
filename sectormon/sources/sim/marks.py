"""The regions a traced program marks, on the simulated A64FX: its marker calls, met in its threads'
streams as :class:`~sectormon.sim.stream.RegionMark` items, turned into the readings the marker
library publishes on the hardware (:class:`~sectormon.data.regions.ThreadRegion`).

Both cores stop a thread's run loop at a mark with every counter written back
(:meth:`sectormon.sim.engine.Machine.run_until` hands it to :meth:`MarkedRegions.on_mark`), so a
region's counts are exact differences of the model's counters at its marks: per thread and per
region (name, number), the deltas of every modelled event summed over its calls, its calls, its
simulated time inside, open or closed. This generalises the kernels' one region
(:mod:`.regions`) to any number of regions, nested (each counts its own span), repeated (calls add
up) or left open (a start without a stop: open, counted up to now, or to its thread's end). As the
marker library does, a stop without a start, or a start of a region already open in that thread,
is ignored and counted (``unpaired``).

CMG-wide events count the whole CMG: a thread's reading carries its CMG's counts over its own calls
(the CMG as it stands at the mark, at the thread's clock), as a thread reading a CMG-wide group on
the hardware does, and :mod:`sectormon.metrics.regions` counts them once per CMG, from the thread
that spent longest inside. Threads of one CMG run in turns of a quantum
(:attr:`~sectormon.sim.config.ModelConfig.quantum`), so another thread's share of a CMG-wide count
at a mark is exact to within a quantum.

Every mark reads every modelled event of its thread (and its CMG), since the groups a reader wants
are known only when it reads; per-object counts are read too once :meth:`track_objects` asked for
them (``sim --summary --region``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sectormon.data.regions import EMPTY, GroupDelta, RegionSnapshot, ThreadRegion
from sectormon.profiles.model import EventDef
from sectormon.sim import events as sim_events
from sectormon.sim.config import Energy, ticks_to_ns
from sectormon.sim.stream import RegionMark
from sectormon.sim.thread import SimThread
from sectormon.sources.sim.regions import PID

ObjectCounts = list[tuple[int, int, int]]
"""Per data object: accesses, L1D demand refills, memory reads (``SimThread.object_counts``)."""


@dataclass(frozen=True, slots=True)
class _At:
    """A thread's counters at one mark: its clock (ticks), every PE event, its CMG's events, and
    its per-object counts when tracked."""

    cyc: int
    pe: dict[int, int]
    cmg: dict[int, int]
    objects: ObjectCounts | None


@dataclass(slots=True)
class _Span:
    """One region in one thread: its closed calls' summed deltas, and where the open call began."""

    thread: SimThread
    calls: int = 0
    ticks: int = 0
    counts: dict[int, int] = field(default_factory=dict)  # event code -> delta over closed calls
    objects: ObjectCounts | None = None
    started: _At | None = None  # the open call's start


def _added(total: dict[int, int], now: dict[int, int], then: dict[int, int]) -> dict[int, int]:
    """``total`` plus what each event of ``now`` counted since ``then``."""
    out = dict(total)
    for code, value in now.items():
        out[code] = out.get(code, 0) + value - then[code]
    return out


def _objects_added(total: ObjectCounts | None, now: ObjectCounts, then: ObjectCounts) -> ObjectCounts:
    base = total or [(0, 0, 0)] * len(now)
    return [
        (b[0] + n[0] - t[0], b[1] + n[1] - t[1], b[2] + n[2] - t[2])
        for b, n, t in zip(base, now, then, strict=True)
    ]


class MarkedRegions:
    """Every region the simulated threads' streams mark, read as a
    :class:`~sectormon.data.regions.RegionSnapshot` (:meth:`read`)."""

    def __init__(self, energy: Energy) -> None:
        self._energy = energy
        self._groups: dict[tuple[str, ...], tuple[int, ...]] = {}  # event names -> model codes
        self._spans: dict[tuple[str, int, int], _Span] = {}  # (name, number, tid), first marked first
        self._unpaired = 0
        self._objects = False
        # A thread that ended inside a region: its counters at the read that found it ended.
        self._ended: dict[int, _At] = {}

    def add_group(self, events: Sequence[EventDef]) -> None:
        """A counter group a reader wants; each becomes one :class:`GroupDelta` of every reading."""
        codes = tuple(e.code for e in events if e.code is not None)
        if len(codes) == len(events):  # the source opens modelled events only
            self._groups.setdefault(tuple(e.name for e in events), codes)

    def track_objects(self) -> None:
        """Read per-object counts at every mark from now on (:meth:`objects`)."""
        self._objects = True

    def on_mark(self, thread: SimThread, mark: RegionMark) -> None:
        """Apply ``mark``, met in ``thread``'s stream (its counters are as the mark finds them)."""
        key = (mark.name, mark.number, thread.tid)
        span = self._spans.get(key)
        if mark.start:
            if span is None:
                span = self._spans[key] = _Span(thread)
            if span.started is not None:
                self._unpaired += 1  # started again while open: ignored, as the marker library does
                return
            span.calls += 1
            span.started = self._at(thread)
            return
        if span is None or span.started is None:
            self._unpaired += 1  # a stop without a start
            return
        self._close(span, self._at(thread))

    def _close(self, span: _Span, now: _At) -> None:
        then = span.started
        assert then is not None
        span.ticks += now.cyc - then.cyc
        span.counts = _added(_added(span.counts, now.pe, then.pe), now.cmg, then.cmg)
        if now.objects is not None and then.objects is not None:
            span.objects = _objects_added(span.objects, now.objects, then.objects)
        span.started = None

    def _at(self, thread: SimThread) -> _At:
        tallies = thread.tallies()
        energy = self._energy
        cmg = thread.cmg.at(thread.cyc)  # the CMG at the thread's clock
        return _At(
            thread.cyc,
            {code: sim_events.read_pe(code, tallies, energy) for code in sim_events.PE_EVENTS},
            {code: sim_events.read_cmg(code, cmg, energy) for code in sim_events.CMG_EVENTS},
            thread.object_counts() if self._objects else None,
        )

    def _now(self, thread: SimThread, read: dict[int, _At]) -> _At:
        """The thread's counters for an open call, read once per :meth:`read` (``read``): now, or
        at its end once it has ended."""
        now = read.get(thread.tid)
        if now is not None:
            return now
        if not thread.done:
            now = self._at(thread)
        else:
            now = self._ended.get(thread.tid) or self._at(thread)
            self._ended[thread.tid] = now
        read[thread.tid] = now
        return now

    def read(self) -> RegionSnapshot:
        """Every (region, thread) marked so far, an open call counted up to now."""
        if not self._spans and not self._unpaired:
            return EMPTY
        read: dict[int, _At] = {}
        return RegionSnapshot(
            threads=tuple(self._reading(key[0], key[1], span, read) for key, span in self._spans.items()),
            overflow=frozenset(),
            unpaired=self._unpaired,
            dropped=0,
        )

    def _reading(self, name: str, number: int, span: _Span, read: dict[int, _At]) -> ThreadRegion:
        thread = span.thread
        counts = span.counts
        ticks = span.ticks
        if span.started is not None:
            now = self._now(thread, read)
            counts = _added(_added(counts, now.pe, span.started.pe), now.cmg, span.started.cmg)
            ticks += now.cyc - span.started.cyc
        ns = ticks_to_ns(ticks)
        groups = tuple(
            GroupDelta(names, tuple(counts.get(code, 0) for code in codes), ns, ns, ns)
            for names, codes in self._groups.items()
        )
        is_open = span.started is not None
        return ThreadRegion(
            name=name,
            number=number,
            pid=PID,
            tid=thread.tid,
            rank=None,
            last_cpu=thread.cpu,
            calls=span.calls,
            open=is_open,
            open_counted=is_open,
            wall_ns=ticks_to_ns(span.ticks),
            groups=groups,
            thread_exited=thread.done,
        )

    def objects(self, name: str, number: int) -> dict[str, dict[str, int]] | None:
        """Per data object (by name, summed over threads): accesses, L1D demand refills and memory
        reads inside the region's calls; None unless :meth:`track_objects` came before its marks."""
        out: dict[str, dict[str, int]] = {}
        for (n, k, _), span in self._spans.items():
            if (n, k) != (name, number):
                continue
            counts = span.objects
            if span.started is not None:
                now = self._now(span.thread, {}).objects
                if now is None or span.started.objects is None:
                    return None
                counts = _objects_added(counts, now, span.started.objects)
            if counts is None:
                return None
            for obj, (acc, refills, reads) in zip(span.thread.spec.objects, counts, strict=True):
                row = out.setdefault(obj, {"accesses": 0, "l1d_demand_refills": 0, "memory_reads": 0})
                row["accesses"] += acc
                row["l1d_demand_refills"] += refills
                row["memory_reads"] += reads
        return out
