"""The counting thread: rotates event groups over every unit, slice after slice, until stopped.

The :class:`Sampler` owns the loop every rotation mode shares: wake at the next deadline of the
source's clock, end the slice, follow the units as they come and go, publish an immutable
``Slice`` through a callback, and keep its own CPU within the overhead budget. Which groups count
when is a strategy's (:mod:`sectormon.rotation.sync`: lock-step slices;
:mod:`sectormon.rotation.kernel`: the kernel's multiplexer); ``--proxy`` stand-ins, units skipped
for want of fds and the facts about processes are collaborators of their own. It knows nothing
about Textual, metrics or files.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sectormon.data.readings import Row, Slice, Unit, unit_key
from sectormon.errors import SectormonError
from sectormon.rotation.control import CountingControl
from sectormon.rotation.counters import OpenGroup, OpenUnits, UnitGroups, is_gone
from sectormon.rotation.fd_shortage import FdShortage
from sectormon.rotation.inherited import InheritedRows
from sectormon.rotation.kernel import KernelRotation
from sectormon.rotation.markers import MarkerService
from sectormon.rotation.plan import (
    KERNEL,
    KERNEL_READ_EVERY,
    SYNC,
    Deadlines,
    OverheadBudget,
    PlannedGroup,
    Rotation,
    RotationPlan,
)
from sectormon.rotation.process_facts import ProcessFacts
from sectormon.rotation.proxy_roles import ProxyRoles
from sectormon.rotation.strategy import RotationStrategy
from sectormon.rotation.sync import SyncRotation
from sectormon.sources.base import Source

SliceCallback = Callable[[Slice], None]
WarningCallback = Callable[[str], None]
RotationCallback = Callable[[Rotation], None]


class Sampler:
    """Runs the rotation on a source until stopped, the target finishes, or a limit is reached."""

    def __init__(
        self,
        source: Source,
        plan: RotationPlan,
        *,
        timeslice: float,
        on_slice: SliceCallback,
        on_warning: WarningCallback | None = None,
        cmg_enabled: bool = True,
        rotation: Rotation | None = None,
        max_overhead: float | None = None,
        may_switch: bool = False,
        max_timeslice: float | None = None,
        on_rotation: RotationCallback | None = None,
        proxy: int | None = None,
        on_counting: Callable[[], None] | None = None,
        markers: MarkerService | None = None,
        control: CountingControl | None = None,
    ) -> None:
        """``rotation``: how to rotate (sync at ``timeslice`` when not given). ``max_overhead``:
        the budget, a fraction of one core (None: none); over it the sampler switches sync to
        kernel rotation when ``may_switch`` (``--rotation auto``), else doubles the slice up to
        ``max_timeslice``, and says so through ``on_warning`` and ``on_rotation``. ``proxy``:
        per CMG, the number of units that open the rotating groups (:mod:`sectormon.metrics.proxy`; the
        others open only the always-on group); ``None``: every unit opens every group.
        ``on_counting``: called once :meth:`run` has opened and enabled the units there at its
        start (a unit that cannot be opened then ends the run before it, with nothing counted).
        ``markers``: the launched program's marked regions (:mod:`sectormon.rotation.markers`):
        their threads are handed their groups, and each slice carries the region table when it
        changed.
        ``control``: counting switched on and off from outside (``--control``, ``--delay``),
        applied on this thread whenever the source's wait is woken for it."""
        if timeslice <= 0:
            raise SectormonError(f"--timeslice must be > 0 (got {timeslice})")
        self._source = source
        self._plan = plan
        self.rotation = rotation or Rotation(SYNC, timeslice, "lock-step")
        self._budget = OverheadBudget(max_overhead) if max_overhead is not None else None
        self._may_switch = may_switch
        self._max_timeslice = max_timeslice
        self._budget_warned = False
        self._on_rotation = on_rotation or (lambda _rotation: None)
        self._on_counting = on_counting
        self._on_slice = on_slice
        self._on_warning = on_warning or (lambda _msg: None)
        self._cmg_enabled = cmg_enabled and any(g.cmg_events for g in plan.groups)
        self._units = OpenUnits(plan, gate=control.gate if control is not None else None)
        self._last_alive: tuple[Unit, ...] | None = None  # the alive units of the last poll
        self._fds = FdShortage()
        # Found threads' counts out of their family's inherited rows. Under a proxy the rotating
        # groups are opened on stand-ins only and never inherited: a stand-in's inherited groups
        # would count the threads it started, which are units of their own.
        self._inherited = InheritedRows(
            frozenset(g.name for g in plan.groups) if proxy is not None else frozenset()
        )
        self._proxy = (
            ProxyRoles(proxy, source, plan, self._units, self._on_warning) if proxy is not None else None
        )
        self._processes = ProcessFacts(source)
        self._markers = markers
        self._strategy = self._strategy_for(self.rotation)
        self._counting = False  # past the first poll: a unit that cannot be opened no longer stops the run
        self._stop = threading.Event()
        self._control = control
        if control is not None:
            control.attach(wake=source.wake, stop=self.stop)
        self._cpu_start = 0.0
        self._wall_start = 0.0
        self._waiting_cpu = 0.0
        self.slices = 0

    def stop(self) -> None:
        """Ask the loop to end after the current slice (from any thread)."""
        self._stop.set()

    def open_units(self) -> None:
        """Poll the source and open the groups of the units there now, before :meth:`run` (which
        polls again): a proxy session's header names the stand-ins this chooses."""
        self._refresh_units()

    def counted_units(self) -> tuple[Unit, ...]:
        """The per-PE units open now (threads or CPUs, not CMG units)."""
        return self._units.counted_units()

    def stand_ins(self) -> tuple[Unit, ...]:
        """The units that count the rotating groups for their CMG (empty without ``proxy``)."""
        return self._proxy.stand_ins() if self._proxy is not None else ()

    def _strategy_for(self, rotation: Rotation) -> RotationStrategy:
        if rotation.mode == KERNEL:
            return KernelRotation(self._units, self._inherited.settle)
        return SyncRotation(self._units, self._plan, self._inherited.settle)

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """The rotation loop; returns when stopped or when the target has finished."""
        self._cpu_start = time.thread_time()
        self._wall_start = time.monotonic()
        self._waiting_cpu = 0.0
        # A source with a clock of its own runs its model inside wait_until: that CPU is not
        # sectormon's. A wall-clock source sleeps there, and a CPU clock read right after a sleep
        # is slow (docs/perf-tuning.md), so its wait is not bracketed.
        bracket_wait = not self._source.capabilities.wall_clock
        deadlines = Deadlines(self._tick())
        self._refresh_units()
        self._counting = True
        if self._proxy is not None:
            self._proxy.start_review()
        strategy = self._strategy
        slice_start = self._source.now()
        strategy.begin()
        try:
            if self._on_counting is not None:
                self._on_counting()
            while True:
                switched = self._wait(deadlines.next_deadline(self._source.now()), bracket_wait)
                finished = self._source.finished()
                stopping = self._stop.is_set() or finished
                now = self._source.now()
                if not (switched or strategy.slice_due(now - slice_start, self.rotation.timeslice, stopping)):
                    # Between two reads: follow the units only.
                    ended = self._refresh_units()
                    strategy.hold(ended)
                    self._close_ended(ended)
                    strategy.units_opened()
                    continue
                end = strategy.end_slice(stopping)
                if not stopping and self._proxy is not None:
                    self._proxy.review(
                        now, strategy.running, timeslice=self.rotation.timeslice, tick=self._tick()
                    )
                # Poll only after reading: units opened now were not counting in this slice; they
                # start with the group running now. When stopping, every unit ends here.
                ended = () if stopping else self._refresh_units(start=strategy.running)
                strategy.units_opened()
                self._close_ended(ended)
                if stopping:
                    ended = tuple(self._units.states)
                overhead = self._own_cpu(now)
                processes, unit_processes, target_cpu, bindings = self._processes.take(now, stopping)
                record = Slice(
                    t=now,
                    index=self.slices,
                    duration=self._duration(slice_start, now),
                    group=end.group,
                    rows=self._held_rows_emptied(end.rows),
                    overhead_s=overhead,
                    ended=end.ended + ended,
                    processes=processes,
                    unit_processes=unit_processes,
                    target_cpu_s=None if target_cpu is None else target_cpu.total,
                    target_ended_system_s=0.0 if target_cpu is None else target_cpu.ended_system,
                    regions=(
                        self._markers.read_changed()
                        if self._markers is not None
                        else self._source.read_regions()
                    ),
                    bindings=bindings,
                )
                slice_start = now
                self.slices += 1
                self._on_slice(record)
                if stopping:
                    return
                changed = self._over_budget(now, overhead)
                if changed is not None:
                    if changed.mode != strategy.mode:
                        strategy = self._strategy = self._strategy_for(changed)
                        strategy.begin()  # the group running now stays on; the others join it
                    deadlines = Deadlines(self._tick())
        finally:
            self._units.close_all()

    def _wait(self, deadline: float, bracket_wait: bool) -> bool:
        """Wait for ``deadline``; a wait woken earlier (:meth:`Source.wake`) does what it was
        woken for (a marking thread's handshake, a control command) and waits on, unless the run
        is stopping. True when control switched all counting on or off meanwhile: the slice ends
        there, so none straddles the switch."""
        while True:
            if bracket_wait:
                before_wait = time.thread_time()
                self._source.wait_until(deadline)
                self._waiting_cpu += time.thread_time() - before_wait
            else:
                self._source.wait_until(deadline)
            woken = False  # for a handshake or a command: then wait on for the deadline
            if self._markers is not None and self._markers.pending:
                self._markers.serve(self._marker_groups)
                woken = True
            if self._control is not None and self._control.posted:
                if self._control.apply(self._source.now()):
                    return True
                woken = True
            if not woken or self._source.now() >= deadline or self._stop.is_set():
                return False

    def _held_rows_emptied(self, rows: tuple[Row, ...]) -> tuple[Row, ...]:
        """``rows`` with each reading of a group control held off for the whole slice made an
        empty one: the unit was there and the group did not count, which the engine cannot tell
        from a thread that ran no instruction of it (a zero with full coverage) from its times."""
        control = self._control
        if control is None or not control.holds_some:
            return rows
        return tuple(
            row if row.time_enabled or control.lets(row.group) else row._replace(names=(), values=())
            for row in rows
        )

    def _duration(self, start: float, end: float) -> float:
        """A slice's seconds: all of it, or under control the part in which something counted
        (a span with counting off is no one's present time, see :mod:`sectormon.rotation.control`)."""
        if self._control is None:
            return max(0.0, end - start)
        return self._control.counted(start, end)

    def _tick(self) -> float:
        """Seconds between two wake-ups (the strategy's, for the rotation's slice)."""
        return self._strategy.tick(self.rotation.timeslice)

    def _over_budget(self, now: float, overhead: float) -> Rotation | None:
        """The rotation to change to when the last window's cost went over the budget."""
        if self._budget is None:
            return None
        share = self._budget.observe(now, overhead)
        if share is None:
            return None
        old = self.rotation
        limit = 100 * self._budget.limit
        cost = f"sectormon used {100 * share:.1f} % of a core, over --max-overhead {limit:g} %"
        if old.mode == SYNC and self._may_switch:
            new = Rotation(
                KERNEL,
                max(old.timeslice, KERNEL_READ_EVERY),
                f"{cost}: switched from sync to kernel rotation (no ioctl per slice)",
            )
        else:
            longest = self._max_timeslice if self._max_timeslice is not None else old.timeslice
            longer = min(2 * old.timeslice, longest)
            if longer <= old.timeslice:
                if not self._budget_warned:
                    self._budget_warned = True
                    self._on_warning(
                        f"{cost}, and the {old.mode} rotation's slice is already {old.timeslice:g} s, "
                        "the --interval (fix: a longer --interval, fewer --groups, or --rotation auto)"
                    )
                return None
            new = Rotation(
                old.mode, longer, f"{cost}: slice lengthened from {old.timeslice:g} s to {longer:g} s"
            )
        self.rotation = new
        self._budget.restart()
        self._on_warning(new.reason)
        self._on_rotation(new)
        return new

    def _own_cpu(self, source_now: float) -> float:
        """The sampler's own CPU seconds, on the source's time scale.

        CPU spent inside ``wait_until`` is the source's (a simulated A64FX runs its model there), not
        sectormon's overhead. On a clock of the source's own the figure is rescaled so that dividing
        it by source time still gives the fraction of one core used per wall-clock second.
        """
        own = time.thread_time() - self._cpu_start - self._waiting_cpu
        if self._source.capabilities.wall_clock:
            return own
        wall = time.monotonic() - self._wall_start
        return own * (source_now / wall) if wall > 0 else 0.0

    # -- units ---------------------------------------------------------------------------------

    def _refresh_units(self, start: PlannedGroup | None = None) -> tuple[str, ...]:
        """Poll the source; open groups on new units, note ended ones (already read, closed later).

        ``start``: the group running now, enabled on the units opened by this poll.
        """
        opened: list[UnitGroups] = []
        update = self._source.poll_units()
        for message in update.warnings:
            self._on_warning(message)
        self._processes.seen(update.processes)
        self._processes.bound(update.bindings)
        states = self._units.states
        # A source may hand back the very same tuple when nothing changed (the thread tracker does,
        # at nearly every slice): each of its units was opened then, or was found gone.
        promoted: list[UnitGroups] = []
        if update.alive is not self._last_alive:
            self._last_alive = update.alive
            if self._proxy is not None:
                promoted = self._proxy.follow(update.alive)
            for unit in update.alive:
                state = states.get(unit.key)
                if state is None:
                    if unit.key not in self._fds:
                        self._open_unit(unit, opened)
                elif state.unit is not unit and state.unit != unit:  # `is`: the tracker reuses Units
                    state.unit = unit  # binding changed: same groups, new core/CMG attribution
                    # (the member lists hold the state, not the unit: they stay valid)
        if self._cmg_enabled:
            for unit in self._source.cmg_units():
                if unit.key not in states and unit.key not in self._fds:
                    self._open_unit(unit, opened)
        self._processes.opened(s.unit for s in opened)
        if start is not None:
            self._units.enable_in((*opened, *promoted), start)
        if self._plan.always is not None:
            self._units.enable_in(opened, self._plan.always)
        return tuple(key for key in update.ended if key in states)

    def _open_unit(self, unit: Unit, opened: list[UnitGroups]) -> None:
        proxy = self._proxy
        if unit.kind == "thread" and not unit.inherit and proxy is None:
            adopted = self._units.adopt(unit.key)
            if adopted is not None:  # a marking thread found now: its groups count it already
                adopted.unit = unit
                self._units.add(adopted)
                self._inherited.track(unit)
                opened.append(adopted)
                return
        state = UnitGroups(unit)
        cmg = unit.kind == "cmg"
        for group in proxy.groups_of(unit) if proxy is not None else self._plan.all_groups():
            events = group.cmg_events if cmg else group.pe_events
            if not events:
                continue
            try:
                handle = self._source.open_group(
                    proxy.opened_on(unit, group) if proxy is not None else unit, events
                )
            except SectormonError as exc:
                for counter in state.groups.values():
                    counter.group.close()
                if is_gone(exc):
                    return
                if exc.out_of_fds and self._counting:
                    warning = self._fds.skip(unit, exc)
                    if warning is not None:
                        self._on_warning(warning)
                    return
                raise
            state.groups[group.name] = self._units.open_group(handle, group.name, cmg=cmg)
        self._units.add(state)
        self._inherited.track(unit)
        opened.append(state)

    def _marker_groups(self, tid: int) -> tuple[OpenGroup, ...]:
        """The groups a marking thread reads at its markers: the ones its unit counts with, or
        (a thread counted by inherited groups, or not found yet) groups of its own, opened
        without ``inherit`` and switched with the rotation from now on."""
        key = unit_key("thread", tid)
        state = self._units.states.get(key)
        if state is not None and not state.unit.inherit:
            return tuple(state.groups.values())
        state = self._units.marker_only.get(key)
        if state is None:
            state = UnitGroups(Unit("thread", tid))
            for group in self._plan.all_groups():
                if group.pe_events:
                    try:
                        handle = self._source.open_group(state.unit, group.pe_events)
                    except SectormonError:
                        for counter in state.groups.values():
                            counter.group.close()
                        raise
                    state.groups[group.name] = self._units.open_group(handle, group.name, cmg=False)
            self._units.add_marker_only(state)
            running = self._strategy.running
            if running is not None:
                self._units.enable_in((state,), running)
            if self._plan.always is not None:
                self._units.enable_in((state,), self._plan.always)
            self._strategy.units_opened()
        return tuple(state.groups.values())

    def _close_ended(self, ended: tuple[str, ...]) -> None:
        if ended:
            self._fds.fds_freed()
        for key in ended:
            state = self._units.remove(key)
            if state is not None:
                self._inherited.forget(key)
                for counter in state.groups.values():
                    counter.group.close()
