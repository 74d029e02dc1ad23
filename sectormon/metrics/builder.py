"""Frames from an ordered stream of slices and marks, one per interval of stream time.

When a frame is due is decided purely from the times in the stream (:class:`FrameClock`), so a
live session and a replay of its recording build the same frames from the same engine.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sectormon.data.frames import Frame, FrameClock
from sectormon.data.header import Header
from sectormon.data.readings import Mark, Slice
from sectormon.metrics.batch import RowBatch
from sectormon.metrics.engine import MetricsEngine
from sectormon.profiles.model import Profile

if TYPE_CHECKING:
    from sectormon.data.samples import SampleBatch


def build_engine(profile: Profile, header: Header) -> MetricsEngine:
    """The engine a header describes (live and replay must build it the same way)."""
    return MetricsEngine(
        profile,
        recent_seconds=header.options.recent_window,
        unavailable=dict(header.unavailable),
        start=header.stream_start,
        rotation=header.rotation,
        own_time=_scales_by_own_time(header),
        # A launched command is held before exec until its counters are on: it starts at 0 s of
        # CPU with the session (a recording started later does not know the target's CPU then).
        target_cpu_at_start=0.0 if _launched_from_start(header) else None,
        proxy=header.proxy,
    )


def _scales_by_own_time(header: Header) -> bool:
    """Whether each unit's rotated counts are scaled by its own ``time_enabled/time_running``.

    Recordings that carry ``rotation`` in their header were made by a sampler that records it,
    and are read that way. Older recordings replay as they were first reported, with each reading
    standing for its whole slice, so a figure quoted from one does not move on a later replay.
    fapp's event sets are separate runs of one region, each row on its own clock: never own time.
    """
    return header.records_rotation and not header.source.separate_runs


def _launched_from_start(header: Header) -> bool:
    return header.target.mode == "command" and not header.recording_started


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

    def feed(self, item: Slice | Mark | SampleBatch) -> list[Frame]:
        """Frames due with this item. Sample batches count no event: a sampling session's builder
        (:class:`sectormon.session.hotspots.SampledFrameBuilder`) aggregates them."""
        if isinstance(item, Mark):
            self.engine.add_mark(item)
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
