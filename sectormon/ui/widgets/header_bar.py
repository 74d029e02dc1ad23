"""The two header lines: what is measured (target, source, profile, sector config) and the
session's state (recording, interval, sampler overhead, baseline, display pause)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from sectormon.frames import Frame
from sectormon.ui.context import thread_coverage_note, window_title
from sectormon.ui.format import format_number, format_si, format_value
from sectormon.ui.header_info import describe_sector_config, describe_source, describe_target


@dataclass(frozen=True, slots=True)
class Status:
    """UI-side state shown in the header (the frame carries the rest)."""

    recording: str | None = None
    display_paused: bool = False
    window: str = "interval"
    sector_preset: str = ""
    skipped_frames: int = 0
    showing_values: bool = False
    end_note: str | None = None  # how a launched command ended, when not with status 0
    warnings: int = 0  # warnings shown so far (the help lists them)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class HeaderBar(Static):
    """Target and session state, two lines (cropped, never wrapped, at 80 columns)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "header-bar--title",
        "header-bar--key",
        "header-bar--recording",
        "header-bar--paused",
        "header-bar--warning",
        "header-bar--dim",
    }

    def __init__(self, header: Mapping[str, Any], *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._header = header
        self._shown = Text()

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"header-bar--{role}", partial=True)

    def _field(self, text: Text, key: str, value: str) -> None:
        text.append(f"{key} ", self._style("key"))
        text.append(value)
        text.append("  ")

    def show(self, frame: Frame | None, status: Status) -> None:
        header = self._header
        line1 = Text(no_wrap=True, overflow="ellipsis")
        line1.append("sectormon ", self._style("title"))
        self._field(line1, "source", describe_source(_mapping(header.get("source"))))
        profile = _mapping(header.get("profile"))
        name = str(profile.get("name", "?"))
        variant = profile.get("variant")
        self._field(line1, "profile", f"{name} {variant}" if variant else name)
        config = _mapping(header.get("sector_config"))
        if config or status.sector_preset or name == "a64fx":
            sector = describe_sector_config(config)
            if status.sector_preset and config.get("preset") != status.sector_preset:
                sector = f"preset {status.sector_preset}"  # a source that cannot describe it
            self._field(line1, "sector", sector)  # the configuration now (a preset updates it)
        live_threads = len(frame.threads) if frame is not None else None
        self._field(line1, "target", describe_target(_mapping(header.get("target")), live_threads))

        line2 = Text(no_wrap=True, overflow="ellipsis")
        if frame is not None and frame.final:  # first: the one thing that matters once it is over
            line2.append("■ session ended", self._style("paused"))
            if status.end_note:
                line2.append(f": {status.end_note}", self._style("warning"))
            line2.append("  ")
        if status.recording:
            line2.append(f"● REC {status.recording}", self._style("recording"))
        else:
            line2.append("○ not recording", self._style("dim"))
        line2.append("  ")
        # States before details: at 80 columns the end of this line is cut.
        if status.display_paused:
            line2.append("⏸ DISPLAY PAUSED (sampling goes on)", self._style("paused"))
            line2.append("  ")
        if status.warnings:
            line2.append(
                f"⚠ {status.warnings} warning{'s' if status.warnings > 1 else ''} (? lists)",
                self._style("warning"),
            )
            line2.append("  ")
        uncounted = thread_coverage_note(frame, status.window)
        if uncounted is not None:
            line2.append(f"⚠ {uncounted}", self._style("warning"))
            line2.append("  ")
        options = _mapping(header.get("options"))
        interval = options.get("interval")
        timeslice = options.get("timeslice")
        timing = format_si(interval, "s") if isinstance(interval, (int, float)) else "?"
        if isinstance(timeslice, (int, float)):
            timing += f", slice {format_si(timeslice, 's')}"
        self._field(line2, "interval", timing)
        if frame is not None:
            self._field(line2, "t", format_si(frame.t, "s"))
            self._field(line2, "overhead", f"{format_value(frame.overhead, 'ratio')} of a core")
        window = window_title(status.window, frame)
        if frame is not None and frame.baseline is not None and not status.showing_values:
            base = frame.baseline
            since = " since the config change" if base.after_change is not None else ""
            span = f"{format_number(base.t_from)}–{format_number(base.t_to)} s{since}"
            line2.append(
                f"Δ vs baseline {span} (+ = better)",
                self._style("warning"),
            )
            line2.append("  ")
        else:
            self._field(line2, "window", window)
        unavailable = _mapping(header.get("unavailable"))
        if unavailable:
            line2.append(f"{len(unavailable)} events n/a", self._style("warning"))
            line2.append("  ")
        if status.skipped_frames:
            line2.append(f"skipped frames {status.skipped_frames}", self._style("dim"))
            line2.append("  ")
        line1.append("\n")
        text = line1 + line2
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)  # fixed height: no relayout per frame
