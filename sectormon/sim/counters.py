"""The model's counters as the PMU shows them, derived on read from the tallies the run loop keeps.

The run loop keeps only what it must count per access (per access flags: accesses, demand misses,
memory reads; and a few totals); everything the events read is derived from those here, on read,
so the hot path pays for nothing it does not need. Both cores keep the same tallies under the same
names, so :class:`ThreadTotals` serves the Python model and the compiled core alike. A CMG's
counters are sums over its threads' (every L2 miss, refill-buffer meeting and memory write is
counted by the requesting core).
"""

from __future__ import annotations

from collections.abc import Callable

from sectormon.sim.cache import SectorCache
from sectormon.sim.config import TICKS
from sectormon.sim.stream import FL_SPECIAL, FLAG_SLOTS


class ThreadTotals:
    """A thread's derived counters over its tallies (declared here, kept by the thread's core)."""

    cyc: int
    acc: int
    ipa: float
    ifetch: int
    fcount: list[int]
    demand_misses: list[int]
    memory_reads: list[int]
    l1_refill_pf: int
    l2_other: int
    l2_refill_pf: int
    l2_wb: int
    swap_dm: int
    mibmch_prf: int
    l1_wb: int
    l1_miss_wait: int
    wait_l1: int
    wait_l2: int
    fe_stall: int

    def tallies(self) -> Tallies:
        """The tallies as they are now, for reading many events at once (:class:`Tallies`)."""
        return Tallies(self)

    def cycles(self) -> int:
        return self.cyc // TICKS

    @property
    def l1_refill_dm(self) -> int:
        """L1D demand refills."""
        return self._demand_total()

    @property
    def l2_refill_dm(self) -> int:
        """L2 demand refills: reads from memory, plus demands meeting a prefetch refill (errata 1.0)."""
        return self._memory_total() + self.swap_dm

    # The per-flags counters summed: the compiled core sums them in C (its lists are copies).
    def _demand_total(self) -> int:
        return sum(self.demand_misses)

    def _memory_total(self) -> int:
        return sum(self.memory_reads)

    def object_counts(self) -> list[tuple[int, int, int]]:
        """Per data object (index = object id): data accesses, L1D demand refills, memory reads.

        The counters are read once (the compiled core's are a copy per read): linear in objects."""
        fcount = self.fcount
        demand_misses = self.demand_misses
        memory_reads = self.memory_reads
        data = [fl for fl in range(FLAG_SLOTS) if not fl & FL_SPECIAL]
        out = []
        for lo in range(0, len(fcount), FLAG_SLOTS):
            out.append(
                (
                    sum(fcount[lo + fl] for fl in data),
                    sum(demand_misses[lo : lo + FLAG_SLOTS]),
                    sum(memory_reads[lo : lo + FLAG_SLOTS]),
                )
            )
        return out

    def l2_access(self) -> int:
        """L2 requests of this core: L1D refills (demand and prefetch), L2 prefetches, write-backs."""
        return self.l1_refill_dm + self.l1_refill_pf + self.l2_other

    def inst(self) -> int:
        return int(self.acc * self.ipa) + self.ifetch

    def _low_total(self, wanted: Callable[[int], bool]) -> int:
        """Data accesses whose flags' low bits (those below the object id) are ``wanted``:
        summed per low value over every object at once (a strided slice each), so the cost
        grows with the objects only inside C."""
        fcount = self.fcount
        return sum(
            sum(fcount[fl::FLAG_SLOTS]) for fl in range(FLAG_SLOTS) if not fl & FL_SPECIAL and wanted(fl)
        )

    def flag_total(self, bit: int) -> int:
        """Data accesses whose flags have ``bit`` set (``bit`` 0: all data accesses)."""
        return self._low_total(lambda fl: bit == 0 or bool(fl & bit))

    def not_sec0(self) -> int:
        return self._low_total(lambda fl: bool((fl >> 1) & 3))


_COPIED = (
    "cyc",
    "acc",
    "ipa",
    "ifetch",
    "demand_misses",
    "memory_reads",
    "l1_refill_pf",
    "l2_other",
    "l2_refill_pf",
    "l2_wb",
    "swap_dm",
    "mibmch_prf",
    "l1_wb",
    "l1_miss_wait",
    "wait_l1",
    "wait_l2",
    "fe_stall",
)


class Tallies(ThreadTotals):
    """A thread's tallies taken at one moment, each flag total summed once: what reads every
    event of a thread at a time (a marked region's, at every slice) takes instead of the thread,
    whose pipe-0 and pipe-1 events would each walk the per-flags counts again (a copy of them, on
    the compiled core). Read at once, while the model stands still: on the Python model its
    per-flags lists are the thread's own."""

    def __init__(self, thread: ThreadTotals) -> None:
        for name in _COPIED:
            setattr(self, name, getattr(thread, name))
        self.fcount = thread.fcount
        self._flag_totals: dict[int, int] = {}
        self._not_sec0: int | None = None
        self._by_low: list[tuple[int, int]] | None = None

    def _low_total(self, wanted: Callable[[int], bool]) -> int:
        """As the thread's, over the accesses per low flags value folded once for every total
        (a marked region reads four at each of its marks), only the values that occurred."""
        if self._by_low is None:
            fcount = self.fcount
            self._by_low = [
                (fl, total)
                for fl in range(FLAG_SLOTS)
                if not fl & FL_SPECIAL and (total := sum(fcount[fl::FLAG_SLOTS]))
            ]
        return sum(total for fl, total in self._by_low if wanted(fl))

    def flag_total(self, bit: int) -> int:
        total = self._flag_totals.get(bit)
        if total is None:
            total = self._flag_totals[bit] = super().flag_total(bit)
        return total

    def not_sec0(self) -> int:
        if self._not_sec0 is None:
            self._not_sec0 = super().not_sec0()
        return self._not_sec0


class Cmg:
    """A CMG: the shared L2. Its CMG-scoped counters are sums over its threads' counters, derived on
    read (every L2 miss, refill-buffer meeting and memory write is counted by the requesting core)."""

    __slots__ = ("ident", "l2", "memory", "threads", "tick")

    def __init__(self, ident: int, l2: SectorCache, memory: int) -> None:
        self.ident = ident
        self.l2 = l2
        self.memory = memory
        self.threads: list[ThreadTotals] = []
        self.tick = 0

    def at(self, tick: int) -> Cmg:
        """This CMG with its clock at ``tick`` and its threads' counts as they are now: the CMG as
        it stood at ``tick`` once its threads have all ended (their counts stand still then; only
        the energy's static part grows with the clock)."""
        then = Cmg(self.ident, self.l2, self.memory)
        then.threads = self.threads
        then.tick = tick
        return then

    def l2_miss_count(self) -> int:
        """L2 misses as the hardware counts them, refill-buffer meetings included (errata 1.0)."""
        return sum(t.l2_refill_dm + t.l2_refill_pf for t in self.threads)

    def swap_local(self) -> int:
        return sum(t.swap_dm for t in self.threads)

    def pf_mib_mch(self) -> int:
        return sum(t.mibmch_prf for t in self.threads)

    def l2_refills(self) -> int:
        """Lines really read from memory (the miss count without the refill-buffer meetings)."""
        return self.l2_miss_count() - self.swap_local() - self.pf_mib_mch()

    def l2_miss_wait(self) -> int:
        """Cycles x outstanding L2 misses: every memory read is outstanding for the memory latency."""
        return self.l2_refills() * self.memory

    def l2_accesses(self) -> int:
        return sum(t.l2_access() for t in self.threads)

    def mem_writes(self) -> int:
        return sum(t.l2_wb for t in self.threads)
