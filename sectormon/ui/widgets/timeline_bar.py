"""The replay timeline: play state, speed, position / duration, and the marks along a bar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

from sectormon.data.readings import Mark
from sectormon.ui.format import format_duration, format_si

MARK_GLYPHS = {"baseline": "◆", "baseline-clear": "◇", "config": "▲", "bookmark": "•", "end": "■"}


@dataclass(frozen=True, slots=True)
class Timeline:
    """One reading of the replay controller (taken on the UI thread)."""

    position: float
    duration: float
    speed: float
    paused: bool
    marks: tuple[Mark, ...] = ()
    step: float = 1.0  # stream seconds per wall second at 1x (a simulated recording: one frame)


def timeline_cells(timeline: Timeline, width: int) -> list[tuple[str, str]]:
    """The bar as (text, role) runs: played part, unplayed part and mark glyphs."""
    if width <= 0:
        return []
    duration = timeline.duration if timeline.duration > 0 else 0.0
    played = 0 if duration == 0 else round(min(1.0, max(0.0, timeline.position / duration)) * width)
    cells = ["━"] * played + ["─"] * (width - played)
    roles = ["played"] * played + ["rest"] * (width - played)
    if duration > 0:
        for mark in timeline.marks:
            index = min(width - 1, max(0, int(mark.t / duration * width)))
            cells[index] = MARK_GLYPHS.get(mark.kind, "•")
            roles[index] = "mark"
    runs: list[tuple[str, str]] = []
    for char, role in zip(cells, roles, strict=False):
        if runs and runs[-1][1] == role:
            runs[-1] = (runs[-1][0] + char, role)
        else:
            runs.append((char, role))
    return runs


class TimelineBar(Static):
    """``▶ 2x  1:05 / 10:00 ━━━━◆━━━──────▲────``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline-bar--played",
        "timeline-bar--rest",
        "timeline-bar--mark",
        "timeline-bar--state",
    }

    def show(self, timeline: Timeline | None) -> None:
        if timeline is None:
            self.update("")
            return
        if timeline.paused:
            state = "⏸ paused"
        elif timeline.duration > 0 and timeline.position >= timeline.duration:
            state = "■ at the end"
        else:
            state = "▶ playing"
        base = "" if timeline.step == 1.0 else f" (1x = {format_si(timeline.step, 's')}/s)"
        head = (
            f"{state} {timeline.speed:g}x{base}  "
            f"{format_duration(timeline.position, timeline.duration)} / "
            f"{format_duration(timeline.duration, timeline.duration)}  "
        )
        text = Text(no_wrap=True, overflow="crop")
        text.append(head, self.get_component_rich_style("timeline-bar--state", partial=True))
        width = max(0, self.size.width - len(head) - 1)
        for run, role in timeline_cells(timeline, width):
            text.append(run, self.get_component_rich_style(f"timeline-bar--{role}", partial=True))
        self.update(text, layout=False)

    def legend(self, marks: Sequence[Mark]) -> str:
        kinds = sorted({m.kind for m in marks})
        return "  ".join(f"{MARK_GLYPHS.get(k, '•')} {k}" for k in kinds)
