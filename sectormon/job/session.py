"""A merged job on the TUI's timeline: play, pause, speed and seek over the job's frames.

Implements :class:`sectormon.session.control.ReplayControl`. The job's frames are made on this session's
thread as playback reaches them (:func:`sectormon.job.replay.job_frames`) and kept, so a seek
back shows a kept frame and a seek forward makes the frames up to the target: a long job played
to its end keeps all its frames in memory. A job has no baseline (compare two jobs with
``sectormon compare``); bookmarks are kept as marks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

from sectormon.data.frames import Frame
from sectormon.data.readings import Mark
from sectormon.errors import SectormonError
from sectormon.io.bookmarks import BookmarkFile
from sectormon.job.jobfile import open_job
from sectormon.job.replay import combiner, job_frames, job_header
from sectormon.session.control import ReplayControl
from sectormon.session.replay import default_time_scale
from sectormon.session.timeline import Anchor, TimelineSession


class JobReplaySession(TimelineSession):
    """A job file played for the TUI."""

    THREAD_NAME = "sectormon-job-replay"

    def __init__(
        self,
        path: str | Path,
        *,
        skip_bad: bool = False,
        speed: float = 1.0,
        on_warning: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stack = ExitStack()
        self.alignment = self._stack.enter_context(open_job(path, skip_bad=skip_bad))
        try:
            combiner(self.alignment)  # one profile for every node: fail before the TUI starts
        except Exception:
            self._stack.close()
            raise
        super().__init__(
            on_warning,
            start=self.alignment.start,
            end=self.alignment.end,
            speed=speed,
            paused=False,
            time_scale=default_time_scale(self.alignment.nodes[0].header),
            clock=clock,
        )
        self.header = job_header(self.alignment)
        for warning in self.alignment.warnings:
            self._warn(warning)
        self._source: Iterator[Frame] = job_frames(self.alignment, skip_bad=skip_bad, on_warning=self._warn)
        self._frames: list[Frame] = []
        self._exhausted = False
        self._shown = -1
        self._bookmarks = BookmarkFile(path)
        for warning in self._bookmarks.warnings:
            self._warn(warning)

    # -- SessionControl --------------------------------------------------------------------------

    def _close(self) -> None:
        self._stack.close()

    def mark_baseline(self) -> None:
        raise SectormonError(
            "a job replay has no baseline: compare two jobs with sectormon compare BASE OTHER"
        )

    def clear_baseline(self) -> None:
        """Nothing to clear: a job replay never has a baseline."""

    def bookmark(self, label: str) -> None:
        with self._cond:
            self._bookmarks.add(Mark(t=self._position, kind="bookmark", label=label))

    # -- ReplayControl ---------------------------------------------------------------------------

    def timeline(self) -> ReplayControl:
        return self

    def marks(self) -> tuple[Mark, ...]:
        with self._cond:
            return tuple(sorted(self._bookmarks.marks, key=lambda m: m.t))

    def bookmarks_file(self) -> str | None:
        return str(self._bookmarks.path)

    # -- thread ------------------------------------------------------------------------------------

    def _frame(self, index: int) -> Frame | None:
        """Frame ``index`` of the job, made now if playback has not reached it yet."""
        while len(self._frames) <= index and not self._exhausted:
            made = next(self._source, None)
            if made is None:
                self._exhausted = True
            else:
                self._frames.append(made)
        return self._frames[index] if index < len(self._frames) else None

    def _show(self, index: int) -> None:
        frame = self._frame(index)
        if frame is None:
            return
        self._shown = index
        self._position = frame.t
        self._publish(frame)

    def _index_at(self, t: float) -> int:
        """The last frame at or before ``t`` (the first one when none is)."""
        index = 0
        while True:
            frame = self._frame(index + 1)
            if frame is None or frame.t > t:
                return index
            index += 1

    def _stopped_by(self, problem: str) -> None:
        self._warn(f"playback stopped: {problem}")

    def _play(self) -> None:
        anchor: Anchor | None = None
        seen = -1
        while True:
            with self._cond:
                if self._stop:
                    return
                target, self._seek_target = self._seek_target, None
                if seen != self._control_version:
                    seen, anchor = self._control_version, None
                paused, speed = self._paused, self._speed * self._time_scale
            if target is not None:
                self._show(self._index_at(target))
                continue
            upcoming = None if paused else self._frame(self._shown + 1)
            if upcoming is None:
                if not paused:
                    self.finished.set()
                self._wait_for_control(seen)
                continue
            self.finished.clear()
            anchor, due = self._wait_until_due(upcoming.t, anchor, speed, self.alignment.interval, seen)
            if due:
                self._show(self._shown + 1)
