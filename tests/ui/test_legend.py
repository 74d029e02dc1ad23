"""The help's legend (every column label any layout shows, the simulator's tag override) and the
header's field fitting, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from sectormon.io.header_codec import header_from_json
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile
from sectormon.ui.context import RenderContext
from sectormon.ui.header_fit import Field, fit
from sectormon.ui.layout import LAYOUTS
from sectormon.ui.legend import column_legend, legend_lines, simulator_note


def _header(profile_name: str, **extra: Any) -> dict[str, Any]:
    return {"profile": profile_to_dict(load_profile(profile_name)), **extra}


def _unknown_profile_header() -> dict[str, Any]:
    """A profile without a layout: every metric in the core and CMG tables (the fallback)."""
    header = _header("generic")
    header["profile"]["name"] = "mine"
    return header


@pytest.mark.parametrize("header", [_header(n) for n in LAYOUTS] + [_unknown_profile_header()])
def test_every_label_a_layout_shows_has_a_legend_entry(header: dict[str, Any]) -> None:
    """SCE, ¬sec0, L1D dm, L2 pen, oth st, SWAP/cyc, ...: no label without its meaning."""
    ctx = RenderContext.from_header(header_from_json(header))
    lines = legend_lines(column_legend(ctx.panels, ctx.profile), ctx.panels.profile)
    text = "\n".join(lines)
    panels = ("cmg", "core", "energy", "sector", "stall", "history")
    columns = [c for name in panels for c in ctx.panels.panel(name)]
    assert columns
    for column in columns:
        entry = next((line for line in lines if line.startswith(f"  {column.label:<10} ")), None)
        assert entry is not None, f"no legend entry for the label {column.label!r}"
        assert column.metric in entry  # the label names its metric
        description = ctx.profile.info(column.metric).description
        assert description.split()[0] in text
    assert all(len(line) <= 76 for line in lines)  # the help box is 80 columns wide


def test_the_help_says_what_the_tag_override_does_on_the_simulator() -> None:
    """SCE usage reads 100 % with the sector cache off: the help says why."""
    on = simulator_note(
        header_from_json(
            {"source": {"kind": "sim"}, "sector_config": {"tag_override": True, "preset": "off"}}
        )
    )
    text = " ".join(" ".join(on).split())
    assert "SCE counts tagged accesses, so it reads 100 % whether the sector cache is on or off" in text
    assert "sector-off preset (c) only lifts the ways limits" in text
    untagged = simulator_note(
        header_from_json({"source": {"kind": "sim"}, "sector_config": {"tag_override": False}})
    )
    off = " ".join(" ".join(untagged).split())
    assert "SCE and ¬sec0 read 0 %" in off
    assert simulator_note(header_from_json({"source": {"kind": "perf"}, "sector_config": {}})) == []


def test_fit_shortens_then_drops_the_least_important_fields() -> None:
    fields = [
        Field("a" * 10, key="low", priority=1),
        Field("b" * 30, key="keep", priority=9, short="b" * 5, keep=True),
        Field("c" * 10, key="mid", priority=5, short="c"),
    ]
    assert [value for _, value in fit(fields, 100)] == ["a" * 10, "b" * 30, "c" * 10]
    assert [value for _, value in fit(fields, 51)] == ["b" * 30, "c" * 10]  # low dropped
    assert [value for _, value in fit(fields, 42)] == ["b" * 30, "c"]  # then mid shortened
    assert [value for _, value in fit(fields, 10)] == ["b" * 5]  # kept, at its shortest
