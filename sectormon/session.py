"""What a front end (the TUI) may ask of a running session, and how it receives frames.

The pipeline implements :class:`SessionControl` for live and simulated sessions and
:class:`ReplayControl` for replays. Frames reach subscribers from the sampler/pipeline thread: a
subscriber must hand them over to its own thread (the TUI posts a replaceable message) and return
at once, because the sampler never waits for a front end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sectormon.frames import Frame
from sectormon.readings import Mark

FrameCallback = Callable[[Frame], None]


class SessionControl(Protocol):
    """A live or simulated session."""

    @property
    def header(self) -> Mapping[str, Any]:
        """The session's header record (source, target, profile, options)."""
        ...

    def subscribe(self, callback: FrameCallback) -> None:
        """Receive every frame (called from the pipeline thread)."""

    def start(self) -> None:
        """Start sampling in the background."""

    def stop(self) -> None:
        """Stop sampling, emit the final frame, close the recording. Idempotent."""

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
        """Names of sector configurations the source can switch to live (simulator only; else empty)."""
        ...

    def apply_sector_preset(self, name: str) -> None: ...


class ReplayControl(SessionControl, Protocol):
    """A replay: the same frames as live, plus a timeline."""

    def duration(self) -> float: ...

    def position(self) -> float: ...

    def paused(self) -> bool: ...

    def set_paused(self, paused: bool) -> None: ...

    def seek(self, delta_s: float) -> None: ...

    def seek_to(self, t: float) -> None: ...

    def speed(self) -> float: ...

    def set_speed(self, speed: float) -> None: ...

    def marks(self) -> tuple[Mark, ...]: ...
