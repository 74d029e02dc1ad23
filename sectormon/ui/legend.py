"""The help screen's legend: what every column label of this session's layout means, and what the
simulator's sector tagging does to the sector columns.

The entries come from the same :class:`~sectormon.ui.layout.Panels` the tables take their labels
from, and the descriptions and units from the session's profile, so a label added to a layout
(or a profile's new metric in the fallback layout) is explained without anyone writing it here.
Pure data, no Textual.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from sectormon.data.header import Header
from sectormon.ui.format import unit_kind
from sectormon.ui.header_info import ProfileView
from sectormon.ui.layout import Panels, label

PANEL_ORDER = ("cmg", "core", "energy", "sector", "stall", "history")
LABEL_WIDTH = 10
TEXT_WIDTH = 74
"""The help box is 80 columns with its border and padding."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One column label: the metric it shows, what the profile says it is, and its unit."""

    label: str
    metric: str
    description: str
    unit: str


def unit_words(unit: str) -> str:
    """How a metric's unit reads in the tables: ratios are shown as percentages."""
    kind = unit_kind(unit)
    if kind in ("ratio", "percent"):
        return "%; vs baseline in percentage points"
    if kind == "per_s":
        return "per second"
    if kind == "count":
        return ""
    return unit.strip()


def column_legend(panels: Panels, profile: ProfileView) -> list[Entry]:
    """Every label the session's panels show, once, in the order the panels are on screen."""
    seen: set[str] = set()
    entries: list[Entry] = []
    for name in PANEL_ORDER:
        for column in panels.panel(name):
            if column.label in seen:
                continue
            seen.add(column.label)
            info = profile.info(column.metric)
            entries.append(Entry(column.label, column.metric, info.description, unit_words(info.unit)))
    return entries


def _wrapped(head: str, text: str) -> list[str]:
    indent = " " * (2 + LABEL_WIDTH + 1)
    return textwrap.wrap(
        text,
        TEXT_WIDTH,
        initial_indent=f"  {head:<{LABEL_WIDTH}} ",
        subsequent_indent=indent,
        break_on_hyphens=False,
    ) or [f"  {head}"]


def legend_lines(entries: list[Entry], profile_name: str) -> list[str]:
    """``Columns`` then one wrapped entry per label: ``label  metric (unit): description``."""
    lines = [f"Columns (profile {profile_name or '?'})"]
    for entry in entries:
        unit = f" ({entry.unit})" if entry.unit else ""
        about = f": {entry.description}" if entry.description else ""
        lines += _wrapped(entry.label, f"{entry.metric}{unit}{about}")
    unbound = "threads not bound to one CPU: in no core's row, in a CMG's only when all their CPUs are in it"
    lines += _wrapped("unbound", unbound)
    return lines


def simulator_note(header: Header) -> list[str]:
    """What the simulator's HPC tag override means for the sector columns (a simulated session's
    SCE usage reads 100 % with the sector cache off); nothing for other sources."""
    if not header.source.modelled:
        return []
    config = header.sector_config
    override = config.get("tag_override")
    sce, not_sec0 = label("SCE_usage_ratio"), label("non_sec0_ratio")
    if override is False:
        text = (
            "off in this session (--no-tag-override): no access carries a sector tag, so every "
            f"access uses sector 0: {sce} and {not_sec0} read 0 % and the sectors' ways limits "
            "protect nothing."
        )
    else:
        text = (
            "on in this session (tag_override=True): every access of the simulated program "
            "carries its array's sector tag in address bits [57:56], as a program built for "
            f"the sector cache does. {sce} counts tagged accesses, so it reads 100 % whether the "
            "sector cache is on or off: the sector-off preset (c) only lifts the ways limits "
            f"(plain LRU), it does not untag. {not_sec0} is the share tagged with a sector other "
            "than 0. --no-tag-override runs untagged (0 %, everything in sector 0). docs/sim.md "
            "has the model."
        )
    return ["The simulated A64FX", *_wrapped("tag", f"override {text}")]
