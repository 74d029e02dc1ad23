"""The help explains what is on screen (every column label, the simulator's tag override, the views
that work at this width and profile, where recordings and bookmarks go), and the header and the
tables fit 80 columns."""

from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Any

import pytest

from sectormon.data.frames import FrameRotation
from sectormon.ui.app import SectormonApp, make_app
from sectormon.ui.messages import FrameArrived
from sectormon.ui.screens.dashboard import (
    HISTORY_HYSTERESIS,
    HISTORY_MIN_ROWS,
    TAB_BAR_ROWS,
    DashboardScreen,
)
from sectormon.ui.screens.help import HelpScreen
from sectormon.ui.widgets.cmg_panel import CmgPanel
from sectormon.ui.widgets.core_table import CoreTable
from sectormon.ui.widgets.metric_table import MetricTable
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header, generic_frames, generic_header
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.asyncio

SMALL = (80, 24)
MIDDLE = (120, 40)
WIDE = (160, 50)
SIZES = [SMALL, MIDDLE, WIDE]


def _table_labels(app: SectormonApp) -> set[str]:
    """Every column label of every table on the dashboard, sort arrows left out."""
    labels: set[str] = set()
    for table in app.dashboard.query(MetricTable):
        for column in table._columns[1:]:  # the first column labels the rows (CPU, CMG, domain)
            labels.add(column.label.rstrip("▲▼").removeprefix("Δ"))
    return labels


@pytest.mark.parametrize(
    "session",
    [
        lambda: FakeSession(a64fx_header(), a64fx_frames(4), presets=("sector-off", "scenario-a")),
        lambda: FakeSession(generic_header(), generic_frames(4)),
    ],
    ids=["a64fx", "generic"],
)
@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x50"])
async def test_every_label_on_screen_is_in_the_help(session: Any, size: tuple[int, int]) -> None:
    fake = session()
    app = make_app(fake)
    async with app.run_test(size=size) as pilot:
        fake.emit(2)
        await pilot.pause()
        labels = _table_labels(app)
        assert labels
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text
        missing = [label for label in labels if not re.search(rf"^  {re.escape(label)} ", text, re.M)]
        assert missing == []


async def test_the_help_of_a_simulated_session_has_the_note() -> None:
    fake = FakeSession(a64fx_header("sim"), a64fx_frames(2))
    app = make_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(app.screen.text.split())
        assert "The simulated A64FX" in text and "tag override" in text


def _views_line(text: str) -> str:
    return next(line for line in text.splitlines() if "views:" in line)


async def test_the_help_lists_the_views_that_work_at_this_width_and_profile() -> None:
    """`4` did nothing at 160 columns although the help listed views 1-5 (also under generic)."""
    fake = FakeSession(a64fx_header(), a64fx_frames(4))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(2)
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        line = _views_line(app.screen.text)
        assert line.split()[:5] == ["1", "2", "3", "7", "views:"]
        assert "energy beside the CMG table at this width" in line
        assert "history below the tables at this width" in line
        await pilot.press("escape")
        await pilot.resize_terminal(*SMALL)
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert _views_line(app.screen.text).split()[:7] == ["1", "2", "3", "4", "5", "7", "views:"]
    fake = FakeSession(generic_header(), generic_frames(4))
    app = make_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        fake.emit(2)
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        line = _views_line(app.screen.text)
        assert line.split()[:4] == ["1", "5", "7", "views:"] and "sectors" not in line


async def test_a_view_without_its_tab_says_where_it_is() -> None:
    fake = FakeSession(generic_header(), generic_frames(4))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(2)
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()
        assert "energy: not in profile generic" in [n.message for n in app._notifications]
        await pilot.press("5")  # a wide screen with room shows the history below the tables
        await pilot.pause()
        assert "history: below the tables at this width" in [n.message for n in app._notifications]
        assert app.dashboard.query_one("#history-side").display


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40", "160x50"])
async def test_the_header_shows_target_window_and_state_at_every_width(size: tuple[int, int]) -> None:
    """80 columns cut the header's target, overhead and window mode; 160 still cut line 1."""
    fake = FakeSession(a64fx_header(), a64fx_frames(4))
    app = make_app(fake)
    async with app.run_test(size=size) as pilot:
        fake.emit(2)
        await pilot.press("z")
        await pilot.pause()
        line1, line2 = screen_text(app).splitlines()[:2]
        assert "target pid 4242" in line1 and "stream_mix" in line1 and not line1.rstrip().endswith("…")
        assert "window last interval" in line2 or "window interval" in line2
        assert "PAUSED" in line2 and ("not rec" in line2 or "no rec" in line2)
        assert not line2.rstrip().endswith("…")


@pytest.mark.parametrize("size", [SMALL, MIDDLE], ids=["80x24", "120x40"])
async def test_baseline_deltas_never_run_together(size: tuple[int, int]) -> None:
    """At 80 columns a low-confidence change (~Δ-0.05) filled its whole column and ran into the
    one before it (SCE, ¬sec0)."""
    fake = FakeSession(a64fx_header(), a64fx_frames(8, sector_from=3))
    app = make_app(fake)
    async with app.run_test(size=size) as pilot:
        fake.emit(2)
        await pilot.press("b")
        fake.emit(4)
        await pilot.pause()
        for table in app.dashboard.query(MetricTable):
            for key in table.row_keys:
                for column, width in zip(table._columns[1:], table._widths[1:], strict=True):
                    text = table.cell_text(key, column.key)
                    assert len(text) < width, (table.id, key, column.label, text)


async def test_tables_fit_80_columns() -> None:
    """The CMG table's last column and the cores' last column were cut at 80 columns."""
    fake = FakeSession(a64fx_header(), a64fx_frames(4), presets=("sector-off", "scenario-a"))
    app = make_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        fake.emit(2)
        await pilot.pause()
        text = screen_text(app)
        cmg_header = next(line for line in text.splitlines() if line.startswith("CMG "))
        assert cmg_header.rstrip().endswith("mem W")
        core_header = next(line for line in text.splitlines() if line.startswith("CPU"))
        assert core_header.rstrip().endswith("core W")
        assert text.splitlines()[-1].rstrip().endswith("c preset")  # the footer's last key


async def test_a_recording_started_with_r_says_where_it_is(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    fake = FakeSession(a64fx_header(), a64fx_frames(4))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(1)
        await pilot.press("r")
        await pilot.pause()
        where = os.path.join(tmp_path, "sectormon-test.jsonl.gz")
        assert f"● REC {where}" in screen_text(app)
        assert f"recording to {where}" in [n.message for n in app._notifications]
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert f"in {tmp_path}" in " ".join(app.screen.text.split())
    assert app.recordings == [where]


async def test_bookmarks_in_a_replay_number_on_and_say_where_they_are_kept() -> None:
    fake = FakeReplay(a64fx_header("replay"), a64fx_frames(4))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(1)
        await pilot.press("m")
        await pilot.pause()
        # FakeReplay's timeline holds one bookmark ("phase 2"): the next one is number 2.
        assert ("bookmark", "bookmark 2") in fake.calls
        assert any(n.message.endswith("kept in run.jsonl.gz.bookmarks.jsonl") for n in app._notifications)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "kept in run.jsonl.gz.bookmarks.jsonl" in app.screen.text


async def test_the_history_below_leaves_the_core_table_its_rows_when_the_panels_above_grow() -> None:
    """The history below the core tables is fitted again at every frame: the panels above the views
    settle over the first frames (the CMG table fills in), and a fit made from an earlier layout
    left the core table no rows at all (the demo under load, 1 start in 6)."""
    fake = FakeSession(a64fx_header(), a64fx_frames(6))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(1)
        await pilot.pause()
        dashboard = app.dashboard
        assert dashboard.query_one("#history-side").display
        cmgs = dashboard.query_one(CmgPanel)
        cmgs.styles.height = cmgs.outer_size.height + 6  # the panels above the views grow
        await pilot.pause()
        fake.emit(1)
        await pilot.pause()
        await pilot.pause()
        views = dashboard.query_one("#views")
        assert views.outer_size.height - TAB_BAR_ROWS >= dashboard.query_one(CoreTable).rows_needed()
        assert "L1D dm" in screen_text(app)


async def test_the_history_tab_does_not_come_and_go_when_the_tables_need_a_row_more_or_less(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 160 columns the "5 History" tab came and went with every frame whose tables needed a
    row more or less (a thread on the ``unbound`` row): the history moves below the tables with
    HISTORY_MIN_ROWS + HISTORY_HYSTERESIS rows free and back to its tab under HISTORY_MIN_ROWS."""
    fake = FakeSession(a64fx_header(), a64fx_frames(6))
    app = make_app(fake)
    needed = {"rows": 0}
    monkeypatch.setattr(CoreTable, "rows_needed", lambda self: needed["rows"])
    # Each frame's fit runs after the next refresh, not within a number of pauses (under load the
    # display was read before the fit of its frame): wait for the fit, and keep the rows it saw.
    fits: list[int] = []
    fit = DashboardScreen._fit_history

    def fit_and_count(screen: DashboardScreen) -> None:
        side, views = screen.query_one("#history-side"), screen.query_one("#views")
        fits.append(views.outer_size.height + (side.outer_size.height if side.display else 0) - TAB_BAR_ROWS)
        fit(screen)

    monkeypatch.setattr(DashboardScreen, "_fit_history", fit_and_count)
    async with app.run_test(size=WIDE) as pilot:

        async def fitted() -> int:
            """Deliver a frame and wait for its fit; the rows free for the history and the tables."""
            before = len(fits)
            fake.emit(1)
            deadline = time.monotonic() + 30
            while len(fits) == before and time.monotonic() < deadline:
                await pilot.pause(0.01)
            assert len(fits) > before, "no fit after the frame"
            return fits[-1]

        # The panels above the views settle over the first frames: until two fits see the same rows.
        free, previous = await fitted(), -1
        while free != previous:
            free, previous = await fitted(), free
        side = app.dashboard.query_one("#history-side")

        async def spare(rows: int) -> bool:
            needed["rows"] = free - rows
            assert await fitted() == free
            return bool(side.display)

        assert await spare(HISTORY_MIN_ROWS + HISTORY_HYSTERESIS + 4)
        for rows in [HISTORY_MIN_ROWS, HISTORY_MIN_ROWS + 1] * 3:  # below: it stays
            assert await spare(rows), rows
        assert not await spare(HISTORY_MIN_ROWS - 1)
        for rows in [HISTORY_MIN_ROWS, HISTORY_MIN_ROWS + HISTORY_HYSTERESIS - 1] * 3:  # in its tab: stays
            assert not await spare(rows), rows
        assert await spare(HISTORY_MIN_ROWS + HISTORY_HYSTERESIS)


async def test_the_header_says_one_thread_and_writes_every_duration_with_a_unit() -> None:
    header = a64fx_header()
    header["target"] = {"pid": 4242, "cmdline": ["./app"], "threads": 1}
    fake = FakeSession(header, a64fx_frames(2))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        frame = fake.next_frame()
        app.post_message(
            FrameArrived(dataclasses.replace(frame, threads={}, rotation=FrameRotation("sync", 1e-05)), 1)
        )
        await pilot.pause()
        text = screen_text(app)
        assert "(1 thread" in text and "(1 threads" not in text
        assert "groups [sync 10.0µs]" in text and "1e-05" not in text
