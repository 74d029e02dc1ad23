"""The rotation indicator: who rotates the groups (sync or kernel, and how often), which event
group is on the counters now, and each group's coverage."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

from sectormon.data.frames import Frame
from sectormon.files.text import printable
from sectormon.ui.format import format_coverage, format_si


class RotationBar(Static):
    """``groups ▶SC1 20%  SC2 20% ...``: the active group marked by a glyph and a colour."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rotation-bar--active", "rotation-bar--key", "rotation-bar--dim"}

    _shown: Text | None = None

    def show(self, frame: Frame | None, group_names: list[str]) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("groups ", self.get_component_rich_style("rotation-bar--key", partial=True))
        rotation = frame.rotation if frame is not None else None
        if rotation:
            # sync: sectormon switches the groups every slice; kernel: the kernel's multiplexer
            # does, and "kernel" stands for all groups at once (each group's share is its coverage)
            slice_s = rotation.timeslice
            every = format_si(slice_s, "s") if isinstance(slice_s, (int, float)) else printable(str(slice_s))
            label = f"[{printable(str(rotation.mode))} {every}] "  # as the header writes durations
            text.append(label, self.get_component_rich_style("rotation-bar--dim", partial=True))
        names = [printable(n) for n in group_names]  # a profile's or recording's names
        if rotation and rotation.mode == "kernel":
            # Every group is on at once and scaled by its own time_running: no group has a share
            # of the time, and none is "the active one".
            text.append("  ".join(n for n in names if n != "kernel"))
            text.append(
                "  all on, multiplexed by the kernel",
                self.get_component_rich_style("rotation-bar--dim", partial=True),
            )
            if text != self._shown:
                self._shown = text
                self.update(text, layout=False)
            return
        if frame is not None:
            names += [printable(g) for g in frame.groups if printable(g) not in names]
        if not names:
            text.append("(no rotation)", self.get_component_rich_style("rotation-bar--dim", partial=True))
        active = printable(frame.active_group) if frame is not None else ""
        coverage_by_name = {printable(g): c for g, c in frame.groups.items()} if frame is not None else {}
        for name in names:
            coverage = coverage_by_name.get(name)
            label = f"{name} {format_coverage(coverage)}"
            if name == active:
                text.append(f"▶{label}", self.get_component_rich_style("rotation-bar--active", partial=True))
            else:
                text.append(f" {label}")
            text.append("  ")
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)
