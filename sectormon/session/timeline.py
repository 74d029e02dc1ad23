"""The timeline controls every replay offers (:class:`ReplayControl`), and the thread that plays it.

A replay's own thread plays the frames; the front end's calls only change this state under the
condition variable and bump :attr:`_control_version`, which the playing thread watches. Starting,
stopping and ending that thread is the same for every kind of replay (a recording, a merged job),
so it is done here once: a subclass only says how it plays (:meth:`TimelineSession._play`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from sectormon.errors import SectormonError
from sectormon.session.control import SessionBase, WarningCallback

Anchor = tuple[float, float]
"""Where pacing started: (stream time, wall-clock time)."""


def is_hole(before: float, t: float, hole: float) -> bool:
    """Whether stream time jumps from ``before`` to ``t`` by more than ``hole`` seconds (never
    waited through when paced: see :class:`sectormon.session.replay.Pacer`)."""
    return t - before > hole


def check_speed(speed: float) -> float:
    if not (speed > 0):
        raise SectormonError(f"replay speed must be > 0, got {speed!r}")
    return float(speed)


class TimelineSession(SessionBase):
    """Pause, speed, seek and position of a replay between stream times ``start`` and ``end``,
    played on a thread of its own by :meth:`_play`."""

    THREAD_NAME = "sectormon-replay"

    def __init__(
        self,
        on_warning: WarningCallback | None,
        *,
        start: float,
        end: float,
        speed: float,
        paused: bool,
        time_scale: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(on_warning)
        self._clock = clock
        self._cond = threading.Condition()
        self._start_t = start
        self._end_t = end
        self._speed = check_speed(speed)
        self._paused = paused
        self._time_scale = time_scale
        self._seek_target: float | None = None
        self._position = start
        self._control_version = 0
        self._error: str | None = None
        self._stop = False
        self._thread: threading.Thread | None = None
        self.finished = threading.Event()

    # -- the playing thread ----------------------------------------------------------------------

    def start(self) -> None:
        """Start playing on the session's thread (once; a second call does nothing)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop playing and wait for the thread (up to 5 s), then release what the session holds."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
        self._close()

    def _run(self) -> None:
        try:
            self._play()
        except SectormonError as exc:
            self._error = str(exc)
            self._stopped_by(self._error)
        finally:
            self.finished.set()

    def _play(self) -> None:
        """Play until the end, or until :meth:`stop` (``_stop`` set under ``_cond``): the subclass's
        loop, which waits for the controls with :meth:`_wait_for_control`."""
        raise NotImplementedError

    def _stopped_by(self, problem: str) -> None:
        """Playback stopped early on ``problem`` (a bad line in the file): tell whoever listens."""

    def _close(self) -> None:
        """Release what the session holds besides its thread (open files), once it has stopped."""

    def _wait_for_control(self, seen: int, timeout: float | None = None) -> bool:
        """Wait until a control changes after version ``seen`` or the session stops, at most
        ``timeout`` seconds (``None``: however long); whether one of them happened."""
        with self._cond:
            if self._control_version == seen and not self._stop:
                self._cond.wait(timeout)
            return self._control_version != seen or self._stop

    def _wait_until_due(
        self, t: float, anchor: Anchor | None, speed: float, hole: float, seen: int
    ) -> tuple[Anchor | None, bool]:
        """Pace stream time ``t`` at ``speed`` stream seconds a wall second: wait until it is due,
        unless a control changes after version ``seen`` first. Pacing starts from the position
        (``anchor`` ``None``) and again at ``t`` after a jump of more than ``hole`` seconds (a hole
        in the stream is not waited through). The anchor to go on with, and whether ``t`` is due
        now (``False``: come back to it); an infinite speed never waits."""
        if not math.isfinite(speed):
            return anchor, True
        now = self._clock()
        if anchor is None or is_hole(self._position, t, hole):
            anchor = (self._position if anchor is None else t, now)
        due = anchor[1] + (t - anchor[0]) / speed
        if due - now > 0 and (self._wait_for_control(seen, due - now) or self._clock() < due):
            return anchor, False
        return anchor, True

    def duration(self) -> float:
        return self._end_t

    def start_time(self) -> float:
        """Stream time of the first slice (a recording started mid-session does not start at 0)."""
        return self._start_t

    def position(self) -> float:
        return self._position

    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        with self._cond:
            self._paused = paused
            self._changed()

    def seek(self, delta_s: float) -> None:
        """Move by ``delta_s`` steps of :meth:`time_scale` from where the last seek is going (arrow
        keys held or typed ahead add up; from the position alone, a seek not yet done was lost)."""
        with self._cond:
            base = self._seek_target if self._seek_target is not None else self._position
            self._seek_locked(base + delta_s * self._time_scale)

    def seek_to(self, t: float) -> None:
        with self._cond:
            self._seek_locked(t)

    def _seek_locked(self, t: float) -> None:
        self._seek_target = min(max(t, self._start_t), self._end_t)
        self._changed()

    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        with self._cond:
            self._speed = check_speed(speed)
            self._changed()

    def time_scale(self) -> float:
        """Stream seconds per wall second at 1x, and per seek step."""
        return self._time_scale

    def error(self) -> str | None:
        """Why playback stopped early (a bad line in the file), else ``None``."""
        return self._error

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until playback reaches the end."""
        return self.finished.wait(timeout)

    def _changed(self) -> None:
        """Tell the playing thread (the caller holds ``_cond``)."""
        self._control_version += 1
        self._cond.notify_all()
