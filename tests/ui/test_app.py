"""Pilot tests: every key and screen of the TUI, driven by a deterministic fake controller."""

from __future__ import annotations

import dataclasses
import os
import re
import time

import pytest
from textual import events
from textual.widgets import TabbedContent

from sectormon.data.frames import FrameRotation
from sectormon.ui.app import SectormonApp, make_app
from sectormon.ui.messages import FrameArrived
from sectormon.ui.screens.dashboard import DashboardScreen
from sectormon.ui.screens.detail import DetailScreen
from sectormon.ui.screens.help import HelpScreen
from sectormon.ui.screens.warnings import WarningsScreen
from sectormon.ui.widgets.cmg_panel import CmgPanel
from sectormon.ui.widgets.core_table import CoreTable
from sectormon.ui.widgets.filter_bar import FilterBar
from sectormon.ui.widgets.metric_table import MetricTable
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frame
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.asyncio

WIDE = (160, 50)
SMALL = (80, 24)


def core_keys(app: SectormonApp) -> list[str]:
    first, second = app.dashboard.query_one(CoreTable).tables
    return first.row_keys + (second.row_keys if second.display else [])


def cell(app: SectormonApp, core: str, metric: str) -> str:
    for table in app.dashboard.query_one(CoreTable).tables:
        if core in table.row_keys:
            return table.cell_text(core, metric)
    raise KeyError(core)


async def test_lifecycle_subscribe_start_stop(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    assert isinstance(app, SectormonApp)
    async with app.run_test(size=SMALL) as pilot:
        assert a64fx_session.calls[:2] == ["subscribe", "start"]
        await pilot.press("q")
        await pilot.pause()
    assert "stop" in a64fx_session.calls
    assert app.return_code == 0


async def test_frames_from_the_pipeline_thread(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit_from_thread(5).join()
        await pilot.pause()
        await pilot.pause()
        assert app.latest is a64fx_session.last_emitted
        assert app.frames_received + app.frames_skipped == 5
        assert "t 5.00s" in screen_text(app)


async def test_a_newer_frame_replaces_a_queued_one() -> None:
    older, newer = FrameArrived(a64fx_frame(0), 1), FrameArrived(a64fx_frame(1), 2)
    assert older.can_replace(newer)  # Textual asks the queued message about the one behind it
    assert not newer.can_replace(older)


async def test_stale_frames_are_dropped_not_queued(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit(20)  # all queued before the UI runs: only the last is drawn
        await pilot.pause()
        assert app.latest is a64fx_session.last_emitted
        assert app.frames_received < 20
        assert app.frames_received + app.frames_skipped == 20
        assert f"skipped frames {app.frames_skipped}" in screen_text(app)


async def test_160x50_shows_48_cores_and_4_cmgs_without_scrolling(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        tables = app.dashboard.query_one(CoreTable).tables

        def settled() -> bool:  # the state asserted, not a number of pauses (failed under load)
            cmgs = app.dashboard.query_one(CmgPanel).table
            return cmgs.max_scroll_y == 0 and all(
                t.display and t.max_scroll_y == 0 and t.max_scroll_x == 0 for t in tables
            )

        deadline = time.monotonic() + 30
        while not settled() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        text = screen_text(app)
        for core in [*(str(c) for c in range(12, 60)), "unbound"]:
            assert core in core_keys(app)
        for table in app.dashboard.query_one(CoreTable).tables:
            assert table.display and table.max_scroll_y == 0 and table.max_scroll_x == 0
        assert all(f"CMG{c}" in text for c in range(4)) and "total" in text
        assert app.dashboard.query_one(CmgPanel).table.max_scroll_y == 0
        assert "CMG-wide" in text


async def test_80x24_fits_by_scrolling(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=SMALL) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        first, second = app.dashboard.query_one(CoreTable).tables
        assert not second.display
        assert len(first.row_keys) == 49
        assert first.max_scroll_y > 0
        await pilot.press("ctrl+end")  # DataTable: last row, scrolling
        await pilot.pause()
        assert first.scroll_y > 0


async def test_na_and_low_confidence_cells(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        assert cell(app, "59", "power_core_W") == "n/a"
        assert cell(app, "unbound", "SCE_usage_ratio") == "n/a"
        assert cell(app, "30", "IPC").startswith("~")  # coverage 0.08 < half of the 0.2 share
        assert cell(app, "20", "SCE_usage_ratio").startswith("~")  # split
        assert not cell(app, "12", "IPC").startswith("~")
        cmg = app.dashboard.query_one(CmgPanel).table
        assert cmg.cell_text("3", "avg_L2_miss_penalty") == "n/a"
        assert cmg.cell_text("2", "L2D_miss_rate_corrected").startswith("~")


@pytest.mark.parametrize("size", [WIDE, SMALL])
async def test_space_pauses_the_display_not_the_sampling(
    a64fx_session: FakeSession, size: tuple[int, int]
) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=size) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        await pilot.press("space")
        assert app.display_paused
        a64fx_session.emit(2)
        await pilot.pause()
        text = screen_text(app)
        assert "DISPLAY PAUSED" in text  # also at 80 columns, where the header line is cut
        assert app.latest is a64fx_session.last_emitted  # frames still arrive
        shown = app.shown
        assert shown is not None and shown is not app.latest and shown.t == 1.0
        if size == WIDE:
            assert "t 1.00s" in text
        await pilot.press("w")  # redrawing for another reason must not unfreeze the display
        await pilot.pause()
        assert app.shown is shown
        if size == WIDE:
            assert "t 1.00s" in screen_text(app)
        await pilot.press("w", "w")
        await pilot.press("z")
        await pilot.pause()
        assert not app.display_paused
        assert "t 3.00s" in screen_text(app)


async def test_baseline_key_marks_shows_deltas_and_clears(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit(2)
        await pilot.pause()
        await pilot.press("b")
        assert a64fx_session.calls[-1] == "mark_baseline"
        a64fx_session.emit(3)
        await pilot.pause()
        assert "Δ vs baseline" in screen_text(app)
        ipc = cell(app, "12", "IPC")
        assert ipc.endswith("%") and ipc[0] in "+-"  # IPC improvement in %
        await pilot.press("d")
        await pilot.pause()
        assert cell(app, "12", "IPC")[0] not in "+-"
        await pilot.press("d")
        await pilot.press("b")
        assert a64fx_session.calls[-1] == "clear_baseline"
        a64fx_session.emit()
        await pilot.pause()
        assert "Δ vs baseline" not in screen_text(app)


async def test_record_key_toggles_recording(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.press("r")
        await pilot.pause()
        # An automatic name lands in the current folder: the header says which.
        assert f"● REC {os.path.abspath('sectormon-test.jsonl.gz')}" in screen_text(app)
        await pilot.press("r")
        await pilot.pause()
        assert "not recording" in screen_text(app)
        assert a64fx_session.calls.count("toggle_recording") == 2


async def test_sort_by_key_and_by_clicking_a_header(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        assert core_keys(app)[:2] == ["12", "13"]
        await pilot.press("s")
        await pilot.pause()
        table = app.dashboard.query_one(CoreTable)
        assert table.sort_by == "IPC" and table.descending
        assert any(n.message == "cores sorted by IPC" for n in app._notifications)
        assert app.latest is not None
        scopes = app.latest.cores
        ipcs = [scopes[k].metrics["IPC"] or 0.0 for k in core_keys(app)]
        assert ipcs == sorted(ipcs, reverse=True)
        # Click the "L1 miss" header: x offset = CPU (8) + IPC (7) columns, then click again: reversed.
        first = table.tables[0]
        await pilot.click(first, offset=(16, 0))
        await pilot.pause()
        assert table.sort_by == "L1D_miss_rate" and table.descending
        await pilot.click(first, offset=(16, 0))
        await pilot.pause()
        assert table.sort_by == "L1D_miss_rate" and not table.descending
        values = [scopes[k].metrics["L1D_miss_rate"] or 0.0 for k in core_keys(app)]
        assert values == sorted(values)


async def test_window_key_cycles_interval_recent_run(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        frame = a64fx_session.emit(3)
        await pilot.pause()
        assert "window last interval" in screen_text(app)
        await pilot.press("w")
        await pilot.pause()
        assert app.ctx.window == "recent" and "window rolling window" in screen_text(app)
        recent_ipc = frame.recent.cores["12"].metrics["IPC"]
        assert cell(app, "12", "IPC") == f"{recent_ipc:.2f}"
        await pilot.press("w")
        assert app.ctx.window == "run"
        await pilot.press("w")
        assert app.ctx.window == "interval"


async def test_filter_cores(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        await pilot.press("slash")
        await pilot.press(*"cmg1,50")  # c is the preset key: the input must get it, not the app
        await pilot.press("enter")
        await pilot.pause()
        assert core_keys(app) == [*(str(c) for c in range(24, 36)), "50"]
        assert not any(call == ("apply_sector_preset", "sector-off") for call in a64fx_session.calls)
        assert "filter 'cmg1,50': 13 of 49" in screen_text(app)
        await pilot.press("slash", "backspace", "backspace", "x", "enter")
        await pilot.pause()
        assert any("filter:" in n.message for n in app._notifications)
        await pilot.press("escape")
        await pilot.pause()
        assert len(core_keys(app)) == 13  # cancelled: the previous filter stays
        await pilot.press("slash", *["backspace"] * 10, "enter")
        await pilot.pause()
        assert len(core_keys(app)) == 49


async def test_filter_gets_keys_typed_right_after_slash(a64fx_session: FakeSession) -> None:
    """Keys already queued behind ``/`` (a fast typist, a paste, tmux send-keys) go to the filter:
    the filter takes focus while ``/`` is handled, not a message later."""
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        for key, char in [("slash", "/"), *((c, c) for c in "cmg1"), ("enter", "\r")]:
            app.post_message(events.Key(key, char))  # all queued before the first is handled
        await pilot.pause()
        await pilot.pause()
        assert core_keys(app) == [str(c) for c in range(24, 36)]
        assert not any(call == ("apply_sector_preset", "sector-off") for call in a64fx_session.calls)
        await pilot.press("slash", "end", "slash")  # a / in the open filter is text, not a reopen
        assert app.dashboard.query_one(FilterBar).value == "cmg1/"


async def test_sector_preset_key(a64fx_session: FakeSession, generic_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.press("c")
        await pilot.press("c")
        await pilot.press("c")
        await pilot.pause()
        presets = [
            c[1] for c in a64fx_session.calls if isinstance(c, tuple) and c[0] == "apply_sector_preset"
        ]
        assert presets == ["sector-off", "scenario-a", "sector-off"]
        assert "preset sector-off" in screen_text(app)
        assert "c preset" in screen_text(app)  # shown in the footer
    # A controller that tells the configuration a preset gives: the header shows it, the
    # Sectors view reads it too (they showed the start's configuration after a switch).
    a64fx_session.calls.clear()
    a64fx_session.sector_config_for = lambda name: {"preset": name, "enabled": name != "sector-off"}
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.press("c")
        await pilot.pause()
        assert "sector preset sector-off" in screen_text(app)  # at 160 columns, its short form
        assert app.header.sector_config == {"preset": "sector-off", "enabled": False}
    app = make_app(generic_session)
    async with app.run_test(size=WIDE) as pilot:
        generic_session.emit()
        await pilot.press("c")
        await pilot.pause()
        assert not any(isinstance(c, tuple) for c in generic_session.calls)
        assert "c preset" not in screen_text(app)


async def test_help_screen(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert footer.startswith(" q quit  ? help ")  # the way to every other key, even at 80 columns
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "baseline" in text and "sector-cache preset" in text and "Replay" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_view_keys_and_tab_clicks(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=SMALL) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        tabs = app.dashboard.query_one(TabbedContent)
        expected = {
            "2": "tab-sectors",
            "3": "tab-stalls",
            "4": "tab-energy",
            "5": "tab-history",
            "1": "tab-cores",
        }
        for key, tab in expected.items():
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab, key
            if key == "3":
                assert "mem: L2 miss wait" in screen_text(app)
            if key == "2":
                assert "sec0/sec1 = 10/4 ways" in screen_text(app)
            if key == "5":
                assert "IPC" in screen_text(app)
        await pilot.click("#--content-tab-tab-stalls")
        await pilot.pause()
        assert tabs.active == "tab-stalls"


async def test_wide_layout_moves_energy_beside_the_cmgs(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        assert app.dashboard.query_one("#energy-side").display
        await pilot.press("4")  # the energy tab is hidden when the panel is on screen
        assert app.dashboard.query_one(TabbedContent).active == "tab-cores"
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert not app.dashboard.query_one("#energy-side").display
        await pilot.press("4")
        assert app.dashboard.query_one(TabbedContent).active == "tab-energy"


async def test_enter_opens_core_and_cmg_detail(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailScreen) and (screen.kind, screen.key) == ("core", "13")
        text = screen_text(app)
        assert "Core 13 (CMG 0)" in text and "INST_RETIRED / CPU_CYCLES" in text
        assert " inst/cycle " in text  # the unit column fits the profile's longest unit
        assert "CPU_CYCLES" in text and "0x011" in text and "unavailable" in text
        metrics = screen.query_one("#detail-metrics", MetricTable)
        before = metrics.cell_text("IPC", "value")
        a64fx_session.emit()  # the detail screen follows new frames
        await pilot.pause()
        assert metrics.cell_text("IPC", "value") != before
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        app.dashboard.query_one(CmgPanel).table.focus()
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        cmg_screen = app.screen
        assert isinstance(cmg_screen, DetailScreen) and (cmg_screen.kind, cmg_screen.key) == ("cmg", "2")
        text = screen_text(app)
        assert "CMG-wide" in text and "split" in text and "L2D_miss_rate_corrected" in text


async def test_detail_shows_baseline_columns(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit(2)
        await pilot.press("b")
        a64fx_session.emit(2)
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = screen_text(app)
        assert "baseline" in text and "improv" in text and "rel %" in text


async def test_replay_keys(replay_session: FakeReplay) -> None:
    app = make_app(replay_session)
    async with app.run_test(size=SMALL) as pilot:
        replay_session.emit()
        await pilot.pause()
        app._tick_timeline()  # the timeline's own timer may not have run yet on a loaded machine
        await pilot.pause()
        assert "▶ playing 1x  1:05 / 10:00" in screen_text(app)
        await pilot.press("right", "left", "shift+right", "shift+left", "right_square_bracket")
        await pilot.press("left_square_bracket", "left_square_bracket", "home", "end", "space")
        await pilot.pause()
        app._tick_timeline()
        await pilot.pause()
        calls = [c for c in replay_session.calls if isinstance(c, tuple)]
        assert calls == [
            ("seek", 1.0),
            ("seek", -1.0),
            ("seek", 10.0),
            ("seek", -10.0),
            ("set_speed", 2.0),
            ("set_speed", 1.0),
            ("set_speed", 0.5),
            ("seek_to", 0.0),
            ("seek_to", 600.0),
            ("set_paused", True),
        ]
        text = screen_text(app)
        assert "⏸ paused 0.5x  10:00 / 10:00" in text and "◆" in text
        await pilot.press("z")
        assert app.display_paused
        await pilot.press("question_mark")
        await pilot.pause()
        assert "Replay" in screen_text(app)


async def test_replay_timeline_of_a_simulated_recording(replay_session: FakeReplay) -> None:
    """1x of a simulated recording is one frame a second (its 10 ms played in 10 ms): the timeline
    says what 1x is; at the end it says so instead of 'playing'."""
    replay_session.time_scale = lambda: 0.00025
    app = make_app(replay_session)
    async with app.run_test(size=SMALL) as pilot:
        replay_session.emit()
        for _ in range(40):  # the timeline is drawn by its own timer: a loaded machine runs it later
            await pilot.pause(0.05)
            if "▶ playing 1x" in screen_text(app):
                break
        assert "▶ playing 1x (1x = 250µs/s)" in screen_text(app)
        replay_session._position = replay_session.duration()
        app._tick_timeline()
        await pilot.pause()
        assert "■ at the end 1x (1x = 250µs/s)" in screen_text(app)


async def test_bookmark_key_and_no_record_key_in_replay(
    a64fx_session: FakeSession, replay_session: FakeReplay
) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        await pilot.press("m", "m")
        await pilot.pause()
        assert [c for c in a64fx_session.calls if isinstance(c, tuple) and c[0] == "bookmark"] == [
            ("bookmark", "bookmark 1"),
            ("bookmark", "bookmark 2"),
        ]
        assert any(n.message.startswith("bookmark 2 at t ") for n in app._notifications)
        await pilot.press("4")  # wide: the energy figures sit beside the CMGs, not on a tab
        await pilot.pause()
        assert any(n.message == "energy: beside the CMG table at this width" for n in app._notifications)
        assert "record" in screen_text(app)  # the footer offers it live
    app = make_app(replay_session)
    async with app.run_test(size=WIDE) as pilot:
        replay_session.emit()
        await pilot.press("r")
        await pilot.pause()
        assert "toggle_recording" not in replay_session.calls
        assert " record " not in screen_text(app)  # not offered in the footer


async def test_sort_note_names_the_column_as_labelled(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        a64fx_session.emit()
        labels = {c.metric: c.label for c in app.ctx.panels.core}
        relabelled = [m for m, label in labels.items() if label != m]
        assert relabelled  # the a64fx layout shortens long metric names
        table = app.dashboard.query_one(CoreTable)
        for _ in range(len(labels) + 1):
            await pilot.press("s")
            await pilot.pause()
            if table.sort_by == relabelled[0]:
                break
        want = f"cores sorted by {labels[relabelled[0]]} ({relabelled[0]})"
        assert any(n.message == want for n in app._notifications), want


async def test_live_session_ignores_replay_keys(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=SMALL) as pilot:
        a64fx_session.emit()
        await pilot.pause()
        await pilot.press("right_square_bracket", "home")
        assert not any(isinstance(c, tuple) for c in a64fx_session.calls)
        assert app.check_action("seek", (1,)) is False


async def test_generic_host_adapts_the_panels(generic_session: FakeSession) -> None:
    app = make_app(generic_session)
    async with app.run_test(size=WIDE) as pilot:
        generic_session.emit()
        await pilot.pause()
        tabs = app.dashboard.query_one(TabbedContent)
        for hidden in ("tab-sectors", "tab-stalls", "tab-energy"):
            assert tabs.get_tab(hidden).has_class("-hidden")
        assert not app.dashboard.query_one("#energy-side").display
        assert cell(app, "0", "IPC") == "n/a"
        assert cell(app, "0", "cpu_utilization") == "0.620"  # unit: cores busy
        text = screen_text(app)
        assert "dom0" in text and "CMG-wide" not in text and "profile generic" in text


async def test_final_frame_and_warnings(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        warned = dataclasses.replace(a64fx_frame(0), warnings=("thread 4250 exited",))
        for _ in range(2):
            app.post_message(FrameArrived(warned, 1))
            await pilot.pause()
        # A warning is no notification (six stacked over the tables for seconds): the header
        # says the count and the newest in one field, ``l`` lists them all with their times.
        assert not app._notifications
        assert app.warning_log[0].text == "thread 4250 exited" and app.warning_log[0].count == 2
        assert "⚠ 1 warning (l lists): thread 4250 exited" in screen_text(app)
        assert "window last interval" in screen_text(app)
        app.post_message(FrameArrived(dataclasses.replace(a64fx_frame(1), final=True), 2))
        await pilot.pause()
        assert "session ended" in screen_text(app)
        # the final frame's top level covers the whole run: it is not labelled an interval
        assert "window whole run (final frame)" in screen_text(app)
        # a command that crashed says so where the session says it ended
        a64fx_session.end_note = lambda: "the command was killed by SIGSEGV (exit status 139)"
        app.post_message(FrameArrived(dataclasses.replace(a64fx_frame(1), final=True), 3))
        await pilot.pause()
        assert "session ended: the command was killed by SIGSEGV (exit status 139)" in screen_text(app)
        a64fx_session.warn_from_thread("recording stopped: disk full").join()
        await pilot.pause()
        assert "⚠ 2 warnings (l lists)" in screen_text(app)  # the newest: shortened off this line
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, WarningsScreen)
        lines = app.screen.text.splitlines()
        assert lines[0] == "Warnings (2)"
        assert re.fullmatch(r"  \d\d:\d\d:\d\d  t 1.00s +⚠ thread 4250 exited  \(×2\)", lines[1]), lines[1]
        assert re.fullmatch(r"  \d\d:\d\d:\d\d  t \S+ +⚠ recording stopped: disk full", lines[2]), lines[2]
        await pilot.press("l")
        await pilot.pause()
        assert app.screen is app.dashboard
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_text = app.screen.text  # the whole help: the warnings come after the legend
        assert "Warnings (2; l lists them with their times)" in help_text
        assert "⚠ thread 4250 exited" in help_text
        assert "⚠ recording stopped: disk full" in help_text


async def test_the_rotation_bar_says_which_rotation_runs(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)
    async with app.run_test(size=WIDE) as pilot:
        app.post_message(FrameArrived(a64fx_frame(0), 1))
        await pilot.pause()
        assert "[sync" not in screen_text(app)  # a recording that does not say (no field)
        rotation = FrameRotation("kernel", 0.5, "auto: ...")
        app.post_message(FrameArrived(dataclasses.replace(a64fx_frame(1), rotation=rotation), 2))
        await pilot.pause()
        text = screen_text(app)
        assert "groups [kernel 500ms]" in text and "all on, multiplexed by the kernel" in text
        assert "▶" not in text.split("groups [kernel", 1)[1].splitlines()[0]  # no group is "the" active one
