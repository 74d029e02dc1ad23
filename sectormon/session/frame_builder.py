"""Frames from an ordered stream of slices and marks, one per interval of stream time.

The builder feeds the engine and asks it for a frame whenever the :class:`FrameClock` says one is
due, so a live session and a replay of its recording build the same frames from the same engine.
What a replay needs besides (frames built quietly before ``--from``, a seek that builds only the
frame it shows, the batches of a reader process) is decided here, by stream time, so the engine
only ever closes intervals.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sectormon.data.frames import Frame
from sectormon.data.readings import Mark, Slice
from sectormon.data.regions import RegionsReading
from sectormon.metrics.batch import RowBatch
from sectormon.metrics.engine import MetricsEngine
from sectormon.session.frame_clock import FrameClock

if TYPE_CHECKING:
    from sectormon.data.samples import SampleBatch


class FrameBuilder:
    """Turns an ordered stream of slices and marks into frames, one per interval of stream time
    (:class:`FrameClock` says when)."""

    def __init__(self, engine: MetricsEngine, interval: float, *, start: float = 0.0) -> None:
        self.engine = engine
        self.interval = interval
        self.clock = FrameClock(interval, start)
        self.last_t = start
        self.frames = 0
        self.quiet_until = -math.inf
        self.seek_target: float | None = None
        self.build_next = False
        self.skipped_last = False

    def quiet(self, until: float) -> None:
        """Frames due before stream time ``until`` are not built, only their intervals closed
        (:meth:`MetricsEngine.skip_frame`): what a replay from ``--from``, or compare's run to the
        final frame, would drop unseen. The frames from ``until`` on are the same."""
        self.quiet_until = until

    def seek_quietly(self, target: float | None) -> None:
        """Fast-forward to ``target`` (``None``: play normally again), building only the frames
        a seek shows: the last one due up to ``target``, once the clock tells it is the last (no
        slice up to ``target`` reaches the next one), and the next one due after
        :attr:`build_next` is set (a replay snapshots the builder there). The others are skipped
        as :meth:`quiet` skips them; :attr:`skipped_last` says whether the newest due frame was.
        After a gap in the slices the frame skipped last can be the last one up to ``target``
        after all: the caller replays from a snapshot to show it."""
        self.seek_target = target
        self.build_next = False

    def feed(self, item: Slice | Mark | SampleBatch | RegionsReading) -> list[Frame]:
        """Frames due with this item. Sample batches count no event: a sampling session's builder
        (:class:`sectormon.session.hotspots.SampledFrameBuilder`) aggregates them."""
        if isinstance(item, Mark):
            self.engine.add_mark(item)
            return []
        if isinstance(item, RegionsReading):
            self.engine.add_regions(item.snapshot)
            return []
        if not isinstance(item, Slice):
            return []
        self.engine.add_slice(item)
        self.last_t = item.t
        if not self.clock.due(item.t):
            return []
        return self._frame(item.t)

    def _frame(self, t: float) -> list[Frame]:
        target = self.seek_target
        if t < self.quiet_until or (
            target is not None and not self.build_next and self.clock.reaches_next(target)
        ):
            self.engine.skip_frame(t)
            self.skipped_last = True
            return []
        self.skipped_last = False
        self.build_next = False
        self.frames += 1
        return [self.engine.frame(t)]

    def feed_batch(self, batch: RowBatch) -> list[Frame]:
        """:meth:`feed` for the slices of a :class:`RowBatch` (what a replay's reader process
        sends): only its last slice may close a frame, as the reader's own clock decided."""
        if not batch.slices:
            return []
        self.engine.add_batch(batch)
        t = batch.slices[-1][0]
        self.last_t = t
        due = self.clock.due(t)
        if due != batch.frame_due:
            raise ValueError(f"a reader batch ending at t={t:g} is out of step with the frame clock")
        if not due:
            return []
        return self._frame(t)

    def finish(self, t: float | None = None) -> Frame:
        """The final frame: the whole run, flagged ``final``."""
        return self.engine.final_frame(self.last_t if t is None else t)
