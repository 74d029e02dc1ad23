"""Wires source -> sampler -> engine -> sinks, and makes frames deterministic.

:class:`FrameBuilder` decides when a frame is due purely from the times in the slice stream, so a
live session and a replay of its recording produce the same frames. :class:`Session` runs a live or
simulated session: it owns the sampler, feeds the engine on the sampler thread, writes the
recording, applies marks (baseline) in stream order, and hands frames to subscribers (JSON stream,
TUI) without ever waiting for them.
"""

from __future__ import annotations

import collections
import datetime as _dt
import math
import os
import platform
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from sectormon import __version__
from sectormon.frames import HEADER_SCHEMA, Frame, FrameClock
from sectormon.io.jsonl import RECORDING_SCHEMA
from sectormon.metrics.batch import RowBatch
from sectormon.metrics.engine import MetricsEngine
from sectormon.profiles.model import Profile
from sectormon.readings import Mark, Slice, SliceRows
from sectormon.sampler import Sampler
from sectormon.schedule import RotationPlan
from sectormon.session import FrameCallback
from sectormon.sources.base import Source

SAMPLING_STOPPED = "sampling stopped"
"""How a session that failed mid-run says so (on screen, and in its recording)."""


def build_engine(profile: Profile, header: Mapping[str, Any]) -> MetricsEngine:
    """The engine a header describes (live and replay must build it the same way)."""
    options = header.get("options", {})
    return MetricsEngine(
        profile,
        recent_seconds=float(options.get("recent_seconds", 10.0)),
        unavailable=dict(header.get("unavailable", {})),
        start=float(header.get("recording_started", 0.0) or 0.0),
    )


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

    def feed(self, item: Slice | SliceRows | Mark) -> list[Frame]:
        if isinstance(item, Mark):
            self.engine.add_mark(item)
            return []
        if isinstance(item, SliceRows):
            self.engine.add_rows(item)
        else:
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

    def feed_all(self, items: Iterable[Slice | SliceRows | Mark]) -> list[Frame]:
        frames: list[Frame] = []
        for item in items:
            frames.extend(self.feed(item))
        return frames

    def finish(self, t: float | None = None) -> Frame:
        """The final frame: the whole run, flagged ``final``."""
        return self.engine.final_frame(self.last_t if t is None else t)


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How a session samples and when it stops."""

    interval: float = 1.0
    timeslice: float = 0.02
    recent_seconds: float = 10.0
    count: int | None = None
    duration: float | None = None
    baseline_after: float | None = None
    record: str | None = None


HOST_ENV = "SECTORMON_HOST"
"""Names the host in the header (and the OpenMetrics ``host`` label) instead of the hostname:
simulated nodes, or a node known to the job by another name."""


def host_facts() -> dict[str, Any]:
    """Host facts for the header (what perf stat prints above its table)."""
    uname = platform.uname()
    return {
        "host": os.environ.get(HOST_ENV) or socket.gethostname(),
        "kernel": uname.release,
        "machine": uname.machine,
        "python": platform.python_version(),
    }


def build_header(
    *,
    source: Source,
    profile: Profile,
    plan: RotationPlan,
    options: SessionOptions,
    topology: Mapping[str, Any] | None,
    cpu_model: str,
    profile_dict: Mapping[str, Any],
    probe: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header record shared by the JSON stream and the recording.

    ``wall_t0`` is the Unix time of stream time 0 (``None`` on the simulator, whose seconds are
    simulated): merged nodes of a job are aligned by it (``created`` has whole seconds only).
    """
    described = source.describe()
    return {
        "schema": HEADER_SCHEMA,
        "sectormon": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_t0": None if described.get("simulated") else time.time() - source.now(),
        **host_facts(),
        "cpu": cpu_model,
        "topology": dict(topology or {}),
        "source": {
            "kind": source.kind,
            **{k: v for k, v in described.items() if k not in ("target", "sector_config", "source")},
        },
        "target": described.get("target", {}),
        "sector_config": described.get("sector_config", {}),
        "profile": dict(profile_dict),
        "groups": {
            g.name: {"pe": [e.name for e in g.pe_events], "cmg": [e.name for e in g.cmg_events]}
            for g in plan.groups
        },
        "skipped_groups": list(plan.skipped_groups),
        "unavailable": dict(plan.dropped),
        "probe": dict(probe or {}),
        "options": {
            "interval": options.interval,
            "timeslice": options.timeslice,
            "recent_seconds": options.recent_seconds,
            "count": options.count,
            "duration": options.duration,
            "baseline_after": options.baseline_after,
        },
    }


def auto_recording_name(directory: str | Path = ".") -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return str(Path(directory) / f"sectormon-{stamp}.jsonl.gz")


class Session:
    """A live or simulated session: implements :class:`sectormon.session.SessionControl`."""

    def __init__(
        self,
        *,
        source: Source,
        profile: Profile,
        plan: RotationPlan,
        options: SessionOptions,
        header: dict[str, Any],
        on_warning: Callable[[str], None] | None = None,
        cmg_enabled: bool = True,
        startup_warnings: Sequence[str] = (),
    ) -> None:
        self.source = source
        self.profile = profile
        self.plan = plan
        self.options = options
        self.header = header
        self._fallback_warn = on_warning or (lambda _m: None)
        self._warning_subscribers: list[Callable[[str], None]] = []
        self._warnings: list[str] = list(startup_warnings)
        self._subscribers: list[FrameCallback] = []
        self._pending: collections.deque[Mark] = collections.deque()
        self._builder = FrameBuilder(build_engine(profile, header), options.interval)
        self._sampler = Sampler(
            source,
            plan,
            timeslice=options.timeslice,
            on_slice=self._on_slice,
            on_warning=self._warn,
            cmg_enabled=cmg_enabled,
        )
        self._recorder: Any = None
        # Re-entrant: a write that fails warns, and a warning is written to the recording.
        self._record_lock = threading.RLock()
        self._baseline_done = options.baseline_after is None
        self._finished = threading.Event()
        self._stopped = False
        self.final_frame: Frame | None = None
        self.error: Exception | None = None
        self.frames = 0
        if options.record:
            # An unwritable path stops the recording with one warning; monitoring goes on (issue 4).
            self._open_recorder(options.record)

    # -- SessionControl ------------------------------------------------------------------------

    def subscribe(self, callback: FrameCallback) -> None:
        self._subscribers.append(callback)

    def subscribe_warnings(self, callback: Callable[[str], None]) -> None:
        """Receive warnings (from any thread) instead of stderr; earlier ones are replayed first."""
        for message in self._warnings:
            callback(message)
        self._warning_subscribers.append(callback)

    def _warn(self, message: str) -> None:
        self._warnings.append(message)
        self._record_warning(message)
        if self._warning_subscribers:
            for callback in list(self._warning_subscribers):
                callback(message)
        else:
            self._fallback_warn(message)

    def start(self) -> None:
        """Run the session in a background thread (the TUI path). The source is already started."""
        thread = threading.Thread(target=self._run_in_thread, name="sectormon-session", daemon=True)
        self._thread = thread
        thread.start()

    def stop(self) -> None:
        self._sampler.stop()

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def mark_baseline(self) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="baseline"))

    def clear_baseline(self) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="baseline-clear"))

    def bookmark(self, label: str) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="bookmark", label=label))

    def recording_path(self) -> str | None:
        recorder = self._recorder
        if recorder is None or getattr(recorder, "failed", None):
            return None
        return str(recorder.path)

    def command_exit_code(self) -> int | None:
        """A launched command's exit code once it ended by itself (negative: a signal), else None."""
        code = getattr(self.source, "exit_code", None)
        return code if isinstance(code, int) else None

    def end_note(self) -> str | None:
        """How a launched command ended, when it ended by itself with a status other than 0
        (the TUI says it next to 'session ended'; a crash looked like a normal end)."""
        code = self.command_exit_code()
        if not code:
            return None
        from sectormon.targets import describe_exit

        return describe_exit(code)

    def toggle_recording(self) -> str | None:
        with self._record_lock:
            if self._recorder is not None:
                self._close_recorder()
                return None
        return self._open_recorder(auto_recording_name())

    def sector_presets(self) -> tuple[str, ...]:
        presets = getattr(self.source, "sector_presets", None)
        return tuple(presets()) if callable(presets) else ()

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        """The sector configuration preset ``name`` gives, if the source can tell."""
        config_for = getattr(self.source, "sector_config_for", None)
        return dict(config_for(name)) if callable(config_for) else None

    def apply_sector_preset(self, name: str) -> None:
        apply = getattr(self.source, "apply_sector_preset", None)
        if not callable(apply):
            return
        # Applied on the sampler thread between slices, recorded as a config mark.
        self._pending.append(Mark(t=self._builder.last_t, kind="config", label=name, data={"preset": name}))

    # -- running -------------------------------------------------------------------------------

    def run(self) -> None:
        """Sample until stopped or the target finishes; then emit the final frame and close."""
        try:
            self._sampler.run()
        except Exception as exc:
            # Said in the recording before its end mark (the callers report the error itself).
            self._record_warning(f"{SAMPLING_STOPPED}: {exc}")
            raise
        finally:
            self._finish()

    def _run_in_thread(self) -> None:
        try:
            self.run()
        except Exception as exc:  # a background thread must not die silently: the front end shows it
            self.error = exc
            self._warn(f"{SAMPLING_STOPPED}: {exc}")

    def run_headless(self) -> Frame | None:
        """Run in the calling (main) thread; SIGINT/SIGTERM end the session with a final frame."""

        def _stop(_signum: int, _frame: FrameType | None) -> None:
            self._sampler.stop()

        previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.final_frame

    def _on_slice(self, item: Slice) -> None:
        while self._pending:
            self._apply_mark(self._pending.popleft())
        if self._recorder is not None:
            with self._record_lock:  # not after the end mark of a recording stopped meanwhile
                if self._recorder is not None:
                    self._recorder.write_slice(item)
        for frame in self._builder.feed(item):
            self._emit(frame)
        after = self.options.baseline_after
        if not self._baseline_done and after is not None and item.t >= after:
            self._baseline_done = True
            self._apply_mark(Mark(t=item.t, kind="baseline", label="--baseline-after"))
        if self.options.duration is not None and item.t >= self.options.duration:
            self._sampler.stop()

    def _apply_mark(self, mark: Mark) -> None:
        if mark.kind == "config":
            apply = getattr(self.source, "apply_sector_preset", None)
            if callable(apply):
                apply(mark.label)
        if self._recorder is not None:
            with self._record_lock:
                if self._recorder is not None:
                    self._recorder.write_mark(mark)
        self._builder.feed(mark)

    def _emit(self, frame: Frame) -> None:
        self.frames += 1
        for callback in list(self._subscribers):
            callback(frame)
        if self.options.count is not None and self.frames >= self.options.count:
            self._sampler.stop()

    def _finish(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        while self._pending:
            self._apply_mark(self._pending.popleft())
        final = self._builder.finish()
        self.final_frame = final
        for callback in list(self._subscribers):
            callback(final)
        with self._record_lock:
            code = self.command_exit_code()
            self._close_recorder({"exit_status": code} if code is not None else {})
        self.source.close()
        self._finished.set()

    # -- recording -----------------------------------------------------------------------------

    def _open_recorder(self, path: str) -> str | None:
        from sectormon.io.recording import RecordingWriter

        header = dict(self.header)
        header["schema"] = RECORDING_SCHEMA
        header["recording_started"] = self._builder.last_t
        writer = RecordingWriter(path, header, on_error=self._recording_failed)
        with self._record_lock:
            self._recorder = writer
            for message in list(self._warnings):  # a recording tells what the session said so far
                self._record_warning(message)
        return None if writer.failed else path

    def _record_warning(self, message: str) -> None:
        """Keep a warning in the recording as a ``warning`` mark: a replay or compare of the file
        says it again (which threads went uncounted is part of what the figures mean)."""
        if self._recorder is None:
            return
        with self._record_lock:
            recorder = self._recorder
            if recorder is not None and not recorder.failed:
                recorder.write_mark(Mark(t=self._builder.last_t, kind="warning", label=message))

    def _recording_failed(self, message: str) -> None:
        self._warn(f"recording stopped: {message} (record to a writable path with space); monitoring goes on")

    def _close_recorder(self, end_data: dict[str, Any] | None = None) -> None:
        """End the recording with its ``end`` mark (a file without one reads as cut), then close
        it. The caller holds ``_record_lock``, which also keeps a slice from landing after it."""
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            recorder.write_mark(Mark(t=self._builder.last_t, kind="end", data=end_data or {}))
            recorder.close()


def default_cpu_model(procfs_root: str | Path = "/proc") -> str:
    """The CPU model line of /proc/cpuinfo (x86 'model name', else Arm implementer/part)."""
    try:
        text = (Path(procfs_root) / "cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    if "model name" in fields:
        return fields["model name"]
    if "CPU implementer" in fields:
        return f"implementer {fields['CPU implementer']} part {fields.get('CPU part', '?')}"
    return platform.machine()


def cpu_count() -> int:
    return os.cpu_count() or 1
