"""A profile's metrics compiled once: evaluation order, input events, split flags, scope levels.

Metrics are evaluated in profile order over scaled event counts, the profile's constants,
``SECONDS`` and the metrics before them. Compiling works out once what every frame needs: each
metric's input events (direct or through referenced metrics, which set its coverage), whether it is
*split* (no single group counts all its inputs, so a phase change can skew it), and the scope levels
it is computed at.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import isfinite
from operator import add, itemgetter, mul, neg, sub, truediv
from typing import Any

from sectormon.errors import DataError
from sectormon.profiles.expr import EVAL_FAILURES, Binary, Call, Compiled, ExprError, Name, Node, Num, parse
from sectormon.profiles.model import Profile

LEVELS = ("thread", "core", "cmg", "total")

LEVELS_OF_SCOPE: Mapping[str, frozenset[str]] = {
    "any": frozenset(LEVELS),
    "core": frozenset(("thread", "core")),
    "cmg": frozenset(("cmg", "total")),
    "total": frozenset(("total",)),
}

SECONDS = "SECONDS"


# A column holds one value per scope; ``None`` where the value is unknown (n/a).
Column = Sequence[Any]
ColumnEnv = Mapping[str, Column | None]
ColumnFn = Callable[[ColumnEnv, int], Column | None]


@dataclass(frozen=True, slots=True)
class CompiledMetric:
    name: str
    fn: Compiled
    inputs: tuple[str, ...]  # events read directly or through referenced metrics
    split: bool
    better: str
    levels: frozenset[str]
    columns: ColumnFn  # the same formula over many scopes at once (see evaluate_columns)


class MetricSet:
    """Every metric of a profile, ready to evaluate many times per frame."""

    def __init__(self, profile: Profile, constants: Mapping[str, float] | None = None) -> None:
        self.profile = profile
        self.constants: dict[str, float] = {**profile.constants, **(constants or {})}
        where = profile.source or f"profile {profile.name}"
        parsed = {}
        for m in profile.metrics:
            try:
                parsed[m.name] = parse(m.formula)
            except ExprError as exc:
                raise DataError(where, None, f"metric {m.name}: {exc}", "fix the formula") from None
        inputs = _transitive_inputs(profile, {k: e.names for k, e in parsed.items()})
        group_sets = [frozenset(g.events) for g in profile.groups]
        compiled: list[CompiledMetric] = []
        for mdef in profile.metrics:
            ins = inputs[mdef.name]
            split = len(ins) > 1 and not any(set(ins) <= g for g in group_sets)
            levels = LEVELS_OF_SCOPE.get(mdef.scope, LEVELS_OF_SCOPE["any"])
            expr = parsed[mdef.name]
            compiled.append(
                CompiledMetric(mdef.name, expr.fn, ins, split, mdef.better, levels, _column_fn(expr.tree))
            )
        self.metrics: tuple[CompiledMetric, ...] = tuple(compiled)
        self.names: tuple[str, ...] = tuple(m.name for m in compiled)
        self.split: frozenset[str] = frozenset(m.name for m in compiled if m.split)
        self.better: dict[str, str] = {m.name: m.better for m in compiled}
        self.inputs: dict[str, tuple[str, ...]] = {m.name: m.inputs for m in compiled}
        self._by_level = {
            level: tuple((m.name, m.fn) for m in compiled if level in m.levels) for level in LEVELS
        }
        self._all = tuple((m.name, m.fn) for m in compiled)
        self._columns_at = {
            level: tuple((m.name, m.columns) for m in compiled if level is None or level in m.levels)
            for level in (*LEVELS, None)
        }
        # Coverage by event position (the profile's event order): metrics sharing one set of input
        # events share one computation, done with a C-level itemgetter over a coverage vector.
        self.event_names: tuple[str, ...] = tuple(profile.events)
        position = {name: i for i, name in enumerate(self.event_names)}
        self._cov_plan = {
            level: _coverage_plan([m for m in compiled if level is None or level in m.levels], position)
            for level in (*LEVELS, None)
        }
        self._cov_sets = {
            level: _coverage_sets([m for m in compiled if level is None or level in m.levels], position)
            for level in (*LEVELS, None)
        }
        self._split_at: dict[str | None, frozenset[str]] = {
            level: frozenset(m.name for m in compiled if m.split and (level is None or level in m.levels))
            for level in (*LEVELS, None)
        }

    def evaluate(
        self, counts: Mapping[str, float], seconds: float, level: str | None = None
    ) -> dict[str, float | None]:
        """Metric values for one scope, in profile order; ``level=None`` computes every metric."""
        env: dict[str, float | None] = dict(self.constants)
        env.update(counts)
        env[SECONDS] = seconds
        out: dict[str, float | None] = {}
        inf = _INF
        failures = EVAL_FAILURES
        for name, fn in self._all if level is None else self._by_level[level]:
            try:
                value: float | None = fn(env)
            except failures:
                value = None
            else:
                if value is not None and not -inf < value < inf:
                    value = None
            env[name] = value
            out[name] = value
        return out

    def names_at(self, level: str | None) -> tuple[str, ...]:
        """The metrics computed at ``level``, in profile order (all of them for ``None``)."""
        return tuple(name for name, _ in self._columns_at[level])

    def evaluate_columns(
        self, counts: Mapping[str, Column], seconds: float | Sequence[float], n: int, level: str | None = None
    ) -> list[Column]:
        """:meth:`evaluate` for ``n`` scopes at once, column by column.

        ``counts`` maps each event to its scaled count per scope (``None`` where the scope did not
        count it); ``seconds`` is the window length of all scopes or one per scope. Returns one
        column per metric of :meth:`names_at`. Evaluating a formula once over all scopes runs its
        operators as C-level ``map`` calls instead of one closure call per operator and scope; the
        values are the very same float operations, bit for bit.
        """
        # None for a name = unknown in every scope (see _column_fn).
        env: dict[str, Column | None] = {name: [value] * n for name, value in self.constants.items()}
        for name, column in counts.items():
            if column.count(None) == n:
                continue  # counted nowhere: absent, as from each scope's counts
            const = self.constants.get(name)
            # An event shadows a constant of the same name only where it was counted (as in evaluate).
            env[name] = column if const is None else [const if v is None else v for v in column]
        env[SECONDS] = list(seconds) if isinstance(seconds, Sequence) else [seconds] * n
        out: list[Column] = []
        inf = _INF
        for name, fn in self._columns_at[level]:
            raw = fn(env, n)
            if raw is None:
                env[name] = None
                out.append([None] * n)
                continue
            try:
                # C-level check of the common case: a sum of floats is finite only if every one of
                # them is (an inf or nan makes it inf or nan); a false alarm (finite values whose
                # sum overflows) only takes the per-value path below.
                finite = isfinite(sum(raw))
            except (TypeError, OverflowError):  # None (unknown) in some scope, or a huge int
                finite = False
            column = raw if finite else [v if v is not None and -inf < v < inf else None for v in raw]
            env[name] = column
            out.append(column)
        return out

    def coverage_columns(self, coverage: Sequence[Column], n: int, level: str | None = None) -> list[Column]:
        """:meth:`coverage_vector` for ``n`` scopes at once: ``coverage[i]`` is event ``i``'s
        coverage per scope (profile event order); one column per metric of :meth:`names_at`."""
        sets, spread = self._cov_sets[level]
        minimums: list[Column] = []
        # Minimums already folded, by the ids of their columns (sorted: coverages are never NaN
        # nor -0.0, so the minimum of a set of columns does not depend on the order folded).
        folded: dict[tuple[int, ...], Column] = {}
        for idx in sets:
            if not idx:
                minimums.append([1.0] * n)
                continue
            # Inputs often share one column object (events of a group): the same values, no min.
            by_id = {id(coverage[i]): coverage[i] for i in idx}
            ids = sorted(by_id)
            column = by_id[ids[0]]
            for k in range(1, len(ids)):
                done = folded.get(tuple(ids[: k + 1]))
                if done is None:
                    other = by_id[ids[k]]
                    # min() as a left fold; spelled out because a builtin min() call per scope
                    # and set costs five times this.
                    done = folded[tuple(ids[: k + 1])] = [
                        y if y < x else x for x, y in zip(column, other, strict=True)
                    ]
                column = done
            minimums.append(column)
        return [minimums[slot] for slot in spread]

    def coverage(self, event_coverage: Mapping[str, float], level: str | None = None) -> dict[str, float]:
        """Coverage of the metrics computed at ``level``: the minimum over their input events."""
        vector = [event_coverage.get(name, 0.0) for name in self.event_names]
        return self.coverage_vector(vector, level)

    def coverage_vector(self, vector: list[float], level: str | None = None) -> dict[str, float]:
        """:meth:`coverage` from event coverages by position (0.0 for events not counted)."""
        getters, names, spread = self._cov_plan[level]
        values = [min(getter(vector)) for getter in getters]
        return dict(zip(names, spread(values), strict=True))

    def split_at(self, level: str | None) -> frozenset[str]:
        """The split metrics among those computed at ``level``."""
        return self._split_at[level]


_INF = float("inf")

_Getter = Callable[[list[float]], Any]
_CoveragePlan = tuple[list[_Getter], tuple[str, ...], Callable[[list[float]], Any]]


def _no_inputs(vector: list[float]) -> tuple[float]:
    return (1.0,)


def _coverage_plan(metrics: list[CompiledMetric], position: Mapping[str, int]) -> _CoveragePlan:
    """Getters of each distinct input set's coverages, the metric names, and how to spread the
    per-set minimums back over the metrics (in order)."""
    sets: dict[tuple[int, ...], int] = {}
    getters: list[_Getter] = []
    spread: list[int] = []
    for m in metrics:
        idx = tuple(position[e] for e in m.inputs if e in position)
        slot = sets.get(idx)
        if slot is None:
            slot = sets[idx] = len(getters)
            # itemgetter of one index returns a scalar: repeat it so min() always gets a tuple.
            getters.append(itemgetter(*(idx * 2 if len(idx) == 1 else idx)) if idx else _no_inputs)
        spread.append(slot)
    names = tuple(m.name for m in metrics)
    if len(spread) > 1:
        return getters, names, itemgetter(*spread)
    if len(spread) == 1:
        return getters, names, itemgetter(slice(0, 1))  # one metric, one set: values[0:1]
    return getters, names, lambda values: ()


def _coverage_sets(
    metrics: list[CompiledMetric], position: Mapping[str, int]
) -> tuple[list[tuple[int, ...]], list[int]]:
    """The distinct input sets (event positions) of ``metrics`` and, per metric, its set's slot."""
    sets: dict[tuple[int, ...], int] = {}
    spread: list[int] = []
    for m in metrics:
        idx = tuple(position[e] for e in m.inputs if e in position)
        spread.append(sets.setdefault(idx, len(sets)))
    return list(sets), spread


# -- column evaluation ------------------------------------------------------------------------
# Each node of a formula's syntax tree becomes a function of (column environment, n) returning
# its value per scope, or None when it is unknown in every scope (an event no scope of the batch
# counted: nothing to compute). The operators are the scalar closures' own (operator.add for
# ``+``, ..., the builtins min/max), applied by ``map`` over whole columns; an operand that is None
# or a division by zero in one scope makes only that scope's value None, as in the scalar closures.

_COLUMN_OPS: dict[str, Callable[[Any, Any], Any]] = {"+": add, "-": sub, "*": mul, "/": truediv}


def _apply(op: Callable[..., Any], *columns: Any) -> Column | None:
    """``op`` element-wise; where it fails the value is None (unknown), the rest is unaffected."""
    if None in columns:
        return None
    try:
        return list(map(op, *columns))  # the common case: every input known, one C-level loop
    except EVAL_FAILURES:
        out = [_safe(op, args) for args in zip(*columns, strict=True)]
        return None if out.count(None) == len(out) else out


def _safe(op: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return op(*args)
    except EVAL_FAILURES:
        return None


def _column_fn(node: Node) -> ColumnFn:
    if isinstance(node, Num):
        value = node.value
        return lambda env, n: [value] * n
    if isinstance(node, Name):
        name = node.name
        return lambda env, n: env.get(name)
    if isinstance(node, Binary):
        op = _COLUMN_OPS[node.op]
        if isinstance(node.left, Name) and isinstance(node.right, Name):  # ``A / B``, the most common
            x, y = node.left.name, node.right.name
            return lambda env, n: _apply(op, env.get(x), env.get(y))
        left, right = _column_fn(node.left), _column_fn(node.right)
        return lambda env, n: _apply(op, left(env, n), right(env, n))
    if isinstance(node, Call):
        args = [_column_fn(arg) for arg in node.args]
        if len(args) == 1:
            return args[0]
        pick = min if node.func == "min" else max
        return lambda env, n: _apply(pick, *[arg(env, n) for arg in args])
    operand = _column_fn(node.operand)  # Unary: "-" is the only unary operator the parser keeps
    return lambda env, n: _apply(neg, operand(env, n))


def _transitive_inputs(profile: Profile, names: Mapping[str, frozenset[str]]) -> dict[str, tuple[str, ...]]:
    """Events each metric depends on, following metric references (cycles are cut, not followed)."""
    result: dict[str, tuple[str, ...]] = {}

    def visit(metric: str, stack: frozenset[str]) -> set[str]:
        if metric in result:
            return set(result[metric])
        events: set[str] = set()
        for name in names.get(metric, ()):
            if name in profile.events:
                events.add(name)
            elif name in names and name not in stack:
                events |= visit(name, stack | {name})
        return events

    for metric in names:
        result[metric] = tuple(sorted(visit(metric, frozenset((metric,)))))
    return result


_CACHE: dict[int, tuple[Profile, Mapping[str, float] | None, MetricSet]] = {}


def evaluate_metrics(
    profile: Profile,
    counts: Mapping[str, float],
    seconds: float,
    constants: Mapping[str, float] | None = None,
) -> dict[str, float | None]:
    """Every metric of ``profile`` over one set of (already scaled) counts and a window length.

    For callers outside the engine (the simulator's summary, compare, the fapp report). ``constants``
    are added to (and override) the profile's. Scope restrictions are not applied here.
    """
    key = dict(constants) if constants else None
    cached = _CACHE.get(id(profile))
    if cached is not None and cached[0] is profile and cached[1] == key:
        mset = cached[2]
    else:
        mset = MetricSet(profile, key)
        if len(_CACHE) >= 16:
            _CACHE.clear()
        _CACHE[id(profile)] = (profile, key, mset)
    return mset.evaluate(counts, seconds)
