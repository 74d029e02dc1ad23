"""The TUI of a --proxy session: figures estimated from stand-ins carry ``≈``, the header names the
stand-ins and the help explains the mark; a session without a proxy shows neither."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sectormon.data.frames import Frame, MetricDelta, ScopeStats, WindowStats
from sectormon.ui.app import make_app
from sectormon.ui.cells import PROXY_MARK, delta_cell, metric_cell, scope_cells
from sectormon.ui.layout import Column
from sectormon.ui.screens.detail import DetailScreen
from sectormon.ui.screens.help import HelpScreen, help_text
from sectormon.ui.widgets.cmg_panel import CmgPanel
from sectormon.ui.widgets.core_table import CoreTable
from sectormon.ui.widgets.metric_table import MetricTable
from tests.ui.fake_controller import FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header
from tests.ui.screen_text import screen_text

STAND_INS = "proxy 1/CMG: cpus 12,24,36,48"


def _proxied(stats: ScopeStats) -> ScopeStats:
    """The same figures, every metric but the low-confidence and split ones flagged as estimated
    (those keep their ``~``), and the proxied events' counts; each with an error bound of 12 %
    but CPU_CYCLES, whose bound is unknown."""
    data = stats.to_json()
    low = {name for name, value in data["coverage"].items() if value < 0.1} | set(data["split"])
    data["proxy"] = [name for name in data["metrics"] if name not in low]
    data["proxy"] += [name for name in ("CPU_CYCLES", "INST_RETIRED") if name in data["counts"]]
    data["proxy_error"] = {name: None if name == "CPU_CYCLES" else 0.12 for name in data["proxy"]}
    return ScopeStats.from_json(data)


def _proxy_frame(frame: Frame) -> Frame:
    """A frame as a --proxy session makes it: CMG and total figures are estimates, in the
    interval and in its windows."""

    def window(stats: WindowStats) -> WindowStats:
        return dataclasses.replace(
            stats, total=_proxied(stats.total), cmgs={key: _proxied(s) for key, s in stats.cmgs.items()}
        )

    return dataclasses.replace(
        frame,
        total=_proxied(frame.total),
        cmgs={key: _proxied(stats) for key, stats in frame.cmgs.items()},
        recent=window(frame.recent),
        run=window(frame.run),
    )


def _proxy_session() -> FakeSession:
    header: dict[str, Any] = a64fx_header()
    header["proxy"] = {
        "per_cmg": 1,
        "reference": "units",
        "events": ["CPU_CYCLES", "INST_RETIRED"],
        "stand_ins": ["cpu:12", "cpu:24", "cpu:36", "cpu:48"],
        "described": STAND_INS,
    }
    return FakeSession(header, [_proxy_frame(f) for f in a64fx_frames(4)])


def test_a_proxied_figure_is_marked_and_others_are_not() -> None:
    metrics = {"IPC": 1.25, "busy": 0.5}
    stats = ScopeStats({}, {}, metrics, {"IPC": 1.0, "busy": 1.0}, proxy=frozenset({"IPC"}))
    assert metric_cell(stats, "IPC", "inst/cycle").text == PROXY_MARK + "1.25"
    assert PROXY_MARK not in metric_cell(stats, "busy", "").text


@pytest.mark.asyncio
async def test_proxy_session_marks_estimates_and_names_the_stand_ins() -> None:
    session = _proxy_session()
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        session.emit(3)
        await pilot.pause()
        text = screen_text(app)
        # the header's first line: the stand-ins, shortened to the setting where space is short
        assert "proxy 1/CMG" in text.splitlines()[0]
        cmg_lines = [line for line in text.splitlines() if "CMG" in line and PROXY_MARK in line]
        assert cmg_lines, text
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = help_text(app.help_content())  # what the scrolling help screen holds
        assert "≈value   estimated under --proxy" in shown and STAND_INS in shown


@pytest.mark.asyncio
async def test_a_wide_header_names_every_stand_in() -> None:
    session = _proxy_session()
    app = make_app(session)
    async with app.run_test(size=(200, 50)) as pilot:
        session.emit(1)
        await pilot.pause()
        assert STAND_INS in screen_text(app).splitlines()[0]


@pytest.mark.asyncio
async def test_a_session_without_proxy_shows_no_mark() -> None:
    session = FakeSession(a64fx_header(), a64fx_frames(4))
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        session.emit(3)
        await pilot.pause()
        text = screen_text(app)
        assert PROXY_MARK not in text and "proxy" not in text
        assert "--proxy" not in help_text(app.help_content())


@pytest.mark.parametrize("size", [(120, 40)], ids=["120x40"])
def test_snapshot_a64fx_proxy(snap_compare: Any, size: tuple[int, int]) -> None:
    session = _proxy_session()

    async def run_before(pilot: Any) -> None:
        session.emit(3)
        await pilot.pause()

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)


def test_a_proxied_baseline_delta_is_marked() -> None:
    delta = MetricDelta(base=1.0, now=1.25, delta=0.25, improvement=0.25, relative=0.25)
    assert delta_cell(delta, "", relative=True, proxied=True).text.startswith(PROXY_MARK)
    assert not delta_cell(delta, "", relative=True).text.startswith(PROXY_MARK)
    # low confidence says more than the proxy: its ~ wins, as in the value cells
    assert delta_cell(delta, "", relative=True, low=True, proxied=True).text.startswith("~")
    metrics = {"IPC": 1.25, "busy": 0.5}
    stats = ScopeStats({}, {}, metrics, {"IPC": 1.0, "busy": 1.0}, proxy=frozenset({"IPC"}))
    columns = [Column("IPC", "IPC"), Column("busy", "busy")]
    deltas = {"IPC": delta, "busy": delta}
    cells = scope_cells(stats, columns, {}, deltas)
    assert cells[0].text.startswith(PROXY_MARK) and not cells[1].text.startswith(PROXY_MARK)


@pytest.mark.asyncio
async def test_the_cmg_detail_marks_its_estimates_and_their_baseline_deltas() -> None:
    session = _proxy_session()
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        session.emit(2)
        await pilot.press("b")
        session.emit(1)
        await pilot.pause()
        app.dashboard.query_one(CmgPanel).table.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.kind == "cmg"
        metrics = screen.query_one("#detail-metrics", MetricTable)
        for column in ("value", "now", "improvement", "relative"):
            assert metrics.cell_text("IPC", column).startswith(PROXY_MARK), column
        assert not metrics.cell_text("IPC", "base").startswith(PROXY_MARK)
        # each estimate with its 95 % error bound, n/a where it is unknown (never a made-up 0)
        assert metrics.cell_text("IPC", "value").endswith(" ±12 %")
        counts = screen.query_one("#detail-counts", MetricTable)
        assert counts.cell_text("CPU_CYCLES", "count").startswith(PROXY_MARK)
        assert counts.cell_text("CPU_CYCLES", "count").endswith(" ±n/a")
        assert counts.cell_text("INST_RETIRED", "count").endswith(" ±12 %")
        assert f"{PROXY_MARK} = estimated from --proxy stand-ins" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        # a core is a stand-in's own count: nothing marked there
        app.dashboard.query_one(CoreTable).tables[0].focus()
        await pilot.press("enter")
        await pilot.pause()
        core = app.screen
        assert isinstance(core, DetailScreen) and core.kind == "core"
        assert PROXY_MARK not in screen_text(app)
