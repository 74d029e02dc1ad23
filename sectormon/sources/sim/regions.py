"""The simulated kernels' marked region: each simulated thread marks its measured phase, from the
end of the warm-up to the end of its stream, as a region named after the kernel (number 0).

A program on the hardware marks its kernel with ``fapp_start``/``fapp_stop`` and the marker library
publishes the region's counter deltas (:mod:`sectormon.regions`); the simulated threads do the same
here so that regions run, and are tested, on any machine. The model counts every event all the
time, so a region's counts are exact differences of the model's counters: a thread's at the
region's start (:meth:`KernelRegions.begin`, called when the warm-up ends) and now, or at its end
(a finished thread's counters stand still). Nothing in either core's run loop marks anything: the
compiled core and the Python model keep the same counters, so they give the same regions.

What a thread holds is what the marker library would publish for it
(:class:`~sectormon.data.regions.ThreadRegion`): one :class:`~sectormon.data.regions.GroupDelta` per
counter group the sampler opened (on the thread units: the profile's PE-scoped events; on the CMG
units: its CMG-scoped ones), each enabled and running for the thread's simulated time inside the
region (coverage 1: nothing is rotated out of the model).

CMG-wide events count the whole CMG. Each thread carries its CMG's counts during the region in that
CMG: from the region's start (every thread enters at the warm-up's end) until the last of the
CMG's threads leaves it, or until now while one is inside. Every thread of a CMG so carries the
same values, and :mod:`sectormon.metrics.regions` counts them once per CMG whichever thread it
takes them from. Once its threads have ended a CMG's counts stand still except its energy's static
part, which grows with the CMG's clock: it is read at the clock of the last thread's end
(:meth:`~sectormon.sim.counters.Cmg.at`), so the region leaves out what an idle CMG spends while
other CMGs still run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sectormon.data.regions import EMPTY, GroupDelta, RegionSnapshot, ThreadRegion
from sectormon.profiles.model import EventDef
from sectormon.sim import events as sim_events
from sectormon.sim.config import Energy, ticks_to_ns
from sectormon.sim.counters import Cmg
from sectormon.sim.engine import Machine
from sectormon.sim.thread import SimThread

PID = 0
"""The simulated threads' process: the model has one, without a pid of its own."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """A thread's counters where it entered the region: its clock (ticks) and every PE event."""

    thread: SimThread
    cyc: int
    counts: dict[int, int]


class KernelRegions:
    """The region ``name`` of every simulated thread, read as a
    :class:`~sectormon.data.regions.RegionSnapshot` (:meth:`read`)."""

    def __init__(self, name: str, energy: Energy) -> None:
        self.name = name
        self._energy = energy
        self._groups: dict[tuple[str, ...], tuple[int, ...]] = {}  # event names -> model codes
        self._entries: dict[int, _Entry] | None = None  # by tid, once begun
        self._cmg_start: dict[int, dict[int, int]] = {}  # CMG -> its counts at the region's start
        self._cmg_end: dict[int, dict[int, int]] = {}  # CMG -> its counts when its last thread left
        self._done: dict[int, ThreadRegion] = {}  # threads whose readings can no longer change

    def add_group(self, events: Sequence[EventDef]) -> None:
        """A counter group the sampler opened; each becomes one :class:`GroupDelta` of every
        thread's region (a group opened on many units, once). Its CMG-scoped events read the
        thread's CMG, the others the thread, as the group itself does."""
        codes = tuple(e.code for e in events if e.code is not None)
        if len(codes) != len(events):  # the source opens modelled events only
            return
        names = tuple(e.name for e in events)
        if names not in self._groups:
            self._groups[names] = codes
            self._done.clear()  # their readings lack the new group

    def begin(self, machine: Machine) -> None:
        """Every thread still running enters the region now (the warm-up's end); once."""
        if self._entries is not None:
            return
        self._entries = {
            t.tid: _Entry(t, t.cyc, self._pe_counts(t, sim_events.PE_EVENTS))
            for t in machine.threads
            if not t.done
        }
        self._cmg_start = {ident: self._cmg_counts(c) for ident, c in machine.cmgs.items()}

    def read(self, machine: Machine) -> RegionSnapshot:
        """The region of every thread that entered it (none before the warm-up's end)."""
        if self._entries is None or not self._entries:
            return EMPTY
        cmg_counts = {ident: self._cmg_now(c) for ident, c in machine.cmgs.items()}
        return RegionSnapshot(
            threads=tuple(self._reading(entry, cmg_counts) for entry in self._entries.values()),
            overflow=frozenset(),
            unpaired=0,
            dropped=0,
        )

    def _reading(self, entry: _Entry, cmg_counts: dict[int, dict[int, int]]) -> ThreadRegion:
        thread = entry.thread
        done = self._done.get(thread.tid)
        if done is not None:
            return done
        ended = thread.done
        ns = ticks_to_ns(thread.cyc - entry.cyc)
        pe_now = self._pe_counts(thread, {c for codes in self._groups.values() for c in codes})
        cmg_start = self._cmg_start[thread.cmg.ident]
        cmg_now = cmg_counts[thread.cmg.ident]
        groups = tuple(
            GroupDelta(
                names,
                tuple(
                    cmg_now[c] - cmg_start[c] if c in sim_events.CMG_EVENTS else pe_now[c] - entry.counts[c]
                    for c in codes
                ),
                ns,
                ns,
                ns,
            )
            for names, codes in self._groups.items()
        )
        reading = ThreadRegion(
            name=self.name,
            number=0,
            pid=PID,
            tid=thread.tid,
            rank=None,
            last_cpu=thread.cpu,
            calls=1,
            open=not ended,
            open_counted=not ended,
            wall_ns=ns if ended else 0,
            groups=groups,
            thread_exited=ended,
        )
        if ended and thread.cmg.ident in self._cmg_end:
            self._done[thread.tid] = reading
        return reading

    def _cmg_now(self, cmg: Cmg) -> dict[int, int]:
        """The CMG's counts for the region now: as they are while one of its threads is inside,
        as they were at the last one's end once every one has left."""
        ended = self._cmg_end.get(cmg.ident)
        if ended is not None:
            return ended
        assert self._entries is not None
        inside = [e.thread for e in self._entries.values() if e.thread.cmg is cmg]
        if not inside or any(not t.done for t in inside):
            return self._cmg_counts(cmg)
        ended = self._cmg_counts(cmg.at(max(t.cyc for t in inside)))
        self._cmg_end[cmg.ident] = ended
        return ended

    def _pe_counts(self, thread: SimThread, codes: Iterable[int]) -> dict[int, int]:
        """The thread's counts of ``codes`` (at the start every PE event: the groups open later)."""
        tallies = thread.tallies()
        return {
            code: sim_events.read_pe(code, tallies, self._energy)
            for code in codes
            if code not in sim_events.CMG_EVENTS
        }

    def _cmg_counts(self, cmg: Cmg) -> dict[int, int]:
        return {code: sim_events.read_cmg(code, cmg, self._energy) for code in sim_events.CMG_EVENTS}
