"""The simulated machine: threads bound to cores and CMGs, advanced together in small quanta.

A :class:`Machine` builds one thread per :class:`~.stream.ThreadSpec` on the core chosen by
:func:`.native.choose` (the compiled ``_core.c`` where it is built, else the Python reference in
:mod:`.thread`), one :class:`~.counters.Cmg` per CMG its threads use, and interleaves the threads
quantum by quantum so that they share each CMG's L2 as the hardware's cores do. A sector change
asked for from another thread waits for the next quantum boundary.

A traced program's marker call (:class:`~.stream.RegionMark`) stops its thread's run loop where it
stands in the stream: the machine hands it to ``on_mark`` with the thread's counters exactly as they
are after the accesses before it, then runs the thread on. The cores test one class per chunk for it,
so a stream without marks runs as before. A running program's waiting thread (:class:`~.stream.Idle`)
stops it so too: the machine moves that thread's clock to where this run goes (``run_until``'s
target), without accesses, and runs the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from sectormon.sim import native
from sectormon.sim.cache import SectorCache
from sectormon.sim.config import CPUS_PER_CMG, L1_SETS, L1_WAYS, L2_SETS, TICKS, ModelConfig, SectorConfig
from sectormon.sim.counters import Cmg
from sectormon.sim.stream import FL_SPECIAL, Idle, RegionMark, ThreadSpec
from sectormon.sim.thread import SimThread, ThreadParams


def _cache(core: str, nsets: int, ways: int, maxima: tuple[int, ...], enabled: bool) -> SectorCache:
    """A sector cache of the chosen core (the compiled one keeps the same rules and interface)."""
    if core == "c" and native.compiled is not None:
        # Only CoreThread's loop touches it, through the interface the two classes share.
        return cast(SectorCache, native.compiled.Cache(nsets, ways, maxima, enabled))
    return SectorCache(nsets, ways, maxima, enabled)


def _cmg(core: str, ident: int, config: ModelConfig) -> Cmg:
    s = config.sectors
    return Cmg(ident, _cache(core, L2_SETS, config.l2_ways, s.l2, s.enabled), config.timing.memory)


if native.compiled is not None:
    from sectormon.sim._core import Cache as _CompiledCache
    from sectormon.sim._core import Thread as _CompiledThread

    class CoreThread(_CompiledThread, SimThread):
        """A SimThread whose state and run loop are the compiled core's (``_core.c``): the same
        counters and derived totals, several times faster on miss-bound streams."""

        def __init__(self, spec: ThreadSpec, cmg: Cmg, config: ModelConfig, loop: bool) -> None:
            s = config.sectors
            l1 = _CompiledCache(L1_SETS, L1_WAYS, s.l1, s.enabled)
            l2 = cast(_CompiledCache, cmg.l2)  # a Cmg of the same machine: the compiled core's cache
            params = ThreadParams.of(spec, config)
            _CompiledThread.__init__(self, spec, l1, l2, spec.tid, spec.cpu, *params, loop)
            self.cmg = cmg
            self.loop = loop
            self.ipa = spec.inst_per_access

        # The derived totals over the per-flags counters, summed in C: reading them through the
        # counters' copies cost every read a list per counter of every object's 128 slots.
        def _demand_total(self) -> int:
            return self.demand_total

        def _memory_total(self) -> int:
            return self.memory_total

        def _low_total(self, wanted: Callable[[int], bool]) -> int:
            low = self.low_fcount()
            return sum(total for fl, total in enumerate(low) if total and not fl & FL_SPECIAL and wanted(fl))


def _thread(core: str, spec: ThreadSpec, cmg: Cmg, config: ModelConfig, loop: bool) -> SimThread:
    if core == "c" and native.compiled is not None:
        return CoreThread(spec, cmg, config, loop)
    return SimThread(spec, cmg, config, loop)


class Machine:
    """All simulated threads and CMGs, advanced together in small interleaved quanta.

    ``run_until`` is the only method that moves the model. A sector change requested from another
    thread (:meth:`request_sectors`) is applied between two quanta, never in the middle of one.
    ``core`` picks the compiled core or the Python model (default: :func:`native.choose`).
    ``on_mark`` receives every :class:`~.stream.RegionMark` a thread's stream yields, with that
    thread, at the mark (none set: marks are skipped).
    """

    def __init__(
        self, config: ModelConfig, specs: list[ThreadSpec], loop: bool = False, core: str | None = None
    ) -> None:
        self.config = config
        self.core = native.choose(core)
        self.cmgs: dict[int, Cmg] = {}
        self.threads: list[SimThread] = []
        self.loop = loop
        self.tick = 0
        for spec in specs:
            self.add_thread(spec)
        self._pending: SectorConfig | None = None
        self.on_mark: Callable[[SimThread, RegionMark], None] | None = None

    def add_thread(self, spec: ThreadSpec) -> SimThread:
        """A thread on ``spec.cpu`` that starts now (a traced program's new thread joins the
        machine so: its clock starts at the machine's, its CMG is made when it is the first)."""
        c = spec.cpu // CPUS_PER_CMG
        if c not in self.cmgs:
            self.cmgs[c] = _cmg(self.core, c, self.config)
            self.cmgs[c].tick = self.tick
        thread = _thread(self.core, spec, self.cmgs[c], self.config, self.loop)
        thread.cyc = self.tick
        self.cmgs[c].threads.append(thread)
        self.threads.append(thread)
        return thread

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
        if len(threads) == 1:
            self._run_alone(threads[0], target, quantum)
        while self.tick < target and not self.finished():
            if self._pending is not None:
                self.apply_sectors(self._pending)
                self._pending = None
            step = min(target, self.tick + quantum)
            for t in threads:
                if not t.done and t.cyc < step:
                    while (mark := t.run(step)) is not None:
                        if isinstance(mark, Idle):
                            t.cyc = target  # it sits the rest of this run out
                            break
                        self._mark(t, mark)
            self.tick = step
            for c in self.cmgs.values():
                c.tick = step
        if self.finished():
            self.tick = max([self.tick] + [t.cyc for t in threads])
            for c in self.cmgs.values():
                c.tick = self.tick

    def _run_alone(self, thread: SimThread, target: int, quantum: int) -> None:
        """The quanta of run_until for a single thread, the same boundaries (a requested sector
        change applies at the first one reached, a quantum the thread's clock has passed is
        skipped) without returning from :meth:`SimThread.run` at each boundary."""
        step = self.tick

        def next_step(cyc: int) -> int:
            nonlocal step
            self.tick = step
            while self.tick < target and self._pending is None:
                step = min(target, self.tick + quantum)
                if cyc < step:
                    return step
                self.tick = step
            return 0

        while self.tick < target and not thread.done:
            if self._pending is not None:
                self.apply_sectors(self._pending)
                self._pending = None
            step = min(target, self.tick + quantum)
            if thread.cyc < step:
                # After a mark, ``step`` is the limit next_step last gave: the run goes on to it.
                while (mark := thread.run(step, next_step)) is not None:
                    if isinstance(mark, Idle):
                        thread.cyc = target
                        break
                    self._mark(thread, mark)
            self.tick = step
            thread.cmg.tick = step

    def _mark(self, thread: SimThread, mark: RegionMark) -> None:
        if self.on_mark is not None:
            self.on_mark(thread, mark)

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
