"""The cores view grouped by process (``g``) and the thread-coverage warning in the header."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from sectormon.data.frames import Frame, ProcessScope, ThreadTime
from sectormon.ui.app import make_app
from sectormon.ui.screens.detail import DetailScreen
from sectormon.ui.screens.help import HelpContent, HelpScreen, help_text
from sectormon.ui.widgets.core_table import CoreTable
from tests.ui.fake_controller import FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header
from tests.ui.screen_text import screen_text

SMALL = (80, 24)
WIDE = (160, 50)

PROCESSES = {
    "5001": ProcessScope(5001, "mpiexec", parent=1),
    "5120": ProcessScope(5120, "stream", parent=5001, rank=1),
    "5110": ProcessScope(5110, "stream", parent=5001, rank=0),
    "5130": ProcessScope(5130, "stream", parent=5001, rank=2),
}
ORDER = ["5110", "5120", "5130", "5001"]  # ranks in order, then the launcher


LOW = ThreadTime(0.8, 1.0)  # a fifth of the target's CPU time went uncounted


def with_procs(frame: Frame, thread_time: ThreadTime | None = LOW) -> Frame:
    """The frame with four processes: three ranks (each a core's figures) and their launcher."""
    cores = list(frame.cores)[:4]
    procs = {pid: frame.cores[core] for pid, core in zip(PROCESSES, cores, strict=True)}
    return dataclasses.replace(frame, procs=procs, processes=PROCESSES, thread_time=thread_time)


def session(thread_time: ThreadTime | None = LOW) -> FakeSession:
    return FakeSession(a64fx_header(), [with_procs(f, thread_time) for f in a64fx_frames(4)])


def rows(table: CoreTable) -> list[str]:
    first, second = table.tables
    return first.row_keys + (second.row_keys if second.display else [])


@pytest.mark.asyncio
async def test_g_groups_the_cores_view_by_process_ranks_first_and_back() -> None:
    fake = session()
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(2)
        await pilot.pause()
        table = app.dashboard.query_one(CoreTable)
        cores = rows(table)
        assert cores and not set(cores) & set(ORDER)
        await pilot.press("g")
        await pilot.pause()
        assert table.by_process and rows(table) == ORDER
        text = screen_text(app)
        assert "r0 5110 stream" in text and "5001 mpiexec" in text and "Processes (4" in text
        await pilot.press("s")  # sorting works on processes too
        await pilot.pause()
        assert sorted(rows(table)) == sorted(ORDER)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.kind == "proc"
        assert "Process" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("g")
        await pilot.pause()
        assert not table.by_process and rows(table) == cores


@pytest.mark.asyncio
async def test_without_processes_the_grouped_view_says_why() -> None:
    fake = FakeSession(a64fx_header(), a64fx_frames(2))
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(1)
        await pilot.press("g")
        await pilot.pause()
        assert rows(app.dashboard.query_one(CoreTable)) == []
        assert "Processes: none known" in screen_text(app)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("thread_time", "shown"),
    [
        (ThreadTime(0.8, 1.0), True),
        (ThreadTime(0.995, 1.0), False),  # 99.5 %: counted
        (ThreadTime(0.04, 0.05), False),  # 80 %, but 10 ms uncounted: within /proc's resolution
        (None, False),  # the source cannot tell
    ],
)
async def test_header_warns_when_threads_went_uncounted(thread_time: ThreadTime | None, shown: bool) -> None:
    fake = session(thread_time)
    app = make_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        fake.emit(1)
        await pilot.pause()
        assert ("threads counted 80% of the target's CPU" in screen_text(app)) is shown


@pytest.mark.asyncio
async def test_help_lists_the_grouping_key() -> None:
    for replay in (False, True):
        content = HelpContent(replay=replay, presets=False, views=())
        assert "group the cores view by process" in help_text(content)
    app = make_app(session())
    async with app.run_test(size=WIDE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "g            group the cores view by process" in screen_text(app)


def _grouped(fake: FakeSession) -> Callable[[Pilot], object]:
    async def run_before(pilot: Pilot) -> None:
        fake.emit(3)
        await pilot.pause()
        await pilot.press("g")
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x50"])
def test_snapshot_processes(snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
    fake = session()
    assert snap_compare(make_app(fake), terminal_size=size, run_before=_grouped(fake))
