"""What the sampler asks of a rotation mode: the interface of the sync and kernel strategies.

The sampler's loop wakes, polls the units and publishes slices the same way in both modes; what
differs is which groups count when, how often a slice is read, and what a unit found between two
reads starts counting. A :class:`RotationStrategy` owns exactly that, over the sampler's
:class:`~sectormon.rotation.counters.OpenUnits`, so each mode reads on its own
(:mod:`sectormon.rotation.sync`, :mod:`sectormon.rotation.kernel`) and a budget change from one to
the other swaps the object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sectormon.data.readings import Row
from sectormon.rotation.plan import PlannedGroup

Settle = Callable[[tuple[Row, ...]], tuple[Row, ...]]
"""Takes found threads' counts out of their family's inherited rows
(:meth:`sectormon.rotation.inherited.InheritedRows.settle`)."""


@dataclass(frozen=True, slots=True)
class SliceEnd:
    """What a slice's end read: its rows (settled), the ``Slice.group`` it names, and the units
    found ended since the previous slice whose last rows are among them."""

    rows: tuple[Row, ...]
    group: str
    ended: tuple[str, ...] = ()


class RotationStrategy(Protocol):
    """One rotation mode over the sampler's open units."""

    mode: str  # the Rotation.mode it implements (sync, kernel)

    @property
    def running(self) -> PlannedGroup | None:
        """The rotating group a unit opened now starts counting (``None``: the strategy enables
        new units itself, see :meth:`units_opened`)."""
        ...

    def begin(self) -> None:
        """Enable what counts from the first slice on (the units are open)."""

    def tick(self, timeslice: float) -> float:
        """Seconds between two wake-ups of the sampler for a slice of ``timeslice``."""
        ...

    def slice_due(self, elapsed: float, timeslice: float, stopping: bool) -> bool:
        """Whether this wake-up, ``elapsed`` seconds into the slice, ends it (else the sampler
        only follows the units, :meth:`hold`)."""
        ...

    def hold(self, ended: tuple[str, ...]) -> None:
        """Between two reads: read the units found ended now, before their groups close, and
        keep their rows for the slice's end."""

    def end_slice(self, stopping: bool) -> SliceEnd:
        """Read the slice and start the next one (``stopping``: the last, nothing starts)."""
        ...

    def units_opened(self) -> None:
        """After a poll: start what the units opened by it count, if :attr:`running` did not."""
