"""Scope stats from event columns: counts, rates, metrics and coverage of many scopes at once.

The work runs per event or metric over all scopes of a batch (C-level zip/map, and
:meth:`MetricSet.evaluate_columns` for the formulas) rather than per scope and event: a frame of
a 48-core run computes about 160 scopes of 39 events and 36 metrics. What is left per scope is
a :class:`ScopeStats` holding its rows; its four dicts are built when first read
(:class:`sectormon.data.frames.RowScopeStats`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress, repeat
from operator import gt, itemgetter, mul

from sectormon.data.frames import RowScopeStats, ScopeStats
from sectormon.metrics.formulas import MetricSet

Column = Sequence[float]
# Event names at some positions, the same names followed by metric names, and a getter of the
# values at those positions.
Picker = tuple[tuple[str, ...], tuple[str, ...], Callable[[Sequence[float]], tuple[float, ...]]]


class StatsBuilder:
    """Builds :class:`ScopeStats` for batches of scopes of one profile (caches event pickers)."""

    def __init__(self, mset: MetricSet, names: tuple[str, ...]) -> None:
        self.mset = mset
        self.names = names
        self.positions = range(len(names))
        self._pickers: dict[tuple[tuple[int, ...], str], Picker] = {}

    def picker(self, where: tuple[int, ...], level: str) -> Picker:
        """Names of the event positions ``where`` (alone and followed by the metrics of ``level``)
        and a C-level getter of their values (cached: scopes of a run count few sets of events)."""
        found = self._pickers.get((where, level))
        if found is None:
            if len(self._pickers) >= 256:
                self._pickers.clear()
            keys = tuple(self.names[i] for i in where)
            pick: Callable[[Sequence[float]], tuple[float, ...]]
            if len(where) == 1:
                (only,) = where
                pick = lambda values: (values[only],)  # noqa: E731
            elif where:
                pick = itemgetter(*where)
            else:
                pick = lambda values: ()  # noqa: E731
            found = (keys, keys + self.mset.names_at(level), pick)
            self._pickers[(where, level)] = found
        return found

    def batch(
        self,
        scaled_cols: Sequence[Column],
        counted_cols: Sequence[Column],
        present_cols: Sequence[Column],
        seconds_col: Sequence[float],
        level: str,
        proxied_col: Sequence[Mapping[str, float | None] | None] | None = None,
    ) -> list[ScopeStats]:
        """Stats of ``len(seconds_col)`` scopes of ``level`` given per event: the sum of scaled
        counts, counted seconds and present seconds (of the entities that counted the event).

        Per scope: counts and coverage of the events it counted (in profile order), rates, and
        the metrics of ``level`` with their coverage; ``proxied_col``, per scope, the figures a
        ``--proxy`` session estimated there with their error bounds (``None``: none anywhere).
        """
        mset = self.mset
        n = len(seconds_col)
        # coverage(counted, present) of readings.py (0.0 where nothing counted). Events of one
        # group share their counted and present seconds, so columns repeat: each distinct one is
        # computed once (found by identity, else tuple equality, which stops at the first
        # difference: hashing the columns costs more), and so is whether its scopes counted it:
        # 2 all of them, 1 some, 0 none.
        distinct: list[tuple[Column, Column, list[float], int]] = []
        coverage_cols: list[list[float]] = []
        states: list[int] = []
        for cs, ps in zip(counted_cols, present_cols, strict=True):
            entry = None
            for seen in distinct:
                if (cs is seen[0] or cs == seen[0]) and (ps is seen[1] or ps == seen[1]):
                    entry = seen
                    break
            if entry is None:
                col = [
                    (c / p if c < p else 1.0) if c > 0.0 and p > 0.0 else 0.0
                    for c, p in zip(cs, ps, strict=True)
                ]
                entry = (cs, ps, col, 2 if min(cs) > 0.0 else 1 if max(cs) > 0.0 else 0)
                distinct.append(entry)
            coverage_cols.append(entry[2])
            states.append(entry[3])
        # Event columns for the formulas: the scaled count per scope, None where not counted.
        known: dict[str, Column | list[float | None]] = {}
        where: list[int] = []
        for i, name, scaled_col, counted_col, state in zip(
            self.positions, self.names, scaled_cols, counted_cols, states, strict=True
        ):
            if state == 2:
                known[name] = scaled_col
                where.append(i)
            elif state == 1:
                known[name] = [v if c > 0.0 else None for v, c in zip(scaled_col, counted_col, strict=True)]
        everywhere = 1 not in states  # is every event counted by all scopes or by none?
        metric_names = mset.names_at(level)
        values = mset.evaluate_columns(known, seconds_col, n, level)
        coverages = mset.coverage_columns(coverage_cols, n, level)
        value_rows = list(zip(*values, strict=True)) if values else [()] * n
        split = mset.split_at(level)
        make = RowScopeStats
        proxied = (None,) * n if proxied_col is None else proxied_col
        if everywhere:
            # Every scope counted the events at ``where``: rows of just those (and the metrics'
            # coverage after them) come straight from the columns, with no picking per scope.
            keys, keys_and_metrics, _ = self.picker(tuple(where), level)
            picked_cols = [scaled_cols[i] for i in where]
            counts_rows = list(zip(*picked_cols, strict=True)) if picked_cols else [()] * n
            coverage_rows = [coverage_cols[i] for i in where] + coverages
            cov_rows = list(zip(*coverage_rows, strict=True)) if coverage_rows else [()] * n
            rate_rows: list[Sequence[float] | None]
            if picked_cols and min(seconds_col) > 0:
                # rate = count * (1.0 / seconds), per event column over all scopes.
                inverses = [1.0 / seconds for seconds in seconds_col]
                rate_rows = list(zip(*[tuple(map(mul, col, inverses)) for col in picked_cols], strict=True))
            else:
                rate_rows = [
                    [v * (1.0 / seconds) for v in row] if seconds > 0 else None
                    for row, seconds in zip(counts_rows, seconds_col, strict=True)
                ]
            # No dict is built here: each scope's are built when first read (frames.ScopeStats).
            return list(
                map(
                    make,
                    repeat(keys),
                    counts_rows,
                    rate_rows,
                    repeat(metric_names),
                    value_rows,
                    repeat(keys_and_metrics),
                    cov_rows,
                    repeat(split),
                    seconds_col,
                    proxied,
                )
            )
        if scaled_cols:
            scaled_rows: Sequence[Sequence[float]] = list(zip(*scaled_cols, strict=True))
            counted_rows: Sequence[Sequence[float]] = list(zip(*counted_cols, strict=True))
            vectors: Sequence[Sequence[float]] = list(zip(*coverage_cols, strict=True))
        else:
            scaled_rows = counted_rows = vectors = [()] * n
        coverage_of_metrics = list(zip(*coverages, strict=True)) if coverages else [()] * n
        positions = self.positions
        out: list[ScopeStats] = []
        for scaled, counted, vector, metric_values, metric_coverage, seconds, proxied_figures in zip(
            scaled_rows,
            counted_rows,
            vectors,
            value_rows,
            coverage_of_metrics,
            seconds_col,
            proxied,
            strict=True,
        ):
            keys, keys_and_metrics, pick = self.picker(
                tuple(compress(positions, map(gt, counted, repeat(0.0)))), level
            )
            picked = pick(scaled)
            rates = None
            if seconds > 0:
                inverse = 1.0 / seconds
                rates = [v * inverse for v in picked]
            out.append(
                make(
                    keys,
                    picked,
                    rates,
                    metric_names,
                    metric_values,
                    keys_and_metrics,
                    pick(vector) + metric_coverage,
                    split,
                    seconds,
                    proxied_figures,
                )
            )
        return out
