"""Deterministic stand-ins for the session controllers the TUI drives.

:class:`FakeSession` implements ``sectormon.session.SessionControl`` and :class:`FakeReplay`
``ReplayControl``. Frames are fed by the test (``emit``), synchronously or from another thread
like the real pipeline; every call the UI makes is logged in ``calls``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sectormon.data.frames import Frame
from sectormon.data.readings import Mark
from sectormon.io.header_codec import header_from_json
from sectormon.session.control import ReplayControl, SessionBase
from tests.ui.frames_fixture import make_baseline

FrameCallback = Callable[[Frame], None]


class FakeSession(SessionBase):
    """A session that plays back a fixed list of frames when told to."""

    def __init__(
        self,
        header: Mapping[str, Any],
        frames: Sequence[Frame],
        *,
        presets: Sequence[str] = (),
        metrics: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        super().__init__()
        self.header = header_from_json(header)
        self.frames = list(frames)
        self.presets = tuple(presets)
        self.metrics = metrics if metrics is not None else header["profile"]["metrics"]
        self.calls: list[Any] = []
        self.callbacks: list[FrameCallback] = []
        self.warning_callbacks: list[Callable[[str], None]] = []
        self.index = 0
        self.base_frame: Frame | None = None
        self._want_baseline = False
        self.recording: str | None = None
        self.last_emitted: Frame | None = None

    # -- SessionControl --------------------------------------------------------------------------

    def subscribe(self, callback: FrameCallback) -> None:
        self.calls.append("subscribe")
        self.callbacks.append(callback)

    def subscribe_warnings(self, callback: Callable[[str], None]) -> None:
        self.warning_callbacks.append(callback)

    def warn_from_thread(self, text: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: [cb(text) for cb in self.warning_callbacks])
        thread.start()
        return thread

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def mark_baseline(self) -> None:
        self.calls.append("mark_baseline")
        self._want_baseline = True

    def clear_baseline(self) -> None:
        self.calls.append("clear_baseline")
        self._want_baseline = False
        self.base_frame = None

    def bookmark(self, label: str) -> None:
        self.calls.append(("bookmark", label))

    def recording_path(self) -> str | None:
        return self.recording

    def toggle_recording(self) -> str | None:
        self.calls.append("toggle_recording")
        self.recording = None if self.recording else "sectormon-test.jsonl.gz"
        return self.recording

    def sector_presets(self) -> tuple[str, ...]:
        return self.presets

    def apply_sector_preset(self, name: str) -> None:
        self.calls.append(("apply_sector_preset", name))

    # -- feeding frames --------------------------------------------------------------------------

    def next_frame(self) -> Frame:
        frame = self.frames[self.index % len(self.frames)]
        self.index += 1
        if self._want_baseline and self.base_frame is None:
            self.base_frame = self.last_emitted or frame
        if self.base_frame is not None:
            frame = dataclasses.replace(frame, baseline=make_baseline(self.base_frame, frame, self.metrics))
        self.last_emitted = frame
        return frame

    def emit(self, count: int = 1) -> Frame:
        """Deliver ``count`` frames to the subscribers, on the calling thread."""
        frame = self.last_emitted
        for _ in range(count):
            frame = self.next_frame()
            for callback in list(self.callbacks):
                callback(frame)
        assert frame is not None
        return frame

    def emit_from_thread(self, count: int = 1) -> threading.Thread:
        """Like the pipeline: deliver frames from another thread, without waiting for the UI."""
        thread = threading.Thread(target=self.emit, args=(count,), name="fake-pipeline")
        thread.start()
        return thread


class FakeReplay(FakeSession):
    """A replay: the session plus a deterministic timeline."""

    def __init__(
        self, header: Mapping[str, Any], frames: Sequence[Frame], *, duration: float = 600.0
    ) -> None:
        super().__init__(header, frames)
        self._duration = duration
        self._position = 65.0
        self._paused = False
        self._speed = 1.0
        self._marks = (
            Mark(t=120.0, kind="baseline"),
            Mark(t=300.0, kind="config", label="sector-on"),
            Mark(t=450.0, kind="bookmark", label="phase 2"),
        )

    def duration(self) -> float:
        return self._duration

    def position(self) -> float:
        return self._position

    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        self.calls.append(("set_paused", paused))
        self._paused = paused

    def seek(self, delta_s: float) -> None:
        self.calls.append(("seek", delta_s))
        self._position = min(self._duration, max(0.0, self._position + delta_s))

    def seek_to(self, t: float) -> None:
        self.calls.append(("seek_to", t))
        self._position = min(self._duration, max(0.0, t))

    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        self.calls.append(("set_speed", speed))
        self._speed = speed

    def marks(self) -> tuple[Mark, ...]:
        return self._marks

    def bookmarks_file(self) -> str | None:
        return "run.jsonl.gz.bookmarks.jsonl"

    def start_time(self) -> float:
        return 0.0

    def time_scale(self) -> float:
        return 1.0

    def timeline(self) -> ReplayControl:
        return self
