"""The two header lines: what is measured (target, source, profile, sector config) and the
session's state (ended, recording and where, display pause, warnings, window or baseline, time,
interval, sampler overhead), fitted to the terminal's width (:mod:`sectormon.ui.header_fit`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import PurePath
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widgets import Static

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.files.text import printable
from sectormon.ui.context import thread_coverage_note, window_title
from sectormon.ui.format import format_number, format_si, format_value
from sectormon.ui.header_fit import SEPARATOR, Field, fit
from sectormon.ui.header_info import (
    describe_sector_config,
    describe_source,
    describe_target,
    proxy_words,
    short_sector_config,
)


@dataclass(frozen=True, slots=True)
class Status:
    """UI-side state shown in the header (the frame carries the rest)."""

    recording: str | None = None  # where the session records to, as the user can find it
    display_paused: bool = False
    window: str = "interval"
    sector_preset: str = ""
    skipped_frames: int = 0
    showing_values: bool = False
    end_note: str | None = None  # how a launched command ended, when not with status 0
    warnings: int = 0  # distinct warnings so far (``l`` lists them)
    newest_warning: str = ""


class HeaderBar(Static):
    """What is measured (line 1) and the session's state (line 2), each fitted to the width: the
    least important fields are shortened, then dropped, so target, window and state stay."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "header-bar--title",
        "header-bar--key",
        "header-bar--recording",
        "header-bar--paused",
        "header-bar--warning",
        "header-bar--dim",
    }

    def __init__(self, header: Header, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.header = header
        """The session's header; the app gives a new one when the sector preset changes."""
        self._shown = Text()
        self._last: tuple[Frame | None, Status] | None = None

    def _style(self, role: str) -> Style:
        return self.get_component_rich_style(f"header-bar--{role}", partial=True)

    def _line(self, fields: list[Field], width: int) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        # Values quote the header (command lines, paths, names, warnings): no control character
        # reaches the terminal. Escaped before fitting, so the fit counts what is drawn.
        fields = [
            dataclasses.replace(
                f, value=printable(f.value), short=None if f.short is None else printable(f.short)
            )
            for f in fields
        ]
        for index, (field, value) in enumerate(fit(fields, width)):
            if index:
                line.append(" " * SEPARATOR)
            if field.key:
                line.append(f"{field.key} ", self._style("key"))
            line.append(value, self._style(field.role) if field.role else Style())
        return line

    def what_is_measured(self, frame: Frame | None, status: Status) -> list[Field]:
        header = self.header
        source = header.source.fields
        profile = header.profile
        name = str(profile.get("name", "?"))
        variant = profile.get("variant")
        target = header.target.fields
        live_threads = len(frame.threads) if frame is not None else None
        fields = [
            Field("sectormon", role="title", priority=5),
            Field(
                describe_target(target, live_threads),
                key="target",
                priority=100,
                short=describe_target(target, live_threads, short=True),
                keep=True,
            ),
            Field(describe_source(source), key="source", priority=45, short=str(source.get("kind", "?"))),
            Field(f"{name} {variant}" if variant else name, key="profile", priority=40, short=name),
        ]
        config = header.sector_config
        if config or status.sector_preset or name == "a64fx":
            sector = describe_sector_config(config)
            short = short_sector_config(config) if config else sector
            if status.sector_preset and config.get("preset") != status.sector_preset:
                sector = short = f"preset {status.sector_preset}"  # a source that cannot describe it
            # Shortened first (to "preset on", "SCCR=TRUE"): the Sectors view has the details.
            fields.append(Field(sector, key="sector", priority=25, short=short, keep=True))
        stand_ins = proxy_words(header)
        if stand_ins:  # which units stood in: every ≈ figure is theirs, scaled
            fields.append(Field(stand_ins, priority=35, short=stand_ins.partition(":")[0], keep=True))
        return fields

    def state(self, frame: Frame | None, status: Status) -> list[Field]:
        header = self.header
        fields: list[Field] = []
        if frame is not None and frame.final:  # first: the one thing that matters once it is over
            ended = "■ session ended" + (f": {status.end_note}" if status.end_note else "")
            fields.append(Field(ended, role="paused", priority=100, short="■ ended", keep=True))
        if status.recording:
            fields.append(
                Field(
                    f"● REC {status.recording}",
                    role="recording",
                    priority=90,
                    short=f"● REC {PurePath(status.recording).name}",
                    keep=True,
                )
            )
        else:
            fields.append(Field("○ not recording", role="dim", priority=45, short="○ no rec", keep=True))
        if status.display_paused:
            fields.append(
                Field(
                    "⏸ DISPLAY PAUSED (sampling goes on)",
                    role="paused",
                    priority=95,
                    short="⏸ PAUSED",
                    keep=True,
                )
            )
        if status.warnings:
            # One field, not a notification per warning: the count, the newest, the key to the log.
            count = f"⚠ {status.warnings} warning{'s' if status.warnings > 1 else ''}"
            newest = " ".join(status.newest_warning.split())
            fields.append(
                Field(
                    f"{count} (l lists): {newest}" if newest else f"{count} (l lists)",
                    role="warning",
                    priority=85,
                    short=f"{count} (l lists)",
                    keep=True,
                )
            )
        uncounted = thread_coverage_note(frame, status.window)
        if uncounted is not None:  # work the figures leave out: as important as a warning
            fields.append(
                Field(
                    f"⚠ {uncounted}", role="warning", priority=85, short=f"⚠ {uncounted.split()[2]} counted"
                )
            )
        if frame is not None and frame.baseline is not None and not status.showing_values:
            base = frame.baseline
            span = f"{format_number(base.t_from)}–{format_number(base.t_to)} s"
            since = " since the config change" if base.after_change is not None else ""
            fields.append(
                Field(
                    f"Δ vs baseline {span}{since} (+ = better)",
                    role="warning",
                    priority=95,
                    short=f"Δ vs baseline {span}",
                    keep=True,
                )
            )
        else:
            window = window_title(status.window, frame)
            fields.append(Field(window, key="window", priority=95, short=status.window, keep=True))
        if frame is not None:
            fields.append(Field(format_si(frame.t, "s"), key="t", priority=70))
        options = header.options
        interval = options.interval
        timeslice = options.timeslice
        timing = format_si(interval, "s") if isinstance(interval, (int, float)) else "?"
        short_timing = timing
        if isinstance(timeslice, (int, float)):
            timing += f", slice {format_si(timeslice, 's')}"
        fields.append(Field(timing, key="interval", priority=40, short=short_timing))
        if frame is not None:
            overhead = format_value(frame.overhead, "ratio")
            fields.append(Field(f"{overhead} of a core", key="overhead", priority=35, short=overhead))
        unavailable = header.unavailable
        if unavailable:
            fields.append(
                Field(
                    f"{len(unavailable)} event{'s' if len(unavailable) > 1 else ''} n/a",
                    role="warning",
                    priority=50,
                    short=f"{len(unavailable)} n/a",
                )
            )
        if status.skipped_frames:
            fields.append(Field(f"skipped frames {status.skipped_frames}", role="dim", priority=10))
        return fields

    def show(self, frame: Frame | None, status: Status) -> None:
        self._last = (frame, status)
        width = self.content_size.width or WIDTH_UNKNOWN
        text = (
            self._line(self.what_is_measured(frame, status), width)
            + Text("\n")
            + self._line(self.state(frame, status), width)
        )
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)  # fixed height: no relayout per frame

    def on_resize(self, _event: events.Resize) -> None:
        if self._last is not None:
            self.show(*self._last)


WIDTH_UNKNOWN = 1000
"""Before the first layout the width is 0: everything is shown, fitted again once it is known."""
