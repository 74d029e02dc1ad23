"""What a front end (TUI, JSON stream, exporter) may ask of a session, and how it receives frames.

Frames and warnings reach subscribers from the session's own thread: a subscriber must hand them
over to its own thread (the TUI posts a replaceable message) and return at once, because the
sampler never waits for a front end. :class:`SessionBase` holds the subscribers, the one warning
fan-out and the defaults of what a kind of session cannot do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.data.readings import Mark
from sectormon.errors import SectormonError

FrameCallback = Callable[[Frame], None]
WarningCallback = Callable[[str], None]


class SessionControl(Protocol):
    """A live, simulated or replayed session."""

    @property
    def header(self) -> Header:
        """The session's header record (source, target, profile, options)."""
        ...

    def subscribe(self, callback: FrameCallback) -> None:
        """Receive every frame (called from the session's thread)."""

    def subscribe_warnings(self, callback: WarningCallback) -> None:
        """Receive warnings (from any thread) instead of stderr; earlier ones are replayed first."""

    def start(self) -> None:
        """Start in the background."""

    def stop(self) -> None:
        """Stop, emit the final frame, close the recording. Idempotent."""

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the session has ended (a replay: reached the end); False on timeout."""
        ...

    def error(self) -> str | None:
        """Why the session stopped early, else ``None``."""
        ...

    def end_note(self) -> str | None:
        """How a launched command ended, when that is worth saying next to 'session ended'."""
        ...

    def mark_baseline(self) -> None:
        """Take the current rolling window as the baseline; later frames carry deltas."""

    def clear_baseline(self) -> None: ...

    def bookmark(self, label: str) -> None: ...

    def recording_path(self) -> str | None:
        """Where the session records to now, or ``None``."""
        ...

    def toggle_recording(self) -> str | None:
        """Start recording (to an automatic file name) or stop; returns the path while recording."""
        ...

    def sector_presets(self) -> tuple[str, ...]:
        """Sector configurations the source can switch to live (the simulator's; else empty)."""
        ...

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        """The sector configuration preset ``name`` gives, if the source can tell."""
        ...

    def apply_sector_preset(self, name: str) -> None: ...

    def timeline(self) -> ReplayControl | None:
        """The replay's timeline controls; ``None`` for a live session."""
        ...


class ReplayControl(SessionControl, Protocol):
    """A replay: the same frames as live, plus a timeline."""

    def duration(self) -> float: ...

    def start_time(self) -> float:
        """Stream time of the first slice (a recording started mid-session does not start at 0)."""
        ...

    def position(self) -> float: ...

    def paused(self) -> bool: ...

    def set_paused(self, paused: bool) -> None: ...

    def seek(self, delta_s: float) -> None:
        """Move by ``delta_s`` steps of :meth:`time_scale`."""

    def seek_to(self, t: float) -> None: ...

    def speed(self) -> float: ...

    def set_speed(self, speed: float) -> None: ...

    def time_scale(self) -> float:
        """Stream seconds per wall second at 1x, and per seek step."""
        ...

    def marks(self) -> tuple[Mark, ...]: ...

    def bookmarks_file(self) -> str | None:
        """Where the bookmarks set in this replay are kept (beside the recording), or ``None``."""
        ...


class SessionBase:
    """Frame and warning subscribers, shared by the live and the replay session.

    A warning goes to every warning subscriber, or to ``on_warning`` while there is none (stderr
    before the TUI takes the screen); a later subscriber gets the earlier warnings first. The
    methods a kind of session cannot honour have their documented defaults here.
    """

    def __init__(self, on_warning: WarningCallback | None = None) -> None:
        self._fallback_warn: WarningCallback = on_warning or (lambda _message: None)
        self._frame_subscribers: list[FrameCallback] = []
        self._warning_subscribers: list[WarningCallback] = []
        self._warnings: list[str] = []
        self._warnings_lock = threading.Lock()

    def subscribe(self, callback: FrameCallback) -> None:
        self._frame_subscribers.append(callback)

    def subscribe_warnings(self, callback: WarningCallback) -> None:
        with self._warnings_lock:
            earlier = list(self._warnings)
            self._warning_subscribers.append(callback)
        for message in earlier:
            callback(message)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning given so far, in order."""
        return tuple(self._warnings)

    def _warn(self, message: str) -> None:
        with self._warnings_lock:
            self._warnings.append(message)
            subscribers = list(self._warning_subscribers)
        if not subscribers:
            self._fallback_warn(message)
        for callback in subscribers:
            callback(message)

    def _publish(self, frame: Frame) -> None:
        for callback in list(self._frame_subscribers):
            callback(frame)

    # -- defaults ------------------------------------------------------------------------------

    def error(self) -> str | None:
        return None

    def end_note(self) -> str | None:
        return None

    def recording_path(self) -> str | None:
        return None

    def toggle_recording(self) -> str | None:
        return None

    def sector_presets(self) -> tuple[str, ...]:
        return ()

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        return None

    def apply_sector_preset(self, name: str) -> None:
        raise SectormonError(f"this session cannot switch the sector configuration (asked for {name!r})")

    def timeline(self) -> ReplayControl | None:
        return None
