"""One simulated thread on one core, in Python: the model's reference (and its fallback).

The thread owns its core's L1D and stream prefetcher and shares its CMG's L2; :meth:`SimThread.run`
consumes its records (:mod:`.stream`) until the core's clock reaches a limit.

Timing (a model): each access costs ``cpa`` issue cycles. A miss becomes an outstanding request that
completes ``latency`` cycles later; the core runs ahead until it is ``window`` accesses past the
oldest incomplete miss, or until ``l1_mib`` demand misses are outstanding, then stalls until that
miss completes. The stall cycles are LD_COMP_WAIT, split by where the awaited data came from
(L2: _L1_MISS, memory: _L2_MISS).

``_core.c`` is the same caches and run loop in C (``engine.CoreThread``), chosen where it is built;
both give the same numbers. This one stays the reference the golden cases pin, and what runs
where no compiler was. Its run loop keeps the L1D hit and the plain demand fills inline (copies of
:class:`~.cache.SectorCache`'s ``touch`` and ``fill`` for their commonest cases): what a
Python-only machine spends its time on, and each copy still earns its place on
``benchmarks/bench_sim.py`` (docs/perf-tuning.md, fifteenth pass); everything rarer calls the cache.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from sectormon.sim.cache import DIRTY, PF_MARK, SECTOR_MASK, SectorCache
from sectormon.sim.config import L1_SETS, L1_WAYS, TICKS, ModelConfig, SectorConfig
from sectormon.sim.counters import Cmg, ThreadTotals
from sectormon.sim.sampling import RefillSampler
from sectormon.sim.stream import (
    FL_EXIT,
    FL_SPECIAL,
    FL_WRITE,
    FLAG_SLOTS,
    Chunks,
    Idle,
    Record,
    RegionMark,
    ThreadSpec,
)

# The oldest miss's window close when no miss is outstanding: the largest int CPython compares on
# its fast path (one digit), so the loop's check against it stays cheap. Runs longer than that
# many accesses only enter the check's body with nothing in the queue.
NEVER = (1 << 30) - 1

# Where the data of an L1D line came from (stall attribution) / who allocated an L2 line.
FROM_L2 = 0
FROM_MEMORY = 1
BY_DEMAND = 0
BY_PREFETCH = 1


class ThreadParams(NamedTuple):
    """What a thread's run loop takes from its spec and the model's configuration (in ticks)."""

    l2base: int
    l2_hit: int
    memory: int
    window: int
    mib: int
    mispredict: int
    cpa: int
    slots: int
    prefetch: bool
    pf_d1: int
    pf_d2: int
    pf_table: int

    @classmethod
    def of(cls, spec: ThreadSpec, config: ModelConfig) -> ThreadParams:
        t = config.timing
        p = config.prefetch
        return cls(
            l2base=2 * config.sectors.l2_set_of(spec.tid),
            l2_hit=t.l2_hit * TICKS,
            memory=t.memory * TICKS,
            window=t.window,
            mib=t.l1_mib,
            mispredict=t.mispredict * TICKS,
            cpa=max(1, round(spec.cycles_per_access * TICKS)),
            slots=FLAG_SLOTS * max(1, len(spec.objects), spec.object_capacity),
            prefetch=p.enabled,
            pf_d1=p.l1_distance,
            pf_d2=p.l2_distance,
            pf_table=p.table,
        )


def _tally(flags: list[int]) -> Iterable[tuple[int, int]]:
    """``(flags, how many)`` of a list: counted per distinct value (a stream has few, and
    ``list.count`` is the fastest count there), by a Counter when there are many (an access to
    each of thousands of trace objects: counting each would be quadratic)."""
    distinct = set(flags)
    if len(distinct) <= 16:
        return [(fl, flags.count(fl)) for fl in distinct]
    return Counter(flags).items()


def _fill_state(source: int, fl: int) -> int:
    """An L1D demand fill's state word less its ready time (``ready << 4 | 15`` in run()'s clock)."""
    return (source << 2) + ((fl >> 1) & 3) + (DIRTY if fl & FL_WRITE else 0) - 15


class SimThread(ThreadTotals):
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
        params = ThreadParams.of(spec, config)
        self.l1 = SectorCache(L1_SETS, L1_WAYS, s.l1, s.enabled)
        self.l2 = cmg.l2
        self.l2base = params.l2base
        self.l2_hit = params.l2_hit
        self.memory = params.memory
        self.window = params.window
        self.mib = params.mib
        self.mispredict = params.mispredict
        self.cpa = params.cpa
        # Packed states of a demand fill, per access flags, less the ready time (see run()).
        # They depend on the flags' low bits only: one object's table, repeated per object.
        slots = params.slots
        objects = slots // FLAG_SLOTS
        low = range(FLAG_SLOTS)
        self.from_memory = [_fill_state(FROM_MEMORY, fl) for fl in low] * objects
        self.from_l2 = [_fill_state(FROM_L2, fl) for fl in low] * objects
        self.l2_demand = [(self.l2base | ((fl >> 1) & 1)) - 15 for fl in low] * objects
        self.l1_sector = [(fl >> 1) & 3 for fl in low] * objects
        self.l2_sector = [self.l2base | ((fl >> 1) & 1) for fl in low] * objects
        self.ipa = spec.inst_per_access
        self.prefetch = params.prefetch
        self.pf_d1 = params.pf_d1
        self.pf_d2 = params.pf_d2
        self.pf_table = params.pf_table
        # The prefetcher's table: the last ``table`` missed lines that started no stream, newest
        # first (a stream's start finds its line near that end), and the same lines as a set for
        # the per-miss test. A deque and a set cost a miss less than one insertion-ordered dict:
        # its evictions leave holes at the front that every ``next(iter())`` skips, and its
        # rebuilds come every few dozen misses.
        self.recent_newest: deque[int] = deque()
        self.recent_set: set[int] = set()
        # Outstanding misses, oldest first: when each one's data arrive, in run()'s clock (15 mod
        # 16), less 1 if they come from L2 (the stall's attribution; the comparisons with the
        # clock are unchanged), and the access count at which the window past it closes.
        self.q_ready: list[int] = []
        self.q_close: list[int] = []
        # Per access flags (so per data object): accesses, L1D demand refills, and the demand
        # misses that L2 sent to memory.
        self.fcount = [0] * slots
        self.demand_misses = [0] * slots
        self.memory_reads = [0] * slots
        self.gen: Chunks = spec.stream()
        self.it: Iterator[Record] = iter(())
        self.done = False
        self.passes = 0
        self.pass_start = 0
        self.cyc = 0
        self.acc = 0
        self.l1_refill_pf = 0
        self.l1_wb = 0
        self.l1_miss_wait = 0
        self.l2_other = 0  # L2 requests that are not L1D refills: L2 prefetches, write-backs
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

    @property
    def recent(self) -> list[int]:
        """The prefetcher's table, oldest line first."""
        return list(reversed(self.recent_newest))

    # ----------------------------------------------------------------- the hot loop
    def run(self, limit: int, next_limit: Callable[[int], int] | None = None) -> RegionMark | Idle | None:
        """Simulate until this core's clock reaches ``limit`` ticks, the stream ends, or it yields
        a :class:`~.stream.RegionMark` between two chunks: then run() returns the mark with every
        counter written back, exactly as it is after the accesses before the mark, and the caller
        applies it and calls run() again to go on (:meth:`.engine.Machine.run_until`). An
        :class:`~.stream.Idle` stops it so too: the caller moves the clock.

        ``next_limit``, if given, is called with the clock (ticks) each time it reaches ``limit``
        and returns the next limit, or 0 to stop there: a thread alone on its machine runs its
        quanta without leaving this loop (whose locals are costly to set up) at every one.

        The L1D hit and the L1D demand miss (through L2 to memory, with the caches' plain LRU
        fills and the sector rules' commonest fill) are inline, their counters kept in locals and
        added at the end: that is what a random, miss-bound stream spends its time on. Everything
        rarer is a method.

        Inside, the clock is ``clk = ticks << 4 | 15``, the unit of the packed states' ready
        field, so "the line's data have arrived" is ``state <= clk`` and a fill's state is
        ``clk`` plus a per-flags constant: no shifts per access. The outstanding misses are
        ``q_ready[h:]``/``q_close[h:]``; ``hc`` is the close of the oldest. Misses whose data
        have arrived leave the queue lazily: nothing can happen before the access count
        reaches ``hc`` (later closes are larger) or the next miss finds the buffers full, and
        both pop arrived entries first, so one comparison per access replaces the queue walk.
        """
        if self.done:
            return None
        l1 = self.l1
        tags = l1.tags
        sets = l1.sets
        mask = l1.mask
        l1_plain = l1.plain
        l1_counts = l1.live_counts
        l1_maxima = l1.maxima
        l2 = self.l2
        l2tags = l2.tags
        l2sets = l2.sets
        l2mask = l2.mask
        l2_plain = l2.plain
        l2_counts = l2.live_counts
        l2_maxima = l2.maxima
        from_memory = self.from_memory
        from_l2 = self.from_l2
        l2_demand = self.l2_demand
        l1_sector = self.l1_sector
        l2_sector = self.l2_sector
        memory = self.memory << 4
        l2_hit = self.l2_hit << 4
        fcount = self.fcount
        demand_misses = self.demand_misses
        qr = self.q_ready
        qc = self.q_close
        h = 0
        hc = qc[0] if qc else NEVER
        window = self.window
        mib = self.mib
        cpa = self.cpa << 4
        prefetch = self.prefetch
        recent = self.recent_newest
        recent_set = self.recent_set
        sampler = self.sampler
        pf_table = self.pf_table
        rare = self._rare
        clk = (self.cyc << 4) | 15
        limit = (limit << 4) | 15
        acc = self.acc
        clk0 = clk
        acc0 = acc
        fe0 = self.fe_stall
        wl1 = 0  # stalls on data from L2 (the others are on memory: derived at the end)
        # Counter deltas of the inline demand misses (times in clock units).
        l1_wb = 0
        l2_wb = 0
        miss_wait = 0
        # The flags of the demand misses served by memory / by L2, counted per flags in bulk.
        from_memory_flags: list[int] = []
        from_l2_flags: list[int] = []
        # Accesses per flags are counted per run of records with the same flags (a stream's flags
        # change far less often than every record): ``acc - run_start`` more for ``run_fl``.
        run_fl = 0
        run_start = acc
        mark: RegionMark | Idle | None = None
        it = self.it
        while True:
            for line, n, fl in it:
                if fl != run_fl:
                    fcount[run_fl] += acc - run_start
                    run_fl = fl
                    run_start = acc
                v = tags.get(line)
                if v is None:
                    if fl & FL_SPECIAL:
                        clk = rare(line, fl, v, clk, acc)
                    else:
                        # An L1D demand miss. With the L1D miss buffers full, wait for the oldest:
                        # the entries up to index ``last`` leave.
                        last = len(qr) - mib
                        while h <= last:
                            r = qr[h]
                            h += 1
                            if r > clk:
                                if r & 1:
                                    clk = r
                                else:
                                    wl1 += r + 1 - clk
                                    clk = r + 1
                        # Most demand misses of a miss-bound stream miss L2 too: a membership
                        # test is cheaper than get()'s call, and the rarer hit pays one index more.
                        if line not in l2tags:
                            ready = clk + memory
                            qr.append(ready)
                            from_memory_flags.append(fl)
                            state = ready + from_memory[fl]
                            state2 = ready + l2_demand[fl]
                            sec = l2_sector[fl]
                            s = l2sets[line & l2mask]
                            w = l2_plain[sec]
                            if w > 0:
                                s.append(line)
                                l2tags[line] = state2
                                if len(s) > w and l2tags.pop(s.pop(0)) & DIRTY:
                                    l2_wb += 1
                            elif (
                                w
                                and s
                                and l2_counts[line & l2mask][sec] >= l2_maxima[sec]
                                and l2tags[s[0]] & SECTOR_MASK == sec
                            ):
                                # At its maximum, the sector replaces its own LRU line: the set's LRU.
                                victim = s.pop(0)
                                s.append(line)
                                l2tags[line] = state2
                                if l2tags.pop(victim) & DIRTY:
                                    l2_wb += 1
                            elif l2.fill(line, state2)[1] & DIRTY:
                                l2_wb += 1
                        elif (v2 := l2tags[line]) <= clk:
                            l2.touch(line)
                            ready = clk + l2_hit
                            qr.append(ready - 1)
                            from_l2_flags.append(fl)
                            state = ready + from_l2[fl]
                        else:
                            ready = (self._l2_inflight(line, v2, clk >> 4, True) << 4) | 15
                            qr.append(ready)
                            demand_misses[fl] += 1
                            miss_wait += ready - clk
                            state = ready + from_memory[fl]
                        if sampler is not None and sampler.demand:
                            sampler.refill(self.tid, self.cpu, line, fl, clk >> 4, ready >> 4)
                        qc.append(acc + window)
                        hc = qc[h]
                        sec = l1_sector[fl]
                        s = sets[line & mask]
                        w = l1_plain[sec]
                        if w > 0:
                            s.append(line)
                            tags[line] = state
                            if len(s) > w:
                                victim = s.pop(0)
                                vstate = tags.pop(victim)
                                if vstate & DIRTY:
                                    l1_wb += 1
                                    self._l2_write(victim, vstate & SECTOR_MASK, clk >> 4)
                        elif (
                            w
                            and s
                            and l1_counts[line & mask][sec] >= l1_maxima[sec]
                            and tags[s[0]] & SECTOR_MASK == sec
                        ):
                            victim = s.pop(0)
                            s.append(line)
                            tags[line] = state
                            vstate = tags.pop(victim)
                            if vstate & DIRTY:
                                l1_wb += 1
                                self._l2_write(victim, vstate & SECTOR_MASK, clk >> 4)
                        else:
                            victim, vstate = l1.fill(line, state)
                            if vstate & DIRTY:
                                l1_wb += 1
                                self._l2_write(victim, vstate & SECTOR_MASK, clk >> 4)
                            if fl & FL_WRITE and line not in tags:
                                # The sector may not allocate: write through.
                                self._l2_write(line, sec, clk >> 4)
                        if prefetch:
                            # The stream prefetcher: two misses to consecutive lines start a stream.
                            if line - 1 in recent_set:
                                recent_set.remove(line - 1)
                                recent.remove(line - 1)
                                self._start_stream(line, fl, clk >> 4)
                            elif line not in recent_set:
                                recent_set.add(line)
                                recent.appendleft(line)
                                if len(recent) > pf_table:
                                    recent_set.remove(recent.pop())
                elif v <= clk:
                    s = sets[line & mask]
                    if s[-1] != line:
                        s.remove(line)
                        s.append(line)
                    if fl & 1:
                        tags[line] = v | 8
                else:
                    clk = rare(line, fl, v, clk, acc)
                    hc = qc[h] if len(qc) > h else NEVER
                acc += n
                clk += n * cpa
                if acc >= hc:
                    # Past the window of the oldest miss: arrived misses leave, the first one
                    # still outstanding (if its window is closed) stalls the core.
                    while len(qr) > h:
                        r = qr[h]
                        if r <= clk:
                            h += 1
                        elif acc < qc[h]:
                            break
                        else:
                            h += 1
                            if r & 1:
                                clk = r
                            else:
                                wl1 += r + 1 - clk
                                clk = r + 1
                    hc = qc[h] if len(qc) > h else NEVER
                if clk >= limit:
                    if next_limit is None:
                        break
                    limit = next_limit(clk >> 4)
                    if not limit:
                        break
                    limit = (limit << 4) | 15
            else:
                del qr[:h]
                del qc[:h]
                h = 0
                miss_wait += self._count_misses(from_memory_flags, from_l2_flags)
                chunk = next(self.gen, None)
                if chunk is None:
                    self.passes += 1
                    if self.loop and acc > self.pass_start:  # an empty stream must not spin forever
                        self.pass_start = acc
                        self.gen = self.spec.stream()
                        continue
                    self.done = True
                    # The thread ends when its last outstanding miss has arrived.
                    for r in qr:
                        if r > clk:
                            if r & 1:
                                clk = r
                            else:
                                wl1 += r + 1 - clk
                                clk = r + 1
                    qr.clear()
                    qc.clear()
                    break
                if chunk.__class__ is RegionMark or chunk.__class__ is Idle:  # a stop: the caller applies it
                    mark = chunk
                    break
                it = iter(chunk)
                continue
            break
        del qr[:h]
        del qc[:h]
        miss_wait += self._count_misses(from_memory_flags, from_l2_flags)
        fcount[run_fl] += acc - run_start
        self.it = it
        self.cyc = clk >> 4
        self.acc = acc
        # The clock moved by the issue cycles, the loop exits' penalties and the stalls.
        stalls = clk - clk0 - cpa * (acc - acc0) - ((self.fe_stall - fe0) << 4)
        self.wait_l1 += wl1 >> 4
        self.wait_l2 += (stalls - wl1) >> 4
        self.l1_wb += l1_wb
        self.l2_wb += l2_wb
        self.l1_miss_wait += miss_wait >> 4
        return mark

    def _count_misses(self, from_memory: list[int], from_l2: list[int]) -> int:
        """Add run()'s demand misses to the per-flags counts (a stream has few distinct flags, so
        counting each in bulk beats an increment per miss) and empty the lists; returns their
        miss wait (clock units)."""
        waited = len(from_memory) * (self.memory << 4) + len(from_l2) * (self.l2_hit << 4)
        demand_misses = self.demand_misses
        memory_reads = self.memory_reads
        for fl, k in _tally(from_memory):
            demand_misses[fl] += k
            memory_reads[fl] += k
        for fl, k in _tally(from_l2):
            demand_misses[fl] += k
        from_memory.clear()
        from_l2.clear()
        return waited

    # ----------------------------------------------------------------- rare paths
    def _rare(self, line: int, fl: int, v: int | None, clk: int, acc: int) -> int:
        """A special record, or an access whose tag is in L1D but is not a plain hit: a prefetched
        line used for the first time, and/or data still in flight. Takes and returns the clock in
        :meth:`run`'s unit."""
        if v is None:
            count = -1 - line
            if fl & FL_EXIT:
                self.exits += count
                self.fe_stall += count * self.mispredict
                return clk + ((count * self.mispredict) << 4)
            self.ifetch += count
            return clk
        l1 = self.l1
        tags = l1.tags
        if v >= PF_MARK:
            v -= PF_MARK
            tags[line] = v
            if self.prefetch:
                self._advance(line, fl, clk >> 4)
        l1.touch(line)
        if fl & FL_WRITE:
            tags[line] = v | DIRTY
        if v > clk:
            ready = v | 15
            self.q_ready.append(ready if (v >> 2) & 1 == FROM_MEMORY else ready - 1)
            self.q_close.append(acc + self.window)
        return clk

    def _l2_inflight(self, line: int, v2: int, cyc: int, demand: bool) -> int:
        """A request meets a refill of the same line still on its way from memory (refill buffer match).

        The hardware counts the meeting as another refill (errata 1.0), and so does the model:
        that is what the errata-corrected formulas subtract again.
        """
        self.cmg.l2.touch(line)
        allocated_by = (v2 >> 2) & 1
        if demand and allocated_by == BY_PREFETCH:
            self.swap_dm += 1  # counted in l2_refill_dm too
        elif not demand and allocated_by == BY_DEMAND:
            self.mibmch_prf += 1
            self.l2_refill_pf += 1
        return max(v2 >> 4, cyc + self.l2_hit)

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
    def _start_stream(self, line: int, fl: int, cyc: int) -> None:
        """Misses to ``line - 1`` and ``line``: prefetch the stream's distance into L1D and L2."""
        l1 = self.l1.tags
        l2 = self.l2
        l2tags = l2.tags
        for t in range(line + 1, line + self.pf_d1 + 1):
            if t not in l1:
                self._prefetch_l1(t, fl, cyc)
        # Then up to l2_distance - l1_distance prefetches into L2 only.
        state = ((cyc + self.memory) << 4) | (BY_PREFETCH << 2) | self.l2base | ((fl >> 1) & 1)
        issued = 0
        written = 0
        for t in range(line + self.pf_d1 + 1, line + self.pf_d2 + 1):
            if t in l2tags or t in l1:
                continue
            issued += 1
            if l2.fill(t, state)[1] & DIRTY:
                written += 1
        self.l2_other += issued
        self.l2_refill_pf += issued
        self.l2_wb += written

    def _advance(self, line: int, fl: int, cyc: int) -> None:
        """A prefetched line was used: keep the stream the same distance ahead (every line of a
        prefetched stream comes here once, so the L2 prefetch is inline)."""
        l1 = self.l1.tags
        t = line + self.pf_d1
        if t not in l1:
            self._prefetch_l1(t, fl, cyc)
        if self.pf_d2 > self.pf_d1:
            t = line + self.pf_d2
            l2 = self.l2
            if t not in l2.tags and t not in l1:
                # A prefetch into L2 only, further ahead than the L1D prefetch.
                self.l2_other += 1
                self.l2_refill_pf += 1
                state = ((cyc + self.memory) << 4) | (BY_PREFETCH << 2) | self.l2base | ((fl >> 1) & 1)
                if l2.fill(t, state)[1] & DIRTY:
                    self.l2_wb += 1

    def _prefetch_l1(self, line: int, fl: int, cyc: int) -> None:
        """A prefetch into L1D: an L1D refill (HWPRF) that reads the line from L2 (or memory)."""
        sec = (fl >> 1) & 3
        self.l1_refill_pf += 1
        l2 = self.l2
        v2 = l2.tags.get(line)
        if v2 is None:
            ready = cyc + self.memory
            source = FROM_MEMORY
            self.l2_refill_pf += 1
            if l2.fill(line, (ready << 4) | (BY_PREFETCH << 2) | self.l2base | (sec & 1))[1] & DIRTY:
                self.l2_wb += 1
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
            sampler.refill(self.tid, self.cpu, line, fl, cyc, ready)
        victim, vstate = self.l1.fill(line, PF_MARK | (ready << 4) | (source << 2) | sec)
        if vstate & DIRTY:
            self.l1_wb += 1
            self._l2_write(victim, vstate & SECTOR_MASK, cyc)

    def set_sectors(self, sectors: SectorConfig) -> None:
        self.l1.set_maxima(sectors.l1, sectors.enabled)
