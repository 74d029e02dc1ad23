"""Kernel rotation (``--rotation kernel``): the kernel's multiplexer rotates the groups.

Every group of every unit is enabled once and stays on; the PMU takes them in turns on the
kernel's own clock, and each read's ``time_enabled``/``time_running`` say how much of the slice a
group was on it. No ioctl per slice, so reading every group only once per (longer) slice is where
the cost goes. The units are still followed as often as sync rotation's default slice
(:data:`~sectormon.rotation.plan.KERNEL_POLL_EVERY`): a new unit starts all its groups at once, an
ended one is read before its fds close and its rows join the next slice.
"""

from __future__ import annotations

from sectormon.data.readings import Row
from sectormon.rotation.counters import OpenUnits
from sectormon.rotation.plan import KERNEL, KERNEL_POLL_EVERY, PlannedGroup
from sectormon.rotation.strategy import Settle, SliceEnd


class KernelRotation:
    """Every group on all the time; all of them read into one slice named ``kernel``."""

    mode = KERNEL

    def __init__(self, units: OpenUnits, settle: Settle) -> None:
        self._units = units
        self._settle = settle
        self._held_rows: tuple[Row, ...] = ()  # rows of units that ended between two reads
        self._held_ended: tuple[str, ...] = ()

    @property
    def running(self) -> PlannedGroup | None:
        return None  # a new unit starts every group at once (units_opened)

    def begin(self) -> None:
        """Every group on every unit on (after sync rotation: the running group stays on, the
        others join it)."""
        self._units.enable_all()

    def tick(self, timeslice: float) -> float:
        """At most :data:`KERNEL_POLL_EVERY`: units are followed as often as in sync rotation's
        default while every group is read only once per slice."""
        return min(timeslice, KERNEL_POLL_EVERY)

    def slice_due(self, elapsed: float, timeslice: float, stopping: bool) -> bool:
        # Half a tick early is on time: wake-ups fall a hair either side of the slice's end.
        return stopping or elapsed >= timeslice - 0.5 * self.tick(timeslice)

    def hold(self, ended: tuple[str, ...]) -> None:
        self._held_rows += self._settle(self._units.read_units(ended))
        self._held_ended += ended

    def end_slice(self, stopping: bool) -> SliceEnd:
        rows = self._settle(self._held_rows + self._units.read_all())
        ended = self._held_ended
        self._held_rows, self._held_ended = (), ()
        return SliceEnd(rows, KERNEL, ended)

    def units_opened(self) -> None:
        self._units.enable_all()
