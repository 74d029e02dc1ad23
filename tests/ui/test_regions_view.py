"""Pilot tests of the Regions view (``7``): the whole run's regions in first-marked order, the
empty state, Enter into a region's threads, CMGs, cores, ranks and processes and Escape back, the
``b`` baseline's change since its moment; live frames and the replay of a real recording."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from sectormon.session.replay import ReplaySession
from sectormon.ui.app import SectormonApp, make_app
from sectormon.ui.screens.dashboard import DashboardScreen
from sectormon.ui.screens.region_detail import RegionScreen
from sectormon.ui.widgets.metric_table import MetricTable
from sectormon.ui.widgets.region_view import RegionView
from tests.regions.regions_helpers import PROGRAMS, SECTORMON, build, need_perf
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_header, generic_header
from tests.ui.regions_fixture import a64fx_region_frames, generic_region_frames, with_regions
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.asyncio

SIZE = (120, 40)


def regions_table(app: SectormonApp) -> MetricTable:
    return app.dashboard.query_one(RegionView).table


def cell(app: SectormonApp, label: str, column: str) -> str:
    return regions_table(app).cell_text(label, column)


async def emit_each(session: FakeSession, pilot: Pilot[int], count: int) -> None:
    """One frame at a time, as a live session delivers them a second apart."""
    for _ in range(count):
        session.emit(1)
        await pilot.pause()


async def test_view_7_says_how_to_get_regions_when_none_are_marked(generic_session: FakeSession) -> None:
    app = make_app(generic_session)
    async with app.run_test(size=(80, 24)) as pilot:
        generic_session.emit(1)
        await pilot.pause()
        await pilot.press("7")
        await pilot.pause()
        assert app.dashboard.query_one(TabbedContent).active == "tab-regions"
        text = " ".join(screen_text(app).split())
        assert "No marked regions: build the program with $(sectormon markers --cflags)" in text
        assert "run it under sectormon" in text and "docs/regions.md" in text
        assert not regions_table(app).display


async def test_the_regions_of_the_whole_run_in_first_marked_order() -> None:
    session = FakeSession(generic_header(), generic_region_frames(6))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 2)
        await pilot.press("7")
        await pilot.pause()
        assert regions_table(app).row_keys == ["fapp_pages#1", "likwid_pages"]
        await emit_each(session, pilot, 3)  # worker comes; frames 4-5 list the regions reversed
        assert regions_table(app).row_keys == ["fapp_pages#1", "likwid_pages", "worker"]
        assert cell(app, "fapp_pages#1", "count:PAGE_FAULTS") == "30,000"  # 5 calls x 6,000
        assert cell(app, "fapp_pages#1", "calls") == "5"
        assert cell(app, "likwid_pages", "count:PAGE_FAULTS") == "~1,502"  # scaled: marked ~
        assert cell(app, "worker", "threads") == "3"
        assert cell(app, "fapp_pages#1", "IPC") == "n/a"
        text = screen_text(app)
        assert "Regions (3): whole run so far" in text and "~ scaled or split" in text


async def test_enter_opens_a_regions_threads_and_escape_goes_back() -> None:
    session = FakeSession(generic_header(), generic_region_frames(6))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 4)
        await pilot.press("7", "down", "down", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RegionScreen) and screen.label == "worker"
        assert screen.table("threads").row_keys == ["8573", "8574", "8575"]
        assert screen.table("threads").cell_text("8574", "count:PAGE_FAULTS") == "800"
        assert screen.table("cores").row_keys == ["0", "1"]
        assert screen.table("cmgs").row_keys == ["0"] and screen.table("ranks").row_keys == ["0"]
        assert screen.table("procs").row_keys == ["8572"]
        text = screen_text(app)
        assert "Region worker (run so far): 3 calls, 3 threads" in text and "tid 8575" in text
        session.emit(1)  # live: the screen follows the frames
        await pilot.pause()
        assert screen.table("threads").cell_text("8573", "count:PAGE_FAULTS") == "800"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert app.dashboard.query_one(TabbedContent).active == "tab-regions"


async def test_b_shows_each_regions_change_since_the_baseline_and_b_again_clears_it() -> None:
    session = FakeSession(generic_header(), generic_region_frames(8))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 3)  # t 1-3 s: fapp entered 3 times, worker open
        await pilot.press("7", "b")
        await pilot.pause()
        await emit_each(session, pilot, 2)  # t 4, 5 s carry the baseline taken at t 3 s
        header = next(line for line in screen_text(app).splitlines() if line.startswith("Region "))
        assert header.split()[:6] == ["Region", "Δcalls", "thr", "open", "Δtime", "ΔPAGE_FAULTS"]
        assert cell(app, "fapp_pages#1", "calls") == "+2"
        assert cell(app, "fapp_pages#1", "count:PAGE_FAULTS") == "+12,000"
        assert cell(app, "worker", "count:PAGE_FAULTS") == "+1,200"  # 3 x (800 - 400)
        assert cell(app, "likwid_pages", "count:PAGE_FAULTS") == "~±0"
        assert "Regions Δ since baseline (t 3.00s)" in screen_text(app)
        await pilot.press("d")  # values again, the baseline kept
        await pilot.pause()
        assert cell(app, "fapp_pages#1", "count:PAGE_FAULTS") == "30,000"
        await pilot.press("d", "b")
        await emit_each(session, pilot, 1)
        assert cell(app, "fapp_pages#1", "count:PAGE_FAULTS") == "36,000"
        assert "Regions (3): whole run so far" in screen_text(app)


async def test_the_region_breakdown_shows_the_change_since_the_baseline_too() -> None:
    session = FakeSession(generic_header(), generic_region_frames(8))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 3)
        await pilot.press("b")
        await emit_each(session, pilot, 2)
        await pilot.press("7", "down", "down", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RegionScreen)
        assert screen.table("threads").cell_text("8573", "count:PAGE_FAULTS") == "+400"
        assert "Δ since the baseline (as at t 3.00s)" in screen_text(app)


async def test_rotating_a64fx_region_marks_every_scaled_value() -> None:
    session = FakeSession(a64fx_header(), a64fx_region_frames(4))
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        await emit_each(session, pilot, 2)
        await pilot.press("7")
        await pilot.pause()
        assert regions_table(app).row_keys == ["sector_kernel#1"]
        assert cell(app, "sector_kernel#1", "count:CPU_CYCLES").startswith("~")  # coverage 20 %
        assert cell(app, "sector_kernel#1", "IPC").startswith("~")
        assert cell(app, "sector_kernel#1", "power_core_W") == "n/a"


async def test_a_replay_shows_the_regions_view_like_a_live_session() -> None:
    session = FakeReplay(generic_header(), generic_region_frames(6))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 3)
        await pilot.press("7")
        await pilot.pause()
        assert regions_table(app).row_keys == ["fapp_pages#1", "likwid_pages", "worker"]
        assert cell(app, "worker", "open") == "open"


@pytest.fixture(scope="module")
def marked_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of tests/regions/programs/marked.c counted by the installed command."""
    need_perf()
    folder = tmp_path_factory.mktemp("marked")
    program = build(PROGRAMS / "marked.c", folder / "marked", "-DLIKWID_PERFMON")
    recording = folder / "marked.jsonl.gz"
    run = subprocess.run(
        [str(SECTORMON), "--headless", "--record", str(recording), "--", str(program)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return recording


@pytest.mark.syscall
async def test_the_replay_of_a_recorded_marked_program_shows_its_exact_regions(
    marked_recording: Path,
) -> None:
    session = ReplaySession(marked_recording, speed=64.0)
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        deadline = time.monotonic() + 30
        while not (app.latest is not None and app.latest.final) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.latest is not None and app.latest.final
        await pilot.pause()
        assert regions_table(app).row_keys == ["fapp_pages#1", "likwid_pages", "worker"]
        faults = {label: cell(app, label, "count:PAGE_FAULTS") for label in regions_table(app).row_keys}
        counted = {label: int(text.replace(",", "")) for label, text in faults.items()}
        assert abs(counted["fapp_pages#1"] - 24_000) <= 240  # within 1 %, as docs/regions.md says
        assert abs(counted["likwid_pages"] - 1_500) <= 15
        assert abs(counted["worker"] - 2_400) <= 24
        assert cell(app, "fapp_pages#1", "calls") == "4" and cell(app, "worker", "threads") == "3"
        assert "Regions (3): whole run   " in screen_text(app)
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RegionScreen)
        threads = screen.table("threads")
        assert len(threads.row_keys) == 3
        per_thread = [
            int(threads.cell_text(tid, "count:PAGE_FAULTS").replace(",", "")) for tid in threads.row_keys
        ]
        assert all(abs(n - 800) <= 8 for n in per_thread)


async def test_a_long_or_hostile_region_name_is_cut_and_shown_as_text() -> None:
    frames = generic_region_frames(2)
    long_name = "x" * 120 + "[/]\x1b]0;title\x07"
    regions = dict(frames[1].run.regions)
    fapp = regions.pop("fapp_pages#1")
    regions[f"{long_name}#1"] = dataclasses.replace(fapp, name=long_name)
    frame = with_regions(frames[1], regions)
    session = FakeSession(generic_header(), [frame])
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await emit_each(session, pilot, 1)
        await pilot.press("7")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        row = next(line for line in lines if line.startswith("xxx"))
        assert row.startswith("x" * 31 + "…")  # the label column stops at 32 cells
        assert "likwid_pages" in screen_text(app)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, RegionScreen)
        assert "\\x1b]0;title\\x07" in screen_text(app)  # escaped, never sent to the terminal
