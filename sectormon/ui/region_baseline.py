"""The run's regions at the moment of a baseline, kept by the UI for the Regions view's deltas.

The engine compares its rolling windows with the window marked as baseline
(:class:`~sectormon.data.frames.Baseline`); regions are cumulative tables with no rolling window,
so "against the baseline" means "since the baseline moment". :class:`RegionBaselines` remembers
the last frames' ``run.regions`` and, when a frame carries a baseline, takes the regions of the
newest frame it saw at or before the baseline's end (``Baseline.t_to``).

Kept here rather than in the engine because it is the smaller change: the engine, the frames'
JSON and the recordings stay as they are (old outputs replay byte for byte, no other front end
changes), and it follows every way a baseline is set (``b``, ``--baseline-after``, a replay's
marks) because it keys on the frame's baseline, not on the key press. Its cost: the base is the
frame before the baseline's end, up to one interval early (the view's title says its time), and
unknown when the UI saw no frame at or before it (a seek past the mark): the view then shows
values and says why. Pure data, no Textual.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from sectormon.data.frames import Baseline, Frame, RegionStats

SEEN_FRAMES = 64
"""Frames whose regions :class:`RegionBaselines` keeps to find the one at a baseline's end."""


@dataclass(frozen=True, slots=True)
class RegionBase:
    """The regions at a baseline: ``t`` is the frame they come from, ``t_to`` the baseline's end."""

    t: float
    t_to: float
    regions: Mapping[str, RegionStats]


class RegionBaselines:
    """The run's regions at the moment of the frames' baseline (see the module docstring)."""

    def __init__(self, length: int = SEEN_FRAMES) -> None:
        self._seen: deque[tuple[float, Mapping[str, RegionStats]]] = deque(maxlen=length)
        self._base: RegionBase | None = None

    def add(self, frame: Frame) -> None:
        """A frame reached the UI; time going back (a replay's seek) starts a new timeline."""
        if self._seen and frame.t < self._seen[-1][0]:
            self._seen.clear()
        self._seen.append((frame.t, frame.run.regions))

    def base_for(self, baseline: Baseline | None) -> RegionBase | None:
        """The regions at ``baseline``'s end; ``None`` without a baseline or when no frame at or
        before its end was seen. Kept once found: a replay seeking back and forth meets the same
        baseline again after its frames were dropped."""
        if baseline is None:
            return None
        if self._base is not None and self._base.t_to == baseline.t_to:
            return self._base
        earlier = [(t, regions) for t, regions in self._seen if t <= baseline.t_to]
        if not earlier:
            return None
        t, regions = earlier[-1]
        self._base = RegionBase(t, baseline.t_to, regions)
        return self._base
