"""A merged job on the TUI's timeline: play, pause, speed and seek over the job's frames.

Implements :class:`sectormon.session.control.ReplayControl`. The job's frames are made on this session's
thread as playback reaches them (:func:`sectormon.job.replay.job_frames`) and kept, so a seek
back shows a kept frame and a seek forward makes the frames up to the target: a long job played
to its end keeps all its frames in memory. A job has no baseline (compare two jobs with
``sectormon compare``); bookmarks are kept as marks.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

from sectormon.errors import SectormonError
from sectormon.frames import Frame
from sectormon.io.bookmarks import BookmarkFile
from sectormon.job.jobfile import open_job
from sectormon.job.replay import combiner, job_frames, job_header
from sectormon.readings import Mark
from sectormon.session.control import ReplayControl, SessionBase
from sectormon.session.replay import default_time_scale


class JobReplaySession(SessionBase):
    """A job file played for the TUI."""

    def __init__(
        self,
        path: str | Path,
        *,
        skip_bad: bool = False,
        speed: float = 1.0,
        on_warning: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(on_warning)
        self._stack = ExitStack()
        self.alignment = self._stack.enter_context(open_job(path, skip_bad=skip_bad))
        try:
            combiner(self.alignment)  # one profile for every node: fail before the TUI starts
        except Exception:
            self._stack.close()
            raise
        self.header = job_header(self.alignment)
        for warning in self.alignment.warnings:
            self._warn(warning)
        self._source: Iterator[Frame] = job_frames(self.alignment, skip_bad=skip_bad, on_warning=self._warn)
        self._frames: list[Frame] = []
        self._exhausted = False
        self._shown = -1
        self._clock = clock
        self._time_scale = default_time_scale(self.alignment.nodes[0].header, str(path))
        self._speed = _check_speed(speed)
        self._paused = False
        self._seek_target: float | None = None
        self._stop = False
        self._version = 0
        self._position = self.alignment.start
        self._bookmarks = BookmarkFile(path)
        for warning in self._bookmarks.warnings:
            self._warn(warning)
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self.finished = threading.Event()

    # -- SessionControl --------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sectormon-job-replay", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
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

    def timeline(self) -> ReplayControl:
        return self

    # -- ReplayControl ---------------------------------------------------------------------------

    def duration(self) -> float:
        return self.alignment.end

    def start_time(self) -> float:
        return self.alignment.start

    def position(self) -> float:
        return self._position

    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        with self._cond:
            self._paused = paused
            self._version += 1
            self._cond.notify_all()

    def seek(self, delta_s: float) -> None:
        with self._cond:
            base = self._seek_target if self._seek_target is not None else self._position
            self._seek_locked(base + delta_s * self._time_scale)

    def seek_to(self, t: float) -> None:
        with self._cond:
            self._seek_locked(t)

    def _seek_locked(self, t: float) -> None:
        self._seek_target = min(max(t, self.alignment.start), self.alignment.end)
        self._version += 1
        self._cond.notify_all()

    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        with self._cond:
            self._speed = _check_speed(speed)
            self._version += 1
            self._cond.notify_all()

    def time_scale(self) -> float:
        return self._time_scale

    def marks(self) -> tuple[Mark, ...]:
        with self._cond:
            return tuple(sorted(self._bookmarks.marks, key=lambda m: m.t))

    def bookmarks_file(self) -> str | None:
        return str(self._bookmarks.path)

    def error(self) -> str | None:
        return self._error

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

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

    def _run(self) -> None:
        try:
            self._play()
        except SectormonError as exc:
            self._error = str(exc)
            self._warn(f"playback stopped: {exc}")
        finally:
            self.finished.set()

    def _play(self) -> None:
        anchor: tuple[float, float] | None = None
        seen = -1
        while True:
            with self._cond:
                if self._stop:
                    return
                target, self._seek_target = self._seek_target, None
                if seen != self._version:
                    seen, anchor = self._version, None
                paused, speed = self._paused, self._speed * self._time_scale
            if target is not None:
                self._show(self._index_at(target))
                continue
            upcoming = None if paused else self._frame(self._shown + 1)
            if upcoming is None:
                if not paused:
                    self.finished.set()
                with self._cond:
                    if seen == self._version and not self._stop:
                        self._cond.wait()
                continue
            self.finished.clear()
            now = self._clock()
            if anchor is None:
                anchor = (self._position, now)
            delay = anchor[1] + (upcoming.t - anchor[0]) / speed - now if math.isfinite(speed) else 0.0
            if delay > 0:
                with self._cond:
                    if seen == self._version and not self._stop:
                        self._cond.wait(delay)
                    if seen != self._version or self._stop:
                        continue
                if self._clock() < anchor[1] + (upcoming.t - anchor[0]) / speed:
                    continue
            self._show(self._shown + 1)


def _check_speed(speed: float) -> float:
    if not speed > 0:
        raise SectormonError(f"replay speed must be > 0, got {speed!r}")
    return float(speed)
