"""The metrics engine: readings in, frames out. Every scaling and confidence rule lives here.

Scaling, per unit and event, over a window:

1. The unit's *own time*: per slice it was read in with events, its ``time_enabled`` (the
   longest of its rows; a thread's advances only while it is on a CPU, a CPU's all the time).
   ``known`` is the wall seconds of those slices, ``active`` the own seconds in them.
2. The event's *counted* seconds at the unit: the own seconds it was counted in (the sum of
   ``min(time_running, time_enabled)`` over the readings that contain it) times
   ``known / active``, i.e. the share of the unit's running time the event saw, in wall
   seconds. A slice in which a thread ran little weighs little; a thread that ended halfway
   through a slice is scaled to the half it lived; a group the kernel multiplexed counts only its
   running share; no unit is scaled by another's times. A unit that never ran in the window
   (``active == 0``: a sleeping thread) did nothing, and that was measured: an event counts the
   wall seconds of the slices it was read in. A group the kernel never put on the PMU
   (``time_running == 0``) adds no counted time.
3. The unit's *present* seconds: the durations of every slice from its first reading (inclusive)
   to the slice whose ``ended`` names it (inclusive), whether or not it was read in a given slice
   (a CMG unit is read only when the active group has CMG events; a thread only reads the
   active group).
4. Scaled count = ``extrapolate(sum of raw counts, counted, present)``; an event the unit never
   counted is absent (unknown, not zero). Coverage = ``coverage(counted, present)``.

So the scaled count is ``raw * active / ran`` (with ``known == present``): ``perf stat``'s
``count * time_enabled / time_running`` over the unit's whole window, whether the groups were
rotated by sectormon (each runs in some slices) or by the kernel (each runs a share of every
slice). Every part (``known``, ``active``, the own and wall seconds) adds up across intervals, so a
window's figures do not depend on where frames fell.

Extrapolation runs on the components summed over the whole window, so an event counted in one
interval of a long window stands for the whole window. A unit whose binding (core/CMG) changes
becomes a new *entity* from that slice on, so counts stay with the core they were counted on.

Scopes: ``threads`` by tid (with the newest binding each thread's slices brought: ``bindings``);
``procs`` by pid (the threads a slice's ``unit_processes`` put in
that process; computed with the thread level's metrics, where threads are); ``cores`` by CPU
(threads with no single CPU under ``"unbound"``, CPU units by their CPU); ``cmgs`` by CMG id
(per-PE units with that CMG plus that CMG's cmg unit); ``total`` over every unit. A scope's count
is the sum of its units' scaled counts, its coverage ``sum(counted) / sum(present)`` over the units
that counted the event. CMG-scoped events are
taken from cmg units only and per-PE events from thread/CPU units only, so nothing is counted
twice and CMG-wide counts never appear in a thread or core. Events listed as ``unavailable`` are
ignored wherever they appear.

Metrics per scope: the environment is the scope's counts, the profile's constants, ``SECONDS``
(the window length, not the units' presence) and the metrics computed earlier in profile order.
A metric's coverage is the minimum coverage of its input events (through referenced metrics);
it is listed in ``split`` when no single group of the profile holds all its input events.
``rates`` are counts per window second. See :mod:`sectormon.metrics.formulas` for the scope
levels a metric is computed at.

Windows: the frame's top-level scopes cover the *interval* since the previous frame (the final
frame: the whole run); ``recent`` covers the intervals of the last ``recent_seconds``; ``run``
covers everything since 0. Units that ended keep their counts in ``run`` and in ``recent`` while
it still covers them. ``frame(t)`` should be called with the end time of the last slice added.

Thread coverage (:mod:`sectormon.metrics.thread_time`): the task time counted on thread units
against the kernel's CPU time of the target that slices carry, per frame interval and for the run.

The engine is single-threaded: the pipeline thread feeds slices and marks and asks for frames.

Where the work happens: readings accumulate per entity and group (:mod:`windows`: ``GroupAcc``,
``Entity.drain``, the recent window's running sums); a frame hands each window's contributions to
:class:`~sectormon.metrics.frame_stats.FrameStats`, which sums them into scopes column by column
(:mod:`scopes`) and builds the stats of all windows' scopes in one batch per metric list
(:mod:`stats`); the baseline is a :class:`~sectormon.metrics.baseline.Snapshot`. Every float is
computed in the order this docstring implies, so frames do not depend on the path taken
(``add_slice`` or ``add_rows``, cached layouts or not).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import replace
from operator import add

from sectormon.data.binding import ThreadBinding
from sectormon.data.frames import Baseline, Frame, FrameRotation, ProcessScope, RegionStats, WindowStats
from sectormon.data.proxy import ProxySetting
from sectormon.data.readings import GAP, Mark, ProcessInfo, Slice, lost_seconds, split_unit_key
from sectormon.data.regions import EMPTY as EMPTY_REGIONS
from sectormon.data.regions import RegionSnapshot, changes, table_news
from sectormon.metrics.baseline import Snapshot
from sectormon.metrics.batch import FOLD_EVERY, RowBatch, bindings_of, processes_of
from sectormon.metrics.formulas import MetricSet, evaluate_metrics
from sectormon.metrics.frame_stats import TOTAL, FrameStats, level_of
from sectormon.metrics.regions import RegionScopes
from sectormon.metrics.thread_time import ThreadTimeTracker, counted_task_ns
from sectormon.metrics.windows import (
    Contribution,
    Entity,
    GroupAcc,
    Interval,
    Plan,
    RecentWindow,
    ScopeKey,
    Terms,
    accumulate,
    add_to_archive,
    merge_contributions,
)
from sectormon.profiles.model import Profile

__all__ = ["MetricsEngine", "evaluate_metrics"]


# Slices between folds of the groups' pending readings (they are folded at every frame anyway).
_FOLD_EVERY = FOLD_EVERY


class MetricsEngine:
    """Turns slices of readings into :class:`~sectormon.data.frames.Frame` objects (module docstring)."""

    def __init__(
        self,
        profile: Profile,
        *,
        recent_seconds: float = 10.0,
        unavailable: Mapping[str, str] | None = None,
        start: float = 0.0,
        rotation: FrameRotation | None = None,
        own_time: bool = True,
        target_cpu_at_start: float | None = None,
        proxy: ProxySetting | None = None,
        cmg_of: Mapping[int, int] | None = None,
    ) -> None:
        """``start``: stream time the data begins at (a recording toggled on mid-session);
        ``rotation``: the rotation the session started with (the header's,
        :meth:`FrameRotation.from_json`), which ``rotation`` marks change and every frame states;
        ``own_time``: scale each unit by its own time (step 2 of the module docstring), else
        every reading stands for its whole slice (a recording whose rows of one slice are
        separate runs, see ``windows.wall_counted``); ``target_cpu_at_start``: the target's CPU
        time at ``start`` when known (thread coverage); ``proxy``: the session's ``--proxy``
        setting (:mod:`sectormon.metrics.proxy_scale`); ``cmg_of``: CPU -> CMG, where marked
        regions' threads ran (:mod:`sectormon.metrics.regions`)."""
        if not recent_seconds > 0:
            raise ValueError(f"recent_seconds must be > 0, not {recent_seconds!r}")
        self.profile = profile
        self.recent_seconds = float(recent_seconds)
        self.unavailable: dict[str, str] = dict(unavailable or {})
        self._rotation = rotation
        self._own_time = own_time
        self._mset = MetricSet(profile)
        self._names: tuple[str, ...] = tuple(profile.events)
        self._n = len(self._names)
        pe: dict[str, int] = {}
        cmg: dict[str, int] = {}
        for i, name in enumerate(self._names):
            if name in self.unavailable:
                continue
            (cmg if profile.events[name].scope == "cmg" else pe)[name] = i
        self._index_of_kind: dict[str, Mapping[str, int]] = {"thread": pe, "cpu": pe, "cmg": cmg}
        pe_plans: dict[tuple[tuple[str, ...], ...], Plan] = {}
        self._plans_of_kind: dict[str, dict[tuple[tuple[str, ...], ...], Plan]] = {
            "thread": pe_plans,
            "cpu": pe_plans,
            "cmg": {},
        }
        self._stats = FrameStats(self._mset, self._names, pe, cmg, proxy, own_time=own_time)
        self._region_scopes = RegionScopes(self._mset, cmg, cmg_of or {})
        self._regions = EMPTY_REGIONS  # the newest table the slices brought (cumulative)
        self._regions_at_frame = EMPTY_REGIONS  # the table at the last frame: what a frame's interval adds

        self._cum = 0.0  # sum of all slice durations so far: the time axis of presence
        self._frame_cum = 0.0
        self._start = float(start)
        self._frame_t = self._start
        self._serial = 0
        self._current: dict[str, Entity] = {}  # unit key -> its entity now
        self._open: dict[int, Entity] = {}  # entities not yet folded into the archive
        self._batch_entities: dict[int, Entity] = {}  # a RowAggregator's serials -> entities (add_batch)
        self._archive: dict[ScopeKey, Terms] = {}
        self._archive_version = 0  # bumped when the archive changes (scope layouts depend on it)
        self._recent = RecentWindow(self.recent_seconds)
        self._units: dict[str, tuple[str, int] | None] = {}
        self._process_of: dict[str, int] = {}  # thread unit key -> its process's pid
        self._processes: dict[str, ProcessScope] = {}  # pid -> what names it
        self._bindings: dict[str, ThreadBinding] = {}  # tid -> its newest binding
        self._thread_time = ThreadTimeTracker(target_cpu_at_start)

        self._slices = 0
        self._slices_since_frame = 0
        self._last_t = 0.0
        self._active_group = ""
        self._group_time: dict[str, float] = {}
        self._group_time_run: dict[str, float] = {}
        self._overhead_s = 0.0
        self._overhead_at_frame = 0.0
        self._warnings: list[str] = []

        self._baseline: Snapshot | None = None
        self._baseline_pending = False
        self._restarted_at: float | None = None  # the last configuration change (restart_windows)

    # -- input ----------------------------------------------------------------------------------

    def add_slice(self, s: Slice) -> None:
        """Accumulate one timeslice's rows (the hot path: :func:`accumulate`, then GroupAcc)."""
        if s.processes or s.unit_processes:
            self.add_processes(s.processes, s.unit_processes)
        if s.bindings:
            self.add_bindings(s.bindings)
        accumulate(s.rows, s.duration, self._current, self._enter)
        if s.regions is not None:
            self.add_regions(s.regions)
        thread_time = self._thread_time
        if thread_time.tracking or s.target_cpu_s is not None:
            thread_time.add(counted_task_ns(s.rows), s.target_cpu_s, s.target_ended_system_s)
        self._end_slice(s.t, s.group, s.duration if s.duration > 0 else 0.0, s.ended, s.overhead_s)

    def add_regions(self, regions: RegionSnapshot) -> None:
        """The marked regions' table as read now; what newly went wrong in it is said once."""
        self._warnings += table_news(self._regions, regions)
        self._regions = regions

    def add_processes(
        self, processes: Sequence[ProcessInfo], unit_processes: Sequence[tuple[str, int]]
    ) -> None:
        """Processes first seen and the process of each thread unit opened (before its rows)."""
        for info in processes:
            self._processes[str(info.pid)] = ProcessScope(info.pid, info.command, info.parent, info.rank)
        self._process_of.update(unit_processes)

    def add_bindings(self, bindings: Sequence[tuple[str, ThreadBinding]]) -> None:
        """Thread units' newest bindings (the frames show each thread's own)."""
        for unit, binding in bindings:
            self._bindings[unit.partition(":")[2]] = binding

    def add_batch(self, batch: RowBatch) -> None:
        """The slices of a :class:`RowBatch`, summed by a :class:`RowAggregator` elsewhere: the
        same entities enter in the same order, then the group accumulators take the states the
        aggregator reached with :func:`accumulate` (the same frames, see
        :mod:`sectormon.metrics.batch`).

        The aggregator's serials are its own: each is mapped to an entity when its unit appears,
        a new one where :meth:`add_slice` would start one (the unit is new, ended, or on another core),
        else the unit's current entity (an aggregator that started mid-run, see ``fresh``)."""
        if batch.fresh:
            self._batch_entities = {}
        mapped = self._batch_entities
        enter = self._enter
        end_slice = self._end_slice
        current = self._current
        thread_time = self._thread_time
        for t, _index, duration, group, ended, overhead_s, entries, facts in batch.slices:
            dur = duration if duration > 0 else 0.0
            if facts is not None:
                self.add_processes(processes_of(facts), facts[1])
                if facts[5]:
                    self.add_bindings(bindings_of(facts))
                thread_time.add(facts[3], facts[2], facts[4])
            elif thread_time.tracking:
                thread_time.add(None, None)
            if entries:
                for serial, unit, core, cmg in entries:
                    ent = current.get(unit)
                    if ent is None or ent.core != core or ent.cmg != cmg:
                        ent = enter(unit, core, cmg)
                    if serial:
                        if ent is None:
                            raise ValueError(f"a batch takes readings of {unit!r}, which the engine ignores")
                        mapped[serial] = ent
            end_slice(t, group, dur, ended, overhead_s)
        for serial, name, names, counted, ran, values, mixed in batch.groups:
            ent = mapped.get(serial)
            if ent is None:
                raise ValueError(f"a batch sums entity {serial}, which it never entered")
            groups = ent.groups
            acc = groups.get(name)
            if acc is None:
                acc = groups[name] = GroupAcc()
            acc.restore(names, counted, ran, values, mixed)
        for serial, known, active in batch.own:
            own = mapped[serial].own
            own.known = known
            own.active = active

    def _end_slice(self, t: float, group: str, dur: float, ended: Sequence[str], overhead_s: float) -> None:
        if self._slices == 0 and self._frame_t == self._start:
            # The data start with the first slice, not with the session's clock: a front end
            # that starts sampling late (the TUI starts the sampler once it is up) would otherwise
            # give the first interval and the run time that nothing counted, and every group a
            # share of the run that does not add up to the whole.
            self._start = self._frame_t = max(self._start, t - dur)
        cum1 = self._cum + dur
        if ended:
            current = self._current
            for key in ended:
                ent = current.pop(key, None)
                if ent is not None:
                    ent.end = cum1
        self._cum = cum1
        self._slices += 1
        self._slices_since_frame += 1
        if not self._slices_since_frame % _FOLD_EVERY:
            self._fold()
        self._last_t = t
        self._active_group = group
        self._group_time[group] = self._group_time.get(group, 0.0) + dur
        self._group_time_run[group] = self._group_time_run.get(group, 0.0) + dur
        self._overhead_s = overhead_s

    def _fold(self) -> None:
        """Add up the pending readings of every group (bounds memory when frames are rare)."""
        for ent in self._open.values():
            for acc in ent.groups.values():
                if acc.mixed is None:
                    acc.fold()

    def _enter(self, unit: str, core: int | None, cmg: int | None) -> Entity | None:
        """A new entity for a unit seen for the first time, after it ended, or on a new binding,
        from the start of the slice being added."""
        cum0 = self._cum
        parsed = self._units.get(unit, False)
        if parsed is False:
            try:
                parsed = split_unit_key(unit)
            except ValueError:
                parsed = None
                self._warnings.append(f"ignored readings of unknown unit {unit!r}")
            self._units[unit] = parsed
        if parsed is None:
            return None
        kind, ident = parsed  # type: ignore[misc]
        old = self._current.get(unit)
        if old is not None:
            old.end = cum0
        self._serial += 1
        ent = Entity(
            self._serial,
            unit,
            kind,
            ident,
            core,
            cmg,
            cum0,
            self._index_of_kind[kind],
            self._n,
            self._plans_of_kind[kind],
            self._process_of.get(unit) if kind == "thread" else None,
        )
        self._current[unit] = ent
        self._open[ent.serial] = ent
        return ent

    def add_mark(self, m: Mark) -> None:
        """Baseline marks set/clear the baseline; a configuration change restarts the windows; a gap
        (slices missing from a recording) is time the units were present but nothing was counted."""
        if m.kind == "baseline":
            self.mark_baseline()
        elif m.kind == "baseline-clear":
            self.clear_baseline()
        elif m.kind == "config":
            self.restart_windows(m.t)
        elif m.kind == GAP:
            self._cum += lost_seconds(m)
            self._thread_time.lose_span()
        elif m.kind == "rotation":
            self._rotation = FrameRotation.from_json(m.data)

    def restart_windows(self, t: float) -> None:
        """What is measured changed at ``t`` (the sector configuration): the open interval and
        the recent window start again there, so neither a frame nor a baseline mixes data of two
        configurations. The run window goes on; a baseline already taken stays."""
        t = max(t, self._frame_t)
        self._collect(reset=True)
        self._recent.clear()
        self._open_interval(t)
        self._restarted_at = t

    # -- baseline -------------------------------------------------------------------------------

    def mark_baseline(self) -> None:
        """Take the ``recent`` window up to the last slice (open interval included) as baseline.

        Before any slice there is nothing to compare with: the next frame's recent window is taken.
        """
        if self._slices == 0:
            self._baseline = None
            self._baseline_pending = True
            return
        if self._slices_since_frame:
            t_to = max(self._last_t, self._frame_t)
            extra = self._collect(reset=False)
            window = self._recent_stats(t_to, extra)
        else:
            t_to = self._frame_t
            window = self._recent_stats(t_to, [])
        self._baseline = self._snapshot(window, t_to)
        self._baseline_pending = False

    def clear_baseline(self) -> None:
        self._baseline = None
        self._baseline_pending = False

    @property
    def baseline_set(self) -> bool:
        return self._baseline is not None or self._baseline_pending

    def _snapshot(self, window: WindowStats, t_to: float) -> Snapshot:
        return Snapshot.of(window, t_to, self._restarted_at)

    def _baseline_for(self, recent: WindowStats) -> Baseline | None:
        return self._baseline.against(recent, self._mset.better) if self._baseline is not None else None

    # -- metrics --------------------------------------------------------------------------------

    def evaluate_metrics(self, counts: Mapping[str, float], seconds: float) -> dict[str, float | None]:
        """Every metric of the profile over the given (scaled) counts and window length."""
        return self._mset.evaluate(counts, seconds)

    # -- frames ---------------------------------------------------------------------------------

    def frame(self, t: float) -> Frame:
        """Close the interval ending at ``t`` and return its frame."""
        return self._close(t, final=False)

    def skip_frame(self, t: float) -> None:
        """Close the interval ending at ``t`` as :meth:`frame` does, without computing its stats.

        For frames nobody sees (a replay's frames before ``--from``, compare's run up to the final
        frame): the stats are most of a frame's cost and change nothing the engine keeps, so every
        later frame is the same (tests/metrics/test_metrics_skip.py). A pending baseline is the
        recent window of this very frame: then the frame is built after all.
        """
        if self._baseline_pending:
            self.frame(t)
            return
        t = max(t, self._frame_t)
        self._close_interval(t)
        self._thread_time.take_interval()
        self._warnings.clear()  # they belonged to the frame nobody sees, as when it is dropped
        self._regions_at_frame = self._regions
        self._open_interval(t)

    def final_frame(self, t: float) -> Frame:
        """Close the last interval; the top-level scopes (and ``groups``, ``overhead``) cover the run."""
        return self._close(t, final=True)

    def _close(self, t: float, *, final: bool) -> Frame:
        # A frame allocates some ten thousand containers and frees most of them at the next one;
        # none of them can form a cycle, so the cyclic collector waits until the frame is built
        # (docs/perf-tuning.md has what its passes cost).
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._build(t, final)
        finally:
            if was_enabled:
                gc.enable()

    def _build(self, t: float, final: bool) -> Frame:
        t = max(t, self._frame_t)
        seconds = t - self._frame_t
        interval = self._close_interval(t)
        recent_from, recent_contribs = self._recent.window()
        recent_seconds = max(0.0, t - recent_from)
        cum = self._cum
        run_contribs = [(e, e.present(0.0, cum), e.run) for e in self._open.values()]
        run_s = t - self._start  # the whole run: from the start of the data, not of the session

        # All windows of the frame are computed in one batch per metric list (FrameStats.windows).
        if final:
            top, recent_scopes = self._stats.windows(
                [
                    (run_contribs, run_s, True, self._archive, "final"),
                    (recent_contribs, recent_seconds, False, None, "recent"),
                ],
                self._archive_version,
            )
            self._thread_time.take_interval()
            thread_time = run_thread_time = self._thread_time.run.figure()
            run = self._stats.as_window(top, run_s, run_thread_time)
            interval_s = run_s
            groups = self._fractions(self._group_time_run, run_s)
            overhead = self._overhead_s / run_s if run_s > 0 else 0.0
        else:
            top, recent_scopes, run_scopes = self._stats.windows(
                [
                    (interval, seconds, True, None, "interval"),
                    (recent_contribs, recent_seconds, False, None, "recent"),
                    (run_contribs, run_s, False, self._archive, "run"),
                ],
                self._archive_version,
            )
            thread_time = self._thread_time.take_interval()
            run = self._stats.as_window(run_scopes, run_s, self._thread_time.run.figure())
            interval_s = seconds
            groups = self._fractions(self._group_time, seconds)
            overhead = (self._overhead_s - self._overhead_at_frame) / seconds if seconds > 0 else 0.0
        recent = self._stats.as_window(recent_scopes, recent_seconds)

        if self._baseline_pending:
            self._baseline = self._snapshot(recent, t)
            self._baseline_pending = False
        warnings = tuple(self._warnings)
        self._warnings.clear()
        self._open_interval(t)
        procs = level_of(top, "proc")
        threads = level_of(top, "thread")
        regions, run = self._region_stats(run)

        return Frame(
            t=t,
            interval=interval_s,
            overhead=max(0.0, overhead),
            total=top.get(TOTAL) or self._stats.empty(interval_s, "total"),
            cmgs=level_of(top, "cmg"),
            cores=level_of(top, "core"),
            threads=threads,
            bindings={k: self._bindings[k] for k in threads if k in self._bindings},
            procs=procs,
            processes={k: self._processes[k] for k in procs if k in self._processes},
            thread_time=thread_time,
            recent=recent,
            run=run,
            groups=groups,
            active_group=self._active_group,
            baseline=self._baseline_for(recent),
            final=final,
            warnings=warnings,
            rotation=self._rotation,
            regions=regions,
        )

    def _region_stats(self, run: WindowStats) -> tuple[dict[str, RegionStats], WindowStats]:
        """The regions the interval added to, and the run window with every region so far."""
        now = self._regions
        if not now.threads:
            return {}, run
        interval = self._region_scopes.build(changes(now, self._regions_at_frame))
        self._regions_at_frame = now
        return interval, replace(run, regions=self._region_scopes.build(now.threads))

    def _close_interval(self, t: float) -> list[Contribution]:
        """End the open interval at ``t``: its contributions, now also in the recent window."""
        previous_cum = self._frame_cum
        interval = self._collect(reset=True)
        self._recent.add(Interval(self._frame_t, t, previous_cum, self._cum, interval))
        self._recent.prune(t)
        return interval

    def _open_interval(self, t: float) -> None:
        """Start the next interval at ``t`` (after a frame, built or skipped)."""
        self._frame_t = t
        self._group_time = {}
        self._overhead_at_frame = self._overhead_s
        self._slices_since_frame = 0

    def _collect(self, *, reset: bool) -> list[Contribution]:
        """Contributions of the open interval; with ``reset`` also close it for good.

        Closing adds the interval to each entity's run totals and folds entities that ended into
        the archive (their run contribution is final), so long runs with thread churn stay cheap.
        """
        lo = self._frame_cum
        hi = self._cum
        n = self._n
        out: list[Contribution] = []
        ended: list[Entity] = []
        for ent in self._open.values():
            present = ent.present(lo, hi)
            had_readings = bool(ent.groups)
            if not had_readings and present <= 0.0:
                if reset and ent.end is not None:
                    ended.append(ent)
                continue
            vec = ent.drain(n, reset)
            out.append((ent, present, vec))
            if reset:
                if had_readings:
                    ent.run = list(map(add, ent.run, vec))
                if ent.end is not None:
                    ended.append(ent)
        if reset:
            for ent in ended:
                if self._stats.proxy is not None:
                    self._stats.proxy.archive(ent, ent.present(0.0, hi), ent.run)
                add_to_archive(self._archive, ent, ent.present(0.0, hi), n, self._own_time)
                del self._open[ent.serial]
            if ended:
                self._archive_version += 1
                mapped = self._batch_entities
                if len(mapped) > 2 * len(self._open) + 64:
                    # Archived entities ended: no later batch of their aggregator names them.
                    open_ = self._open
                    self._batch_entities = {s: e for s, e in mapped.items() if open_.get(e.serial) is e}
            self._frame_cum = hi
        return out

    def _recent_stats(self, t: float, extra: list[Contribution]) -> WindowStats:
        """The recent window ending at ``t`` plus the open interval's ``extra`` (for the baseline)."""
        recent = self._recent
        if extra and recent.middle(self._frame_t, t) < recent.cutoff(t):
            start, groups = self._frame_t, [extra]  # the open interval alone fills the window
        else:
            start, groups = recent.select(t)
            if extra:
                start = start if groups else self._frame_t
                groups = [*groups, extra]
        seconds = max(0.0, t - start)
        (scopes,) = self._stats.windows(
            [(merge_contributions(groups), seconds, False, None, "baseline")], self._archive_version
        )
        return self._stats.as_window(scopes, seconds)

    @staticmethod
    def _fractions(times: Mapping[str, float], seconds: float) -> dict[str, float]:
        if seconds <= 0:
            return {}
        return {group: min(1.0, d / seconds) for group, d in times.items()}
