"""The metrics engine: readings in, frames out. Every scaling and confidence rule lives here.

Scaling, per unit and event, over a window:

1. The event's *counted* seconds at the unit: the sum, over the readings that contain the event,
   of ``slice.duration * running_fraction(time_enabled, time_running)``. A sleeping thread
   (``time_enabled == 0``) counts as fully counted: it did nothing, and that was measured. A group
   the kernel never put on the PMU (``time_running == 0``) adds no counted time.
2. The unit's *present* seconds: the durations of every slice from its first reading (inclusive)
   to the slice whose ``ended`` names it (inclusive), whether or not it was read in a given slice
   (a CMG unit is read only when the active group has CMG events; a thread only reads the
   active group).
3. Scaled count = ``extrapolate(sum of raw counts, counted, present)``; an event the unit never
   counted is absent (unknown, not zero). Coverage = ``coverage(counted, present)``.

The kernel's own multiplexing is corrected exactly once, by the running fraction inside the
counted time: since ``raw = multiplex_scale(raw, te, tr) * running_fraction(te, tr)``, the scaled
count equals ``sum(multiplex_scale(raw) * fraction) * present / sum(duration * fraction)``, the
perf-corrected counts weighted by how much of each slice was really measured. One reading alone
gives ``multiplex_scale(raw) * present / duration``, as ``perf stat`` would. (Multiplying the
corrected count by ``present / counted`` as well would apply the correction twice.)

Extrapolation runs on the components summed over the whole window, so an event counted in one
interval of a long window stands for the whole window. A unit whose binding (core/CMG) changes
becomes a new *entity* from that slice on, so counts stay with the core they were counted on.

Scopes: ``threads`` by tid; ``cores`` by CPU (threads with no single CPU under ``"unbound"``, CPU
units by their CPU); ``cmgs`` by CMG id (per-PE units with that CMG plus that CMG's cmg unit);
``total`` over every unit. A scope's count is the sum of its units' scaled counts, its coverage
``sum(counted) / sum(present)`` over the units that counted the event. CMG-scoped events are
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

The engine is single-threaded: the pipeline thread feeds slices and marks and asks for frames.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import add, itemgetter, mul

from sectormon.frames import EMPTY_SCOPE, Baseline, Frame, ScopeStats, WindowStats
from sectormon.metrics.baseline import keyed_deltas, scope_deltas
from sectormon.metrics.formulas import MetricSet, evaluate_metrics
from sectormon.metrics.windows import (
    Contribution,
    Entity,
    GroupAcc,
    Interval,
    RecentWindow,
    ScopeAcc,
    ScopeKey,
    add_to_archive,
    merge_contributions,
    scope_accs,
)
from sectormon.profiles.model import Profile
from sectormon.readings import (
    Mark,
    Reading,
    Slice,
    SliceRows,
    split_unit_key,
)

__all__ = ["MetricsEngine", "evaluate_metrics"]

_TOTAL: ScopeKey = ("total", "")

# Column-wise evaluation has a fixed cost per metric and event; for fewer scopes than this (the
# total, the CMGs) evaluating each scope with the compiled closures is cheaper (measured).
_COLUMNS_FROM = 8


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The metric values of the window marked as baseline."""

    t_from: float
    t_to: float
    total: Mapping[str, float | None]
    cmgs: Mapping[str, Mapping[str, float | None]]
    cores: Mapping[str, Mapping[str, float | None]]


def _sort_key(key: str) -> tuple[int, int, str]:
    """Numeric keys in numeric order, then the rest (``unbound``) by name."""
    try:
        return (0, int(key), "")
    except ValueError:
        return (1, 0, key)


class MetricsEngine:
    """Turns slices of readings into :class:`~sectormon.frames.Frame` objects (module docstring)."""

    def __init__(
        self,
        profile: Profile,
        *,
        recent_seconds: float = 10.0,
        unavailable: Mapping[str, str] | None = None,
        start: float = 0.0,
    ) -> None:
        """``start``: stream time the data begins at (a recording toggled on mid-session)."""
        if not recent_seconds > 0:
            raise ValueError(f"recent_seconds must be > 0, not {recent_seconds!r}")
        self.profile = profile
        self.recent_seconds = float(recent_seconds)
        self.unavailable: dict[str, str] = dict(unavailable or {})
        self._mset = MetricSet(profile)
        self._pickers: dict[
            tuple[int, ...], tuple[tuple[str, ...], Callable[[Sequence[float]], tuple[float, ...]]]
        ] = {}
        self._names: tuple[str, ...] = tuple(profile.events)
        self._n = len(self._names)
        pe: dict[str, int] = {}
        cmg: dict[str, int] = {}
        for i, name in enumerate(self._names):
            if name in self.unavailable:
                continue
            (cmg if profile.events[name].scope == "cmg" else pe)[name] = i
        self._index_of_kind: dict[str, Mapping[str, int]] = {"thread": pe, "cpu": pe, "cmg": cmg}

        self._cum = 0.0  # sum of all slice durations so far: the time axis of presence
        self._frame_cum = 0.0
        self._start = float(start)
        self._frame_t = self._start
        self._serial = 0
        self._current: dict[str, Entity] = {}  # unit key -> its entity now
        self._open: dict[int, Entity] = {}  # entities not yet folded into the archive
        self._archive: dict[ScopeKey, ScopeAcc] = {}
        self._recent = RecentWindow(self.recent_seconds)
        self._units: dict[str, tuple[str, int] | None] = {}

        self._slices = 0
        self._slices_since_frame = 0
        self._last_t = 0.0
        self._active_group = ""
        self._group_time: dict[str, float] = {}
        self._group_time_run: dict[str, float] = {}
        self._overhead_s = 0.0
        self._overhead_at_frame = 0.0
        self._warnings: list[str] = []

        self._baseline: _Snapshot | None = None
        self._baseline_pending = False

    # -- input ----------------------------------------------------------------------------------

    def add_rows(self, s: SliceRows) -> None:
        """:meth:`add_slice` for a slice in compact form (the replay hot path); same results."""
        self.add_slice(s.to_slice())

    def add_slice(self, s: Slice) -> None:
        """Accumulate one timeslice's readings (the hot path: see GroupAcc for how counts add up)."""
        dur = s.duration if s.duration > 0 else 0.0
        cum0 = self._cum
        current = self._current
        for r in s.readings:
            ent = current.get(r.unit)
            if ent is None or ent.core != r.core or ent.cmg != r.cmg:
                ent = self._enter(r, cum0)
                if ent is None:
                    continue
            groups = ent.groups
            acc = groups.get(r.group)
            if acc is None:
                acc = groups[r.group] = GroupAcc()
            te = r.time_enabled
            tr = r.time_running
            if te > 0 and tr != te:  # the kernel multiplexed this group (or never ran it)
                # running_fraction(te, tr) for te > 0, inline (a call per reading costs more):
                # min(1.0, max(0.0, tr / te)).
                fraction = tr / te
                acc.counted += dur * ((fraction if fraction < 1.0 else 1.0) if fraction > 0.0 else 0.0)
            else:
                acc.counted += dur
            counts = r.counts
            mixed = acc.mixed
            if mixed is not None:  # per-name sums (see GroupAcc)
                for name, value in counts.items():
                    mixed[name] += value
            elif tuple(counts) == acc.names:  # the same events as before: add them C-level
                acc.values = list(map(add, acc.values, counts.values()))
            else:
                acc.add_other(counts)
        cum1 = cum0 + dur
        for key in s.ended:
            ent = current.pop(key, None)
            if ent is not None:
                ent.end = cum1
        self._cum = cum1
        self._slices += 1
        self._slices_since_frame += 1
        self._last_t = s.t
        self._active_group = s.group
        self._group_time[s.group] = self._group_time.get(s.group, 0.0) + dur
        self._group_time_run[s.group] = self._group_time_run.get(s.group, 0.0) + dur
        self._overhead_s = s.overhead_s

    def _enter(self, r: Reading, cum0: float) -> Entity | None:
        """A new entity for a unit seen for the first time, after it ended, or on a new binding."""
        parsed = self._units.get(r.unit, False)
        if parsed is False:
            try:
                parsed = split_unit_key(r.unit)
            except ValueError:
                parsed = None
                self._warnings.append(f"ignored readings of unknown unit {r.unit!r}")
            self._units[r.unit] = parsed
        if parsed is None:
            return None
        kind, ident = parsed  # type: ignore[misc]
        old = self._current.get(r.unit)
        if old is not None:
            old.end = cum0
        self._serial += 1
        ent = Entity(
            self._serial, r.unit, kind, ident, r.core, r.cmg, cum0, self._index_of_kind[kind], self._n
        )
        self._current[r.unit] = ent
        self._open[ent.serial] = ent
        return ent

    def add_mark(self, m: Mark) -> None:
        """Baseline marks set/clear the baseline; other marks do not concern the engine."""
        if m.kind == "baseline":
            self.mark_baseline()
        elif m.kind == "baseline-clear":
            self.clear_baseline()

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

    def _snapshot(self, window: WindowStats, t_to: float) -> _Snapshot:
        return _Snapshot(
            t_from=t_to - window.seconds,
            t_to=t_to,
            total=dict(window.total.metrics),
            cmgs={k: dict(v.metrics) for k, v in window.cmgs.items()},
            cores={k: dict(v.metrics) for k, v in window.cores.items()},
        )

    def _baseline_for(self, recent: WindowStats) -> Baseline | None:
        snap = self._baseline
        if snap is None:
            return None
        better = self._mset.better
        return Baseline(
            t_from=snap.t_from,
            t_to=snap.t_to,
            total=scope_deltas(snap.total, recent.total.metrics, better),
            cmgs=keyed_deltas(snap.cmgs, {k: v.metrics for k, v in recent.cmgs.items()}, better),
            cores=keyed_deltas(snap.cores, {k: v.metrics for k, v in recent.cores.items()}, better),
        )

    # -- metrics --------------------------------------------------------------------------------

    def evaluate_metrics(self, counts: Mapping[str, float], seconds: float) -> dict[str, float | None]:
        """Every metric of the profile over the given (scaled) counts and window length."""
        return self._mset.evaluate(counts, seconds)

    # -- frames ---------------------------------------------------------------------------------

    def frame(self, t: float) -> Frame:
        """Close the interval ending at ``t`` and return its frame."""
        return self._close(t, final=False)

    def final_frame(self, t: float) -> Frame:
        """Close the last interval; the top-level scopes (and ``groups``, ``overhead``) cover the run."""
        return self._close(t, final=True)

    def _close(self, t: float, *, final: bool) -> Frame:
        t = max(t, self._frame_t)
        seconds = t - self._frame_t
        previous_cum = self._frame_cum
        interval = self._collect(reset=True)
        self._recent.add(Interval(self._frame_t, t, previous_cum, self._cum, interval))
        self._recent.prune(t)
        recent_from, recent_contribs = self._recent.window()
        recent_seconds = max(0.0, t - recent_from)
        recent = self._as_window(self._scopes(recent_contribs, recent_seconds, threads=False), recent_seconds)
        run_contribs = [(e, e.present(0.0, self._cum), e.run) for e in self._open.values()]
        run_s = t - self._start  # the whole run: from the start of the data, not of the session

        if final:
            top = self._scopes(run_contribs, run_s, threads=True, archive=self._archive)
            run = self._as_window(top, run_s)
            interval_s = run_s
            groups = self._fractions(self._group_time_run, run_s)
            overhead = self._overhead_s / run_s if run_s > 0 else 0.0
        else:
            top = self._scopes(interval, seconds, threads=True)
            run_scopes = self._scopes(run_contribs, run_s, threads=False, archive=self._archive)
            run = self._as_window(run_scopes, run_s)
            interval_s = seconds
            groups = self._fractions(self._group_time, seconds)
            overhead = (self._overhead_s - self._overhead_at_frame) / seconds if seconds > 0 else 0.0

        if self._baseline_pending:
            self._baseline = self._snapshot(recent, t)
            self._baseline_pending = False
        warnings = tuple(self._warnings)
        self._warnings.clear()
        self._frame_t = t
        self._group_time = {}
        self._overhead_at_frame = self._overhead_s
        self._slices_since_frame = 0

        return Frame(
            t=t,
            interval=interval_s,
            overhead=max(0.0, overhead),
            total=top.get(_TOTAL) or self._empty(interval_s, "total"),
            cmgs=self._level(top, "cmg"),
            cores=self._level(top, "core"),
            threads=self._level(top, "thread"),
            recent=recent,
            run=run,
            groups=groups,
            active_group=self._active_group,
            baseline=self._baseline_for(recent),
            final=final,
            warnings=warnings,
        )

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
                add_to_archive(self._archive, ent, ent.present(0.0, hi), n)
                del self._open[ent.serial]
            self._frame_cum = hi
        return out

    def _recent_stats(self, t: float, extra: list[Contribution]) -> WindowStats:
        """The recent window ending at ``t`` plus the open interval's ``extra`` (for the baseline)."""
        if extra and self._frame_t < self._recent.cutoff(t):
            start, groups = self._frame_t, [extra]  # the open interval alone fills the window
        else:
            start, groups = self._recent.select(t)
            if extra:
                start = start if groups else self._frame_t
                groups = [*groups, extra]
        seconds = max(0.0, t - start)
        scopes = self._scopes(merge_contributions(groups), seconds, threads=False)
        return self._as_window(scopes, seconds)

    def _scopes(
        self,
        contributions: list[Contribution],
        seconds: float,
        *,
        threads: bool,
        archive: Mapping[ScopeKey, ScopeAcc] | None = None,
    ) -> dict[ScopeKey, ScopeStats]:
        accs = scope_accs(contributions, self._n, threads=threads, archive=archive)
        # Scopes are computed in one batch per level (metrics are evaluated column-wise over the
        # batch, see MetricSet.evaluate_columns). A thread alone on its core has the same stats as
        # that core: such duplicates are computed once, at the level of the first one seen.
        slots: dict[tuple[str, tuple[object, ...]], tuple[str, int]] = {}
        batches: dict[str, list[ScopeAcc]] = {}
        refs: list[tuple[ScopeKey, tuple[str, int]]] = []
        for key, acc in accs.items():
            level = key[0]
            family = "pe" if level in ("thread", "core") else level
            ident = (family, tuple(acc.members))
            slot = slots.get(ident)
            if slot is None:
                batch = batches.setdefault(level, [])
                slot = slots[ident] = (level, len(batch))
                batch.append(acc)
            refs.append((key, slot))
        stats = {level: self._stats(batch, seconds, level) for level, batch in batches.items()}
        return {key: stats[level][i] for key, (level, i) in refs}

    def _stats(self, accs: list[ScopeAcc], seconds: float, level: str) -> list[ScopeStats]:
        """The stats of several scopes of one level and window, computed column-wise.

        Per scope: counts and coverage of the events it counted (in profile order), rates, and
        the metrics of ``level`` with their coverage. The work runs per event or metric over all
        scopes at once (C-level zip/map) rather than per scope and event: a frame of a 48-core
        run computes about 160 scopes of 39 events and 36 metrics.
        """
        if len(accs) < _COLUMNS_FROM:
            return [self._stats_one(acc, seconds, level) for acc in accs]
        names = self._names
        mset = self._mset
        n = len(accs)
        totals = [acc.totals(self._n) for acc in accs]
        # Rows per scope -> columns per event (C-level zip).
        scaled_cols = list(zip(*(t[0] for t in totals), strict=True))
        counted_cols = list(zip(*(t[1] for t in totals), strict=True))
        present_cols = list(zip(*(t[2] for t in totals), strict=True))
        # coverage(counted, present) of readings.py (0.0 where nothing counted). Events of one
        # group share their counted and present seconds, so columns repeat: each distinct one is
        # computed once, and metric coverages over shared columns need no min(). (Found by tuple
        # equality, which stops at the first difference: hashing the columns costs more.)
        distinct: list[tuple[tuple[float, ...], tuple[float, ...], list[float]]] = []
        coverage_cols: list[list[float]] = []
        for cs, ps in zip(counted_cols, present_cols, strict=True):
            column = next((col for c0, p0, col in distinct if cs == c0 and ps == p0), None)
            if column is None:
                column = [
                    (c / p if c < p else 1.0) if c > 0.0 and p > 0.0 else 0.0
                    for c, p in zip(cs, ps, strict=True)
                ]
                distinct.append((cs, ps, column))
            coverage_cols.append(column)
        coverage_rows = list(zip(*coverage_cols, strict=True))
        # Event columns for the formulas: the scaled count per scope, None where not counted.
        known: dict[str, Sequence[float | None]] = {}
        everywhere = True  # is every event counted by all scopes or by none?
        for name, scaled_col, counted_col in zip(names, scaled_cols, counted_cols, strict=True):
            if min(counted_col) > 0.0:
                known[name] = scaled_col
            elif max(counted_col) > 0.0:
                everywhere = False
                known[name] = [v if c > 0.0 else None for v, c in zip(scaled_col, counted_col, strict=True)]
        metric_names = mset.names_at(level)
        values = mset.evaluate_columns(known, seconds, n, level)
        coverages = mset.coverage_columns(coverage_cols, n, level)
        value_rows = list(zip(*values, strict=True)) if values else [()] * n
        coverage_of_metrics = list(zip(*coverages, strict=True)) if coverages else [()] * n
        split = mset.split_at(level)
        inverse = 1.0 / seconds if seconds > 0 else 0.0
        shared = (
            self._picker(tuple(i for i, name in enumerate(names) if name in known)) if everywhere else None
        )
        out: list[ScopeStats] = []
        for (scaled, counted, _), vector, metric_values, metric_coverage in zip(
            totals, coverage_rows, value_rows, coverage_of_metrics, strict=True
        ):
            keys, pick = shared or self._picker(tuple(i for i, c in enumerate(counted) if c > 0.0))
            picked = pick(scaled)
            counts = dict(zip(keys, picked, strict=True))
            # Events first, then metrics: a later duplicate key overwrites in place, as update() did.
            cov = dict(zip(keys + metric_names, pick(vector) + metric_coverage, strict=True))
            rates = dict(zip(keys, map(mul, picked, repeat(inverse)), strict=True)) if seconds > 0 else {}
            metrics = dict(zip(metric_names, metric_values, strict=True))
            out.append(ScopeStats(counts, rates, metrics, cov, split, seconds))
        return out

    def _stats_one(self, acc: ScopeAcc, seconds: float, level: str) -> ScopeStats:
        """:meth:`_stats` of one scope with the per-scope closures (cheaper for a few scopes)."""
        scaled, counted, present = acc.totals(self._n)
        # coverage(counted, present) of readings.py, over the vector (0.0 where nothing counted).
        vector = [
            (c / p if c < p else 1.0) if c > 0.0 and p > 0.0 else 0.0
            for c, p in zip(counted, present, strict=True)
        ]
        keys, pick = self._picker(tuple(i for i, c in enumerate(counted) if c > 0.0))
        picked = pick(scaled)
        counts = dict(zip(keys, picked, strict=True))
        cov = dict(zip(keys, pick(vector), strict=True))
        metrics = self._mset.evaluate(counts, seconds, level)
        cov.update(self._mset.coverage_vector(vector, level))
        rates = dict(zip(keys, map(mul, picked, repeat(1.0 / seconds)), strict=True)) if seconds > 0 else {}
        return ScopeStats(counts, rates, metrics, cov, self._mset.split_at(level), seconds)

    def _picker(
        self, where: tuple[int, ...]
    ) -> tuple[tuple[str, ...], Callable[[Sequence[float]], tuple[float, ...]]]:
        """Names of the event positions ``where`` and a C-level getter of their values (cached:
        scopes of a run count few distinct sets of events)."""
        found = self._pickers.get(where)
        if found is None:
            if len(self._pickers) >= 256:
                self._pickers.clear()
            keys = tuple(self._names[i] for i in where)
            if len(where) == 1:
                (only,) = where
                found = (keys, lambda values: (values[only],))
            elif where:
                found = (keys, itemgetter(*where))
            else:
                found = (keys, lambda values: ())
            self._pickers[where] = found
        return found

    def _empty(self, seconds: float, level: str) -> ScopeStats:
        return self._stats([ScopeAcc()], seconds, level)[0] if self._n else EMPTY_SCOPE

    def _as_window(self, scopes: Mapping[ScopeKey, ScopeStats], seconds: float) -> WindowStats:
        return WindowStats(
            seconds=seconds,
            total=scopes.get(_TOTAL) or self._empty(seconds, "total"),
            cmgs=self._level(scopes, "cmg"),
            cores=self._level(scopes, "core"),
        )

    @staticmethod
    def _level(scopes: Mapping[ScopeKey, ScopeStats], level: str) -> dict[str, ScopeStats]:
        keys = sorted((k for lv, k in scopes if lv == level), key=_sort_key)
        return {k: scopes[(level, k)] for k in keys}

    @staticmethod
    def _fractions(times: Mapping[str, float], seconds: float) -> dict[str, float]:
        if seconds <= 0:
            return {}
        return {group: min(1.0, d / seconds) for group, d in times.items()}
