"""The timeline controls every replay offers (:class:`ReplayControl`), on one thread-safe state.

A replay's own thread plays the frames; the front end's calls only change this state under the
condition variable and bump :attr:`_control_version`, which the playing thread watches.
"""

from __future__ import annotations

import threading

from sectormon.errors import SectormonError
from sectormon.session.control import SessionBase, WarningCallback


def check_speed(speed: float) -> float:
    if not (speed > 0):
        raise SectormonError(f"replay speed must be > 0, got {speed!r}")
    return float(speed)


class TimelineSession(SessionBase):
    """Pause, speed, seek and position of a replay between stream times ``start`` and ``end``."""

    def __init__(
        self,
        on_warning: WarningCallback | None,
        *,
        start: float,
        end: float,
        speed: float,
        paused: bool,
        time_scale: float,
    ) -> None:
        super().__init__(on_warning)
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
        self.finished = threading.Event()

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
