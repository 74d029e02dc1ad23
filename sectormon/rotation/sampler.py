"""The sampling thread: rotates event groups over every unit, in lock-step timeslices (sync) or
by letting the kernel's multiplexer rotate them (kernel), within an overhead budget.

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from sectormon.data.readings import U64, ProcessInfo, Row, Slice, Unit
from sectormon.errors import SectormonError
from sectormon.host.cpu_time import TargetCpu
from sectormon.perf.group import GroupValues
from sectormon.rotation.inherited import InheritedRows
from sectormon.rotation.plan import (
    ALWAYS,
    KERNEL,
    KERNEL_POLL_EVERY,
    KERNEL_READ_EVERY,
    SYNC,
    Deadlines,
    OverheadBudget,
    PlannedGroup,
    Rotation,
    RotationPlan,
)
from sectormon.rotation.stand_ins import StandIns
from sectormon.sources.base import CounterGroup, Source

TARGET_CPU_EVERY = 0.25
"""Seconds of source time between reads of the kernel's CPU time of the target (one /proc read per
process; thread coverage is computed between reads, so they need not follow every slice)."""

STAND_IN_WINDOW = 1.0
"""Seconds of source time (at least two slices) over which a proxy stand-in's run time is judged:
one that ran nearly nothing in a window while another unit of its CMG ran hands its role over
(:meth:`sectormon.rotation.stand_ins.StandIns.review`), at most once per window."""

SliceCallback = Callable[[Slice], None]
WarningCallback = Callable[[str], None]
RotationCallback = Callable[[Rotation], None]


@dataclass(slots=True)
class _Counter:
    """One open group on one unit plus its previous cumulative read (readings are deltas)."""

    group: CounterGroup
    names: tuple[str, ...]
    last: GroupValues | None = None
    on: bool = False  # enabled: kernel rotation enables what is not on yet, once

    def delta(self, now: GroupValues) -> tuple[list[int], int, int]:
        """Values and times since the previous read; ``% U64`` survives a counter wrap."""
        prev = self.last
        self.last = now
        if prev is None:
            return list(now.values), now.time_enabled, now.time_running
        return (
            [(v - p) % U64 for v, p in zip(now.values, prev.values, strict=True)],
            (now.time_enabled - prev.time_enabled) % U64,
            (now.time_running - prev.time_running) % U64,
        )


@dataclass(slots=True)
class _UnitState:
    unit: Unit
    counters: dict[str, _Counter] = field(default_factory=dict)


@dataclass(slots=True)
class _Members:
    """One group's part of every unit, in unit order: what a timeslice boundary walks.

    Built once per change of the unit set (rare) instead of looking each unit's counter up
    three times per timeslice. ``states[i]`` owns ``counters[i]``, or has no counter of the
    group when ``counters[i]`` is None (it still gets an empty reading).
    """

    keys: tuple[str, ...]
    states: tuple[_UnitState, ...]
    counters: tuple[_Counter | None, ...]


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
    ) -> None:
        """``rotation``: how to rotate (sync at ``timeslice`` when not given). ``max_overhead``:
        the budget, a fraction of one core (None: none); over it the sampler switches sync to
        kernel rotation when ``may_switch`` (``--rotation auto``), else doubles the slice up to
        ``max_timeslice``, and says so through ``on_warning`` and ``on_rotation``. ``proxy``:
        per CMG, the number of units that open the rotating groups (:mod:`sectormon.metrics.proxy`; the
        others open only the always-on group); ``None``: every unit opens every group.
        ``on_counting``: called once :meth:`run` has opened and enabled the units there at its
        start (a unit that cannot be opened then ends the run before it, with nothing counted)."""
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
        # One names tuple per group and kind of unit: rows of a layout share it (see Row).
        self._names: dict[tuple[str, bool], tuple[str, ...]] = {
            (g.name, cmg): tuple(e.name for e in (g.cmg_events if cmg else g.pe_events))
            for g in plan.all_groups()
            for cmg in (False, True)
        }
        self._units: dict[str, _UnitState] = {}
        self._members: dict[str, _Members] = {}  # per group, built from _units when they change
        self._all_on = False  # every counter of every unit enabled (kernel rotation)
        self._last_alive: tuple[Unit, ...] | None = None  # the alive units of the last poll
        self._skipped_for_fds: set[str] = set()  # new units left uncounted: no fd left (see _skip_for_fds)
        self._fds_warned = False
        # Found threads' counts out of their family's inherited rows. Under a proxy the rotating
        # groups are opened on stand-ins only and never inherited: a stand-in's inherited groups
        # would count the threads it started, which are units of their own.
        self._inherited = InheritedRows(
            frozenset(g.name for g in plan.groups) if proxy is not None else frozenset()
        )
        self._counting = False  # past the first poll: a unit that cannot be opened no longer stops the run
        self._new_processes: list[ProcessInfo] = []  # since the last slice: processes first seen
        self._new_unit_processes: list[tuple[str, int]] = []  # ... and the pid of each thread opened
        self._target_cpu_at = -TARGET_CPU_EVERY  # source time of the last kernel CPU reading
        self._stand_ins = StandIns(proxy) if proxy is not None else None
        self._review_at = 0.0  # source time of the last review of the stand-ins' run times
        self._cpu_then: dict[str, float] = {}  # each thread's CPU seconds at that review
        self._stop = threading.Event()
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
        return tuple(state.unit for state in self._units.values() if state.unit.kind != "cmg")

    def stand_ins(self) -> tuple[Unit, ...]:
        """The units that count the rotating groups for their CMG (empty without ``proxy``)."""
        return self._stand_ins.units() if self._stand_ins is not None else ()

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """The rotation loop; returns when stopped or when the target has finished."""
        self._cpu_start = time.thread_time()
        self._wall_start = time.monotonic()
        self._waiting_cpu = 0.0
        # A simulated source runs its model inside wait_until: that CPU is not sectormon's. perf
        # sleeps there, and a CPU clock read right after a sleep is slow (docs/perf-tuning.md),
        # so its wait is not bracketed.
        bracket_wait = self._source.kind != "perf"
        deadlines = Deadlines(self._tick())
        held_rows: tuple[Row, ...] = ()  # kernel rotation: rows of units that ended between reads
        held_ended: tuple[str, ...] = ()
        rotation = 0
        self._refresh_units()
        self._counting = True
        self._start_review()
        kernel = self.rotation.mode == KERNEL
        current = None if kernel else self._plan.group_at(rotation)
        always = self._plan.always
        slice_start = self._source.now()
        if kernel:
            self._enable_all()
        else:
            self._enable(always)
            self._enable(current)
        try:
            if self._on_counting is not None:
                self._on_counting()
            while True:
                deadline = deadlines.next_deadline(self._source.now())
                if bracket_wait:
                    before_wait = time.thread_time()
                    self._source.wait_until(deadline)
                    self._waiting_cpu += time.thread_time() - before_wait
                else:
                    self._source.wait_until(deadline)
                finished = self._source.finished()
                stopping = self._stop.is_set() or finished
                now = self._source.now()
                if kernel:
                    if not stopping and now - slice_start < self.rotation.timeslice - 0.5 * self._tick():
                        # Between two reads: follow the units only. A unit that ended is read
                        # now (its fds close), its rows held for the slice; a new one starts
                        # counting every group at once.
                        ended = self._refresh_units()
                        held_rows += self._inherited.settle(self._read_units(ended))
                        held_ended += ended
                        self._close_ended(ended)
                        self._enable_all()
                        continue
                    # Every group counts all the time: read them all; the kernel's time_enabled
                    # and time_running say how much of the slice each one was on the PMU.
                    rows = self._inherited.settle(held_rows + self._read_all())
                    name = KERNEL
                    if not stopping:
                        self._review_stand_ins(now, None)
                    ended = () if stopping else self._refresh_units()
                    self._enable_all()  # the units opened by this poll
                else:
                    done = current
                    if stopping:
                        self._disable(done)
                        self._disable(always)
                    else:
                        # Unit by unit, stop this slice's group and start the next one at once,
                        # before the reads: a unit's groups then follow each other with no gap,
                        # and the time spent reading and polling is counted by the next group
                        # instead of by none (a gap counted as if the next group had run would
                        # make every count low).
                        rotation += 1
                        current = self._plan.group_at(rotation)
                        self._switch(done, current)
                    rows = self._inherited.settle(self._read(done) + self._read(always, present=done is None))
                    name = done.name if done is not None else ALWAYS
                    if not stopping:
                        self._review_stand_ins(now, current)
                    # Poll only after reading: units opened now were not counting in this slice;
                    # they start with the group that is running now. When stopping, every unit
                    # ends here.
                    ended = () if stopping else self._refresh_units(start=current)
                self._close_ended(ended)
                if stopping:
                    ended = tuple(self._units)
                ended = held_ended + ended
                held_rows, held_ended = (), ()
                overhead = self._own_cpu(now)
                processes, unit_processes, target_cpu = self._process_facts(now, stopping)
                record = Slice(
                    t=now,
                    index=self.slices,
                    duration=max(0.0, now - slice_start),
                    group=name,
                    rows=rows,
                    overhead_s=overhead,
                    ended=ended,
                    processes=processes,
                    unit_processes=unit_processes,
                    target_cpu_s=None if target_cpu is None else target_cpu.total,
                    target_ended_system_s=0.0 if target_cpu is None else target_cpu.ended_system,
                )
                slice_start = now
                self.slices += 1
                self._on_slice(record)
                if stopping:
                    return
                changed = self._over_budget(now, overhead)
                if changed is not None:
                    if changed.mode == KERNEL and not kernel:
                        kernel = True
                        self._all_on = False
                        self._enable_all()  # the group running now stays on; the others join it
                    deadlines = Deadlines(self._tick())
        finally:
            self._close_all()

    def _tick(self) -> float:
        """Seconds between two wake-ups: the timeslice in sync rotation; in kernel rotation at
        most :data:`KERNEL_POLL_EVERY`, so units are followed as often as in sync rotation's
        default while every group is read only once per (longer) slice."""
        if self.rotation.mode == KERNEL:
            return min(self.rotation.timeslice, KERNEL_POLL_EVERY)
        return self.rotation.timeslice

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
        sectormon's overhead. On a simulated clock the figure is rescaled so that dividing it by
        source time still gives the fraction of one core used per wall-clock second.
        """
        own = time.thread_time() - self._cpu_start - self._waiting_cpu
        if self._source.kind == "perf":
            return own
        wall = time.monotonic() - self._wall_start
        return own * (source_now / wall) if wall > 0 else 0.0

    def _process_facts(
        self, now: float, stopping: bool
    ) -> tuple[tuple[ProcessInfo, ...], tuple[tuple[str, int], ...], TargetCpu | None]:
        """What the slice says about processes: those first seen, the process of each thread unit
        opened, and the kernel's CPU time of the target when a reading is due."""
        processes, self._new_processes = tuple(self._new_processes), []
        unit_processes, self._new_unit_processes = tuple(self._new_unit_processes), []
        target_cpu = None
        if stopping or now - self._target_cpu_at >= TARGET_CPU_EVERY:
            target_cpu = self._source.target_cpu()
            self._target_cpu_at = now
        return processes, unit_processes, target_cpu

    # -- units ---------------------------------------------------------------------------------

    def _refresh_units(self, start: PlannedGroup | None = None) -> tuple[str, ...]:
        """Poll the source; open groups on new units, note ended ones (already read, closed later).

        ``start``: the group running now, enabled on the units opened by this poll.
        """
        opened: list[_UnitState] = []
        update = self._source.poll_units()
        for message in update.warnings:
            self._on_warning(message)
        self._new_processes += update.processes
        # A source may hand back the very same tuple when nothing changed (the thread tracker does,
        # at nearly every slice): each of its units was opened then, or was found gone.
        promoted: list[_UnitState] = []
        if update.alive is not self._last_alive:
            self._last_alive = update.alive
            if self._stand_ins is not None:
                promoted = self._follow_stand_ins(update.alive)
            for unit in update.alive:
                state = self._units.get(unit.key)
                if state is None:
                    if unit.key not in self._skipped_for_fds:
                        self._open_unit(unit, opened)
                elif state.unit is not unit and state.unit != unit:  # `is`: the tracker reuses Units
                    state.unit = unit  # binding changed: same counters, new core/CMG attribution
                    # (the member lists hold the state, not the unit: they stay valid)
        if self._cmg_enabled:
            for unit in self._source.cmg_units():
                if unit.key not in self._units and unit.key not in self._skipped_for_fds:
                    self._open_unit(unit, opened)
        self._new_unit_processes += [
            (s.unit.key, s.unit.process) for s in opened if s.unit.process is not None
        ]
        for group in (start, self._plan.always):
            if group is None:
                continue
            for state in opened if group is self._plan.always else (*opened, *promoted):
                counter = state.counters.get(group.name)
                if counter is not None:
                    self._toggle(counter, enable=True)
        return tuple(key for key in update.ended if key in self._units)

    def _follow_stand_ins(self, alive: tuple[Unit, ...]) -> list[_UnitState]:
        """Proxy: choose the stand-ins among ``alive``; a unit already open that starts standing
        in (its CMG's stand-in ended) opens the rotating groups now. Its states are returned (the
        caller enables the group running now on them); a replacement is said in a warning, which
        the recording keeps."""
        stand_ins = self._stand_ins
        assert stand_ins is not None
        ran = self._cpu_seconds(alive) if stand_ins.short(alive) else None
        new, replaced = stand_ins.update(alive, ran=ran, now=self._source.now())
        for ended, successor in replaced:
            self._on_warning(_handed_over(ended, successor, "which ended"))
        promoted: list[_UnitState] = []
        for unit in new:
            state = self._units.get(unit.key)
            if state is not None:  # else opened with every group by the caller
                self._promote(state)
                promoted.append(state)
        return promoted

    def _promote(self, state: _UnitState) -> None:
        """A unit open with the always-on group only starts standing in: open the rotating ones."""
        for group in self._plan.groups:
            if group.name in state.counters or not group.pe_events:
                continue
            try:
                handle = self._source.open_group(replace(state.unit, inherit=False), group.pe_events)
            except SectormonError as exc:
                if _is_gone(exc):
                    break
                raise
            state.counters[group.name] = _Counter(handle, self._names[group.name, False])
        self._units_changed()

    def _demote(self, state: _UnitState) -> None:
        """A stand-in gives its role up: close its rotating groups (read at this slice's end;
        the group enabled since has counted for no more than the reads took)."""
        always = self._plan.always.name if self._plan.always is not None else None
        for name in [name for name in state.counters if name != always]:
            state.counters.pop(name).group.close()
        self._units_changed()

    def _cpu_seconds(self, units: tuple[Unit, ...]) -> dict[str, float]:
        """The per-PE threads' CPU seconds so far (empty for CPUs and simulated cores: always there)."""
        if not any(u.kind == "thread" for u in units):
            return {}
        return dict(self._source.units_cpu_seconds(units))

    def _start_review(self) -> None:
        """The start of the first window over which the stand-ins' run times are judged."""
        if self._stand_ins is not None:
            self._review_at = self._source.now()
            self._cpu_then = self._cpu_seconds(self.counted_units())

    def _review_stand_ins(self, now: float, start: PlannedGroup | None) -> None:
        """Once per window, hand the role of a stand-in that ran nearly nothing to the unit of its
        CMG that ran most (``start``: the group running now, enabled on it), with a warning
        naming both units and why, which the recording keeps."""
        stand_ins = self._stand_ins
        window = now - self._review_at
        # Half a tick early is on time: slice ends fall a hair either side of a whole second.
        due = max(STAND_IN_WINDOW, 2 * self.rotation.timeslice) - 0.5 * self._tick()
        if stand_ins is None or window < due:
            return
        units = self.counted_units()
        cpu = self._cpu_seconds(units)
        ran = {key: seconds - self._cpu_then.get(key, 0.0) for key, seconds in cpu.items()}
        self._review_at, self._cpu_then = now, cpu
        if not ran:
            return
        for idle, successor in stand_ins.review(units, ran, window=window, now=now):
            why = (
                f"which ran {ran[idle.key]:.2f} s of the last {window:.1f} s "
                f"({successor.kind} {successor.ident}: {ran[successor.key]:.2f} s)"
            )
            self._on_warning(_handed_over(idle, successor, why))
            self._demote(self._units[idle.key])
            state = self._units[successor.key]
            self._promote(state)
            counter = state.counters.get(start.name) if start is not None else None
            if counter is not None:
                self._toggle(counter, enable=True)

    def _groups_of(self, unit: Unit) -> tuple[PlannedGroup, ...]:
        """The groups ``unit`` opens: all of them, or under a proxy only the always-on group
        on a unit that does not stand in."""
        stand_ins = self._stand_ins
        if stand_ins is None or unit.kind == "cmg" or unit.key in stand_ins:
            return self._plan.all_groups()
        return (self._plan.always,) if self._plan.always is not None else ()

    def _open_unit(self, unit: Unit, opened: list[_UnitState] | None = None) -> None:
        state = _UnitState(unit)
        for group in self._groups_of(unit):
            events = group.cmg_events if unit.kind == "cmg" else group.pe_events
            if not events:
                continue
            on = unit
            if self._stand_ins is not None and unit.inherit and group is not self._plan.always:
                on = replace(unit, inherit=False)  # see _inherited
            try:
                handle = self._source.open_group(on, events)
            except SectormonError as exc:
                for counter in state.counters.values():
                    counter.group.close()
                if _is_gone(exc):
                    return
                if exc.out_of_fds and self._counting:
                    self._skip_for_fds(unit, exc)
                    return
                raise
            state.counters[group.name] = _Counter(handle, self._names[group.name, unit.kind == "cmg"])
        self._units[unit.key] = state
        self._inherited.track(unit)
        self._units_changed()
        if opened is not None:
            opened.append(state)

    def _skip_for_fds(self, unit: Unit, exc: SectormonError) -> None:
        """Leave a unit that appeared mid-run without groups when no fd is left for them.

        Stopping the run (and the launched command with it) would lose everything counted so far
        for one more thread; the warning says whose work the figures leave out (a thread of a
        family is still counted in its inherited groups, which take no fd). The unit is tried
        again only after some unit has ended and closed its fds.
        """
        self._skipped_for_fds.add(unit.key)
        if not self._fds_warned:
            self._fds_warned = True
            problem, fix_sep, fix = exc.message.rpartition(" (fix: ")
            if not fix_sep:
                problem, fix = exc.message, ""
            if unit.family is not None:  # its family's inherited groups count it all the same
                consequence = (
                    f"has no row of its own: its counts are in pid {unit.family}'s totals, not in any "
                    "thread's or core's"
                )
            else:
                consequence = "is not counted; the totals leave its work out"
            self._on_warning(
                f"{problem}: {unit.kind} {unit.ident}, and any unit that starts while the limit "
                f"holds, {consequence}" + (f" (fix: {fix}" if fix_sep else "")
            )

    def _close_ended(self, ended: tuple[str, ...]) -> None:
        if ended and self._skipped_for_fds:
            self._skipped_for_fds.clear()  # fds were freed: new units get another try
        for key in ended:
            state = self._units.pop(key, None)
            if state is not None:
                self._inherited.forget(key)
                self._units_changed()
                for counter in state.counters.values():
                    counter.group.close()

    def _close_all(self) -> None:
        for state in self._units.values():
            for counter in state.counters.values():
                counter.group.close()
        self._units.clear()
        self._units_changed()

    # -- counting ------------------------------------------------------------------------------

    def _members_of(self, name: str) -> _Members:
        members = self._members.get(name)
        if members is None:
            keys = tuple(self._units)
            states = tuple(self._units.values())
            counters = tuple(state.counters.get(name) for state in states)
            members = self._members[name] = _Members(keys, states, counters)
        return members

    def _units_changed(self) -> None:
        self._members.clear()
        self._all_on = False

    @staticmethod
    def _toggle(counter: _Counter, *, enable: bool) -> None:
        try:
            if enable:
                counter.group.enable()
            else:
                counter.group.disable()
        except SectormonError as exc:
            if not _is_gone(exc):  # a thread that just exited: its last counts are still read
                raise
        counter.on = enable

    def _enable_all(self) -> None:
        """Kernel rotation: enable every group on every unit that is not counting yet (the units
        opened since the last call; each group is enabled once and stays on)."""
        if self._all_on:
            return
        for group in self._plan.all_groups():
            for counter in self._members_of(group.name).counters:
                if counter is not None and not counter.on:
                    self._toggle(counter, enable=True)
        self._all_on = True

    def _read_units(self, keys: tuple[str, ...]) -> tuple[Row, ...]:
        """The rows of every group of the units ``keys`` (kernel rotation: units found ended
        between two reads, read before their fds close)."""
        rows: list[Row] = []
        for key in keys:
            state = self._units.get(key)
            if state is None:
                continue
            for name, counter in state.counters.items():
                row = _read_row(key, state.unit, name, counter)
                if row is not None:
                    rows.append(row)
        return tuple(rows)

    def _read_all(self) -> tuple[Row, ...]:
        """Kernel rotation: the rows of every group on every unit (a unit with nothing of the
        first group still gets its empty row: it says the unit was there)."""
        rows: tuple[Row, ...] = ()
        for i, group in enumerate(self._plan.all_groups()):
            rows += self._read(group, present=i == 0)
        return rows

    def _enable(self, group: PlannedGroup | None) -> None:
        if group is None:
            return
        for counter in self._members_of(group.name).counters:
            if counter is not None:
                self._toggle(counter, enable=True)

    def _disable(self, group: PlannedGroup | None) -> None:
        if group is None:
            return
        for counter in self._members_of(group.name).counters:
            if counter is not None:
                self._toggle(counter, enable=False)

    def _switch(self, old: PlannedGroup | None, new: PlannedGroup | None) -> None:
        """On every unit in turn: stop ``old``, start ``new`` (either may be absent on a unit)."""
        if old is None or new is None:
            return
        old_counters = self._members_of(old.name).counters
        new_counters = self._members_of(new.name).counters
        for before, after in zip(old_counters, new_counters, strict=True):
            if before is not None:
                self._toggle(before, enable=False)
            if after is not None:
                self._toggle(after, enable=True)

    def _read(self, group: PlannedGroup | None, *, present: bool = True) -> tuple[Row, ...]:
        """The rows of ``group`` on every unit. A unit with nothing of the group gets an empty
        row when ``present`` (it says the unit was there; the rotating group's read does)."""
        if group is None:
            return ()
        rows: list[Row] = []
        append = rows.append
        name = group.name
        members = self._members_of(name)
        for key, state, counter in zip(members.keys, members.states, members.counters, strict=True):
            unit = state.unit
            if counter is None:
                # Nothing of this group counts on this unit (a CMG unit while a group without
                # CMG-wide events runs): an empty reading still says the unit was there, so its
                # present time starts with the session and scaling stays right whatever the order.
                if present:
                    append((key, unit.core, unit.cmg, name, 0, 0, (), []))
                continue
            row = _read_row(key, unit, name, counter)
            if row is not None:
                append(row)
        return tuple(rows)


def _read_row(key: str, unit: Unit, name: str, counter: _Counter) -> Row | None:
    """One group's row on one unit since its previous read; ``None`` when the unit has gone."""
    try:
        values = counter.group.read()
    except SectormonError as exc:
        if _is_gone(exc):
            return None
        raise
    deltas, enabled, running = counter.delta(values)
    return (key, unit.core, unit.cmg, name, enabled, running, counter.names, deltas)


def _is_gone(exc: SectormonError) -> bool:
    """A unit that vanished between poll and use (thread exit) is not an error."""
    return exc.unit_gone


def _handed_over(previous: Unit, successor: Unit, why: str) -> str:
    """The warning (kept in the recording) that a proxy stand-in's role moved, and why."""
    where = f" for CMG {successor.cmg}" if successor.cmg is not None else ""
    return (
        f"proxy: {successor.kind} {successor.ident} stands in{where} from now on, in place of "
        f"{previous.kind} {previous.ident}, {why}"
    )
