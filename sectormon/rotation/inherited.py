"""Rows of inherited groups without double counting: each count appears in exactly one row.

A target's root threads count through inherited groups (``Unit.inherit``): the kernel sums into
them every thread and process they start, from its first instruction, the ended ones included.
Threads found later by polling also get groups of their own, so their core and CMG are known; their
counts are then in two rows. This ledger takes them out of their family's inherited rows, so the
root rows keep what no other row has (the roots' own work and that of threads too short-lived to be
found) and the sum over all rows equals the inherited totals, as ``perf stat`` reports them.

The two kinds of group are switched by separate ioctls, microseconds apart, so a slice can find a
found thread counting slightly more than its share of the inherited total: that deficit is carried
to the next slice instead of making a row negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sectormon.data.readings import Row, Unit


@dataclass(slots=True)
class _Owed:
    """Counts to take out of one family's inherited rows of one group (values in its names' order)."""

    values: list[int] = field(default_factory=list)
    enabled: int = 0
    running: int = 0

    def add(self, values: Sequence[int], enabled: int, running: int) -> None:
        if len(self.values) < len(values):
            self.values.extend([0] * (len(values) - len(self.values)))
        for index, value in enumerate(values):
            self.values[index] += value
        self.enabled += enabled
        self.running += running

    @property
    def empty(self) -> bool:
        return not (self.enabled or self.running or any(self.values))


def _take(have: int, owed: int) -> tuple[int, int]:
    """What is left of ``have`` after paying ``owed`` from it, and what is still owed."""
    paid = min(have, owed)
    return have - paid, owed - paid


class InheritedRows:
    """Which units count inside a family's inherited groups, and the rows with that taken out."""

    def __init__(self, exempt: frozenset[str] = frozenset()) -> None:
        """``exempt``: groups that are never opened inherited (``--proxy``'s rotating groups, on
        stand-ins only): their rows owe nothing and pay nothing."""
        self._exempt = exempt
        self._roots: dict[str, int] = {}  # unit key -> family, for units with inherited groups
        self._found: dict[str, int] = {}  # unit key -> family, for threads counted twice
        self._owed: dict[tuple[str, int], _Owed] = {}  # (group, family) -> deficit carried

    def track(self, unit: Unit) -> None:
        """Note a unit whose groups were just opened."""
        if unit.family is None:
            return
        if unit.inherit:
            self._roots[unit.key] = unit.family
        else:
            self._found[unit.key] = unit.family

    def forget(self, key: str) -> None:
        """A unit whose groups were closed (what it owes its family stays owed)."""
        self._roots.pop(key, None)
        self._found.pop(key, None)

    def settle(self, rows: tuple[Row, ...]) -> tuple[Row, ...]:
        """``rows`` with each inherited row reduced by what its family's found threads counted."""
        if not self._found and not self._owed:
            return rows
        owed = self._owed
        found = self._found
        for row in rows:
            family = found.get(row.unit)
            if family is not None and row.names and row.group not in self._exempt:
                owed.setdefault((row.group, family), _Owed()).add(
                    row.values, row.time_enabled, row.time_running
                )
        if not owed:
            return rows
        roots = self._roots
        settled: list[Row] = []
        for row in rows:
            family = roots.get(row.unit)
            debt = owed.get((row.group, family)) if family is not None and row.names else None
            if debt is None:
                settled.append(row)
                continue
            settled.append(self._pay(row, debt))
        self._owed = {key: debt for key, debt in owed.items() if not debt.empty}
        return tuple(settled)

    @staticmethod
    def _pay(row: Row, debt: _Owed) -> Row:
        paid_values = []
        for index, value in enumerate(row.values):
            if index < len(debt.values):
                value, debt.values[index] = _take(value, debt.values[index])
            paid_values.append(value)
        enabled, debt.enabled = _take(row.time_enabled, debt.enabled)
        running, debt.running = _take(row.time_running, debt.running)
        if running > enabled:  # the kernel never reports more running than enabled time
            debt.running += running - enabled
            running = enabled
        return row._replace(time_enabled=enabled, time_running=running, values=tuple(paid_values))
