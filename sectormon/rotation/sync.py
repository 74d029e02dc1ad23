"""Lock-step rotation (``--rotation sync``): every unit counts the same group in the same slice.

At the end of each slice every unit, one after the other, stops the running group and starts the
next one at once, before any read: a unit's groups then follow each other with no gap, and what
the reads, the polling and the downstream work cost is time the next group counts instead of time
nobody counts (a gap counted as if the next group had run would make every count low). Then the
group that just stopped is read, with the always-on group. Two ioctls per unit and slice are the
price, which the kernel strategy (:mod:`sectormon.rotation.kernel`) does without.
"""

from __future__ import annotations

from sectormon.rotation.counters import OpenUnits
from sectormon.rotation.plan import ALWAYS, SYNC, PlannedGroup, RotationPlan
from sectormon.rotation.strategy import Settle, SliceEnd


class SyncRotation:
    """Round-robin over the plan's groups, one group on every unit per slice."""

    mode = SYNC

    def __init__(self, units: OpenUnits, plan: RotationPlan, settle: Settle) -> None:
        self._units = units
        self._plan = plan
        self._settle = settle
        self._index = 0  # slices started: the running group is the plan's group at this index
        self._current = plan.group_at(0)

    @property
    def running(self) -> PlannedGroup | None:
        return self._current

    def begin(self) -> None:
        self._units.enable(self._plan.always)
        self._units.enable(self._current)

    def tick(self, timeslice: float) -> float:
        return timeslice

    def slice_due(self, elapsed: float, timeslice: float, stopping: bool) -> bool:
        return True  # it wakes only at a slice's end

    def hold(self, ended: tuple[str, ...]) -> None:
        raise AssertionError("sync rotation reads at every wake-up")

    def end_slice(self, stopping: bool) -> SliceEnd:
        done = self._current
        always = self._plan.always
        if stopping:
            self._units.disable(done)
            self._units.disable(always)
        else:
            self._index += 1
            self._current = self._plan.group_at(self._index)
            self._units.switch(done, self._current)
        rows = self._units.read(done) + self._units.read(always, present=done is None)
        return SliceEnd(self._settle(rows), done.name if done is not None else ALWAYS)

    def units_opened(self) -> None:
        """New units started :attr:`running` and the always-on group as they were opened."""
