"""The simulated machine: threads bound to cores, per-core L1D, per-CMG L2, prefetcher, timing.

A thread consumes a stream of *records* ``(line, n, flags)``: ``n`` consecutive accesses to one
256-byte line (an unrolled SVE loop touches a line several times in a row). Only the first access
of a record can miss: the others hit the line it just made MRU, so grouping them is exact, and it
is what lets pure Python simulate over a million accesses per second.

Flags: bit 0 write, bits 1-2 sector id, bit 3 SCE (tag override on), bit 4 PFE. Two special
records carry no access: ``FL_EXIT`` (loop exits; frontend mispredict penalty) and ``FL_IFETCH``
(instruction fetches of a din trace); their count is ``-1 - line``.

Timing (a model): each access costs ``cpa`` issue cycles. A miss becomes an outstanding request that
completes ``latency`` cycles later; the core runs ahead until it is ``window`` accesses past the
oldest incomplete miss, or until ``l1_mib`` demand misses are outstanding, then stalls until that
miss completes. The stall cycles are LD_COMP_WAIT, split by where the awaited data came from
(L2: _L1_MISS, memory: _L2_MISS).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sectormon.sim.cache import DIRTY, PF_MARK, SECTOR_MASK, SectorCache
from sectormon.sim.config import (
    CPUS_PER_CMG,
    L1_SETS,
    L1_WAYS,
    L2_SETS,
    ModelConfig,
    SectorConfig,
)
from sectormon.sim.sampling import RefillSampler

FL_WRITE = 1
FL_SCE = 8
FL_PFE = 16
FL_EXIT = 32
FL_IFETCH = 64
FL_SPECIAL = FL_EXIT | FL_IFETCH
FLAG_SLOTS = 128

# The engine's clock ticks TICKS times per cycle, so fractional issue costs stay exact integers.
TICKS = 4

# Where the data of an L1D line came from (stall attribution) / who allocated an L2 line.
FROM_L2 = 0
FROM_MEMORY = 1
BY_DEMAND = 0
BY_PREFETCH = 1

Record = tuple[int, int, int]
Chunks = Iterator[list[Record]]


def flags(sector: int, write: bool, tagged: bool, pfe: bool) -> int:
    """The flags of an access: an untagged access uses the default sector 0."""
    if not tagged:
        return FL_WRITE if write else 0
    return (FL_WRITE if write else 0) | (sector << 1) | FL_SCE | (FL_PFE if pfe else 0)


@dataclass(frozen=True, slots=True)
class ThreadSpec:
    """What one simulated thread runs: its stream factory (called again when looping) and its ISA mix."""

    tid: int
    cpu: int
    stream: Callable[[], Chunks]
    cycles_per_access: float = 1.0
    inst_per_access: float = 2.0


class Cmg:
    """A CMG: the shared L2. Its CMG-scoped counters are sums over its threads' counters, derived on
    read (every L2 miss, refill-buffer meeting and memory write is counted by the requesting core)."""

    __slots__ = ("ident", "l2", "memory", "threads", "tick")

    def __init__(self, ident: int, config: ModelConfig) -> None:
        self.ident = ident
        s = config.sectors
        self.l2 = SectorCache(L2_SETS, config.l2_ways, s.l2, s.enabled)
        self.memory = config.timing.memory
        self.threads: list[SimThread] = []
        self.tick = 0

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


class SimThread:
    """One thread on one core: its L1D, prefetcher, timing state and per-PE counters.

    Times (``cyc``, ready ticks, waits) are in engine ticks; :meth:`cycles` converts.
    """

    def __init__(self, spec: ThreadSpec, cmg: Cmg, config: ModelConfig, loop: bool) -> None:
        self.spec = spec
        self.tid = spec.tid
        self.cpu = spec.cpu
        self.cmg = cmg
        self.loop = loop
        s = config.sectors
        t = config.timing
        self.l1 = SectorCache(L1_SETS, L1_WAYS, s.l1, s.enabled)
        self.l2base = 2 * s.l2_set_of(spec.tid)
        self.l2_hit = t.l2_hit * TICKS
        self.memory = t.memory * TICKS
        self.window = t.window
        self.mib = t.l1_mib
        self.mispredict = t.mispredict * TICKS
        self.cpa = max(1, round(spec.cycles_per_access * TICKS))
        self.ipa = spec.inst_per_access
        p = config.prefetch
        self.prefetch = p.enabled
        self.pf_d1 = p.l1_distance
        self.pf_d2 = p.l2_distance
        self.pf_table = p.table
        self.recent: dict[int, None] = {}
        self.mq: deque[tuple[int, int, int]] = deque()
        self.fcount = [0] * FLAG_SLOTS
        self.gen: Chunks = spec.stream()
        self.it: Iterator[Record] = iter(())
        self.done = False
        self.passes = 0
        self.pass_start = 0
        self.cyc = 0
        self.acc = 0
        self.l1_refill_dm = 0
        self.l1_refill_pf = 0
        self.l1_wb = 0
        self.l1_miss_wait = 0
        self.l2_other = 0  # L2 requests that are not L1D refills: L2 prefetches, write-backs
        self.l2_refill_dm = 0
        self.l2_refill_pf = 0
        self.l2_wb = 0
        self.swap_dm = 0
        self.mibmch_prf = 0
        self.wait_l1 = 0
        self.wait_l2 = 0
        self.fe_stall = 0
        self.exits = 0
        self.ifetch = 0
        # Sees every L1D refill when a session samples them (``--sample``); off the hit path.
        self.sampler: RefillSampler | None = None

    # ----------------------------------------------------------------- the hot loop
    def run(self, limit: int) -> None:
        """Simulate until this core's clock reaches ``limit`` ticks or the stream ends."""
        if self.done:
            return
        tags = self.l1.tags
        sets = self.l1.sets
        mask = self.l1.mask
        fcount = self.fcount
        mq = self.mq
        window = self.window
        cpa = self.cpa
        miss = self._slow
        cyc = self.cyc
        acc = self.acc
        wl1 = 0
        wl2 = 0
        it = self.it
        while True:
            for line, n, fl in it:
                fcount[fl] += n
                v = tags.get(line)
                if v is not None and v < (cyc << 4) + 16:
                    s = sets[line & mask]
                    if s[-1] != line:
                        s.remove(line)
                        s.append(line)
                    if fl & 1:
                        tags[line] = v | 8
                else:
                    self.acc = acc
                    cyc = miss(line, fl, v, cyc)
                acc += n
                cyc += n * cpa
                while mq:
                    e = mq[0]
                    if e[1] <= cyc:
                        mq.popleft()
                    elif acc - e[0] < window:
                        break
                    else:
                        if e[2]:
                            wl2 += e[1] - cyc
                        else:
                            wl1 += e[1] - cyc
                        cyc = e[1]
                        mq.popleft()
                if cyc >= limit:
                    break
            else:
                chunk = next(self.gen, None)
                if chunk is None:
                    self.passes += 1
                    if self.loop and acc > self.pass_start:  # an empty stream must not spin forever
                        self.pass_start = acc
                        self.gen = self.spec.stream()
                        continue
                    self.done = True
                    # The thread ends when its last outstanding miss has arrived.
                    while mq:
                        e = mq.popleft()
                        if e[1] > cyc:
                            if e[2]:
                                wl2 += e[1] - cyc
                            else:
                                wl1 += e[1] - cyc
                            cyc = e[1]
                    break
                it = iter(chunk)
                continue
            break
        self.it = it
        self.cyc = cyc
        self.acc = acc
        self.wait_l1 += wl1
        self.wait_l2 += wl2

    # ----------------------------------------------------------------- slow paths
    def _stall_for_mib(self, cyc: int) -> int:
        mq = self.mq
        while len(mq) >= self.mib:
            e = mq.popleft()
            if e[1] > cyc:
                if e[2]:
                    self.wait_l2 += e[1] - cyc
                else:
                    self.wait_l1 += e[1] - cyc
                cyc = e[1]
        return cyc

    def _slow(self, line: int, fl: int, v: int | None, cyc: int) -> int:
        """Everything but a plain L1D hit on arrived data; returns the (possibly stalled) clock."""
        if fl & FL_SPECIAL:
            count = -1 - line
            if fl & FL_EXIT:
                self.exits += count
                self.fe_stall += count * self.mispredict
                return cyc + count * self.mispredict
            self.ifetch += count
            return cyc
        l1 = self.l1
        tags = l1.tags
        if v is not None:
            # The tag is there: a prefetched line used for the first time, and/or data still in flight.
            if v >= PF_MARK:
                v -= PF_MARK
                tags[line] = v
                if self.prefetch:
                    self._advance(line, fl, cyc)
            l1.touch(line)
            if fl & FL_WRITE:
                tags[line] = v | DIRTY
            ready = v >> 4
            if ready > cyc:
                self.mq.append((self.acc, ready, (v >> 2) & 1))
            return cyc
        # An L1D demand miss.
        if len(self.mq) >= self.mib:
            cyc = self._stall_for_mib(cyc)
        self.l1_refill_dm += 1
        sec = (fl >> 1) & 3
        cmg = self.cmg
        l2 = cmg.l2
        v2 = l2.tags.get(line)
        if v2 is None:
            ready = cyc + self.memory
            source = FROM_MEMORY
            self.l2_refill_dm += 1
            victim, vstate = l2.fill(line, (ready << 4) | (self.l2base + (sec & 1)))
            if vstate & DIRTY:
                self.l2_wb += 1
        elif v2 >> 4 <= cyc:
            s2 = l2.sets[line & l2.mask]
            if s2[-1] != line:
                s2.remove(line)
                s2.append(line)
            ready = cyc + self.l2_hit
            source = FROM_L2
        else:
            ready = self._l2_inflight(line, v2, cyc, True)
            source = FROM_MEMORY
        self.l1_miss_wait += ready - cyc
        sampler = self.sampler
        if sampler is not None and sampler.demand:
            sampler.refill(self.tid, self.cpu, line, cyc, ready)
        state = (ready << 4) | (source << 2) | sec
        if fl & FL_WRITE:
            state |= DIRTY
        victim, vstate = l1.fill(line, state)
        if vstate & DIRTY:
            self.l1_wb += 1
            self._l2_write(victim, vstate & SECTOR_MASK, cyc)
        if fl & FL_WRITE and line not in tags:  # the sector may not allocate in L1D: write through to L2
            self._l2_write(line, sec, cyc)
        self.mq.append((self.acc, ready, source))
        if self.prefetch:
            self._train(line, fl, cyc)
        return cyc

    def _l2_inflight(self, line: int, v2: int, cyc: int, demand: bool) -> int:
        """A request meets a refill of the same line still on its way from memory (refill buffer match).

        The hardware counts the meeting as another refill (errata 1.0), and so does the model:
        that is what the errata-corrected formulas subtract again.
        """
        self.cmg.l2.touch(line)
        allocated_by = (v2 >> 2) & 1
        if demand and allocated_by == BY_PREFETCH:
            self.swap_dm += 1
            self.l2_refill_dm += 1
        elif not demand and allocated_by == BY_DEMAND:
            self.mibmch_prf += 1
            self.l2_refill_pf += 1
        return max(v2 >> 4, cyc + self.l2_hit)

    def _l2_fill(self, line: int, sec2: int, ready: int, by: int) -> None:
        _, vstate = self.cmg.l2.fill(line, (ready << 4) | (by << 2) | sec2)
        if vstate & DIRTY:
            self.l2_wb += 1

    def _l2_write(self, line: int, sec: int, cyc: int) -> None:
        """A dirty L1D victim written back to L2 (allocated there if L2 had dropped it)."""
        l2 = self.cmg.l2
        self.l2_other += 1
        v2 = l2.tags.get(line)
        if v2 is not None:
            l2.touch(line)
            l2.tags[line] = v2 | DIRTY
            return
        _, vstate = l2.fill(line, (cyc << 4) | DIRTY | (self.l2base + (sec & 1)))
        if line not in l2.tags:  # the sector may not allocate in L2 either: straight to memory
            self.l2_wb += 1
        if vstate & DIRTY:
            self.l2_wb += 1

    # ----------------------------------------------------------------- the stream prefetcher
    def _train(self, line: int, fl: int, cyc: int) -> None:
        """A demand miss: two misses to consecutive lines start a stream."""
        recent = self.recent
        if line - 1 in recent:
            del recent[line - 1]
            l1 = self.l1.tags
            l2 = self.cmg.l2.tags
            for t in range(line + 1, line + self.pf_d1 + 1):
                if t not in l1:
                    self._prefetch_l1(t, fl, cyc)
            for t in range(line + self.pf_d1 + 1, line + self.pf_d2 + 1):
                if t not in l2 and t not in l1:
                    self._prefetch_l2(t, fl, cyc)
            return
        recent[line] = None
        if len(recent) > self.pf_table:
            del recent[next(iter(recent))]

    def _advance(self, line: int, fl: int, cyc: int) -> None:
        """A prefetched line was used: keep the stream the same distance ahead."""
        t = line + self.pf_d1
        l1 = self.l1.tags
        if t not in l1:
            self._prefetch_l1(t, fl, cyc)
        t = line + self.pf_d2
        if self.pf_d2 > self.pf_d1 and t not in self.cmg.l2.tags and t not in l1:
            self._prefetch_l2(t, fl, cyc)

    def _prefetch_l1(self, line: int, fl: int, cyc: int) -> None:
        """A prefetch into L1D: an L1D refill (HWPRF) that reads the line from L2 (or memory)."""
        sec = (fl >> 1) & 3
        self.l1_refill_pf += 1
        cmg = self.cmg
        l2 = cmg.l2
        v2 = l2.tags.get(line)
        if v2 is None:
            ready = cyc + self.memory
            source = FROM_MEMORY
            self.l2_refill_pf += 1
            self._l2_fill(line, self.l2base + (sec & 1), ready, BY_PREFETCH)
        elif v2 >> 4 <= cyc:
            l2.touch(line)
            ready = cyc + self.l2_hit
            source = FROM_L2
        else:
            ready = self._l2_inflight(line, v2, cyc, False)
            source = FROM_MEMORY
        self.l1_miss_wait += ready - cyc
        sampler = self.sampler
        if sampler is not None and sampler.prefetch:
            sampler.refill(self.tid, self.cpu, line, cyc, ready)
        l1 = self.l1
        victim, vstate = l1.fill(line, PF_MARK | (ready << 4) | (source << 2) | sec)
        if vstate & DIRTY:
            self.l1_wb += 1
            self._l2_write(victim, vstate & SECTOR_MASK, cyc)

    def _prefetch_l2(self, line: int, fl: int, cyc: int) -> None:
        """A prefetch into L2 only (further ahead than the L1D prefetch)."""
        self.l2_other += 1
        self.l2_refill_pf += 1
        self._l2_fill(line, self.l2base + ((fl >> 1) & 1), cyc + self.memory, BY_PREFETCH)

    # ----------------------------------------------------------------- derived totals
    def cycles(self) -> int:
        return self.cyc // TICKS

    def l2_access(self) -> int:
        """L2 requests of this core: L1D refills (demand and prefetch), L2 prefetches, write-backs."""
        return self.l1_refill_dm + self.l1_refill_pf + self.l2_other

    def inst(self) -> int:
        return int(self.acc * self.ipa) + self.ifetch

    def flag_total(self, bit: int) -> int:
        """Data accesses whose flags have ``bit`` set (``bit`` 0: all data accesses)."""
        return sum(c for fl, c in enumerate(self.fcount) if not fl & FL_SPECIAL and (bit == 0 or fl & bit))

    def not_sec0(self) -> int:
        return sum(c for fl, c in enumerate(self.fcount) if not fl & FL_SPECIAL and (fl >> 1) & 3)

    def set_sectors(self, sectors: SectorConfig) -> None:
        self.l1.set_maxima(sectors.l1, sectors.enabled)


class Machine:
    """All simulated threads and CMGs, advanced together in small interleaved quanta.

    ``run_until`` is the only method that moves the model. A sector change requested from another
    thread (:meth:`request_sectors`) is applied between two quanta, never in the middle of one.
    """

    def __init__(self, config: ModelConfig, specs: list[ThreadSpec], loop: bool = False) -> None:
        self.config = config
        self.cmgs: dict[int, Cmg] = {}
        self.threads: list[SimThread] = []
        for spec in specs:
            c = spec.cpu // CPUS_PER_CMG
            if c not in self.cmgs:
                self.cmgs[c] = Cmg(c, config)
            thread = SimThread(spec, self.cmgs[c], config, loop)
            self.cmgs[c].threads.append(thread)
            self.threads.append(thread)
        self.tick = 0
        self._pending: SectorConfig | None = None

    @property
    def cycle(self) -> int:
        """Cycles simulated so far (the clock every running thread has reached)."""
        return self.tick // TICKS

    def finished(self) -> bool:
        return all(t.done for t in self.threads)

    def run_until(self, target_cycle: float) -> None:
        """Advance every running thread to ``target_cycle`` (threads interleave every quantum)."""
        target = int(target_cycle * TICKS)
        quantum = self.config.quantum * TICKS
        threads = self.threads
        while self.tick < target and not self.finished():
            if self._pending is not None:
                self.apply_sectors(self._pending)
                self._pending = None
            step = min(target, self.tick + quantum)
            for t in threads:
                if not t.done and t.cyc < step:
                    t.run(step)
            self.tick = step
            for c in self.cmgs.values():
                c.tick = step
        if self.finished():
            self.tick = max([self.tick] + [t.cyc for t in threads])
            for c in self.cmgs.values():
                c.tick = self.tick

    def run_to_completion(self, max_cycles: float = float("inf")) -> None:
        while not self.finished() and self.cycle < max_cycles:
            self.run_until(min(self.cycle + 10_000_000, max_cycles))

    def request_sectors(self, sectors: SectorConfig) -> None:
        """Ask for a sector change from any thread; applied before the next quantum."""
        self._pending = sectors

    def apply_sectors(self, sectors: SectorConfig) -> None:
        """New maxima/enable for every L1D and L2; lines move only as new fills happen."""
        self.config = self.config.with_sectors(sectors)
        for t in self.threads:
            t.set_sectors(sectors)
        for c in self.cmgs.values():
            c.l2.set_maxima(sectors.l2, sectors.enabled)
