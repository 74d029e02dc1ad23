"""Snapshot tests at 80x24, 120x40 and 160x50 (pytest-textual-snapshot).

Regenerate after an intended change with ``pytest tests/ui --snapshot-update`` and look at the
SVGs under tests/ui/__snapshots__/ before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import pytest
from textual.pilot import Pilot

from sectormon.ui.app import make_app
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header, generic_frames, generic_header
from tests.ui.regions_fixture import a64fx_region_frames, generic_region_frames

SMALL = (80, 24)
MIDDLE = (120, 40)
WIDE = (160, 50)
SIZES = pytest.mark.parametrize("size", [SMALL, MIDDLE, WIDE], ids=["80x24", "120x40", "160x50"])
PRESETS = ("sector-off", "scenario-a")

SnapCompare = Callable[..., bool]


@pytest.fixture(autouse=True)
def _fixed_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help names the folder `r` records into: the same in every checkout."""
    monkeypatch.chdir("/")


def feed(
    session: FakeSession, frames: int, keys: Sequence[str] = (), after: int = 0
) -> Callable[[Pilot], Awaitable[None]]:
    """Emit frames, press keys, emit more: what a user sees a few seconds in."""

    async def run_before(pilot: Pilot) -> None:
        session.emit(frames)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        if after:
            session.emit(after)
        await pilot.pause()

    return run_before


def a64fx() -> FakeSession:
    return FakeSession(a64fx_header(), a64fx_frames(8, sector_from=3), presets=PRESETS)


@SIZES
def test_snapshot_a64fx_live(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = a64fx()
    assert snap_compare(make_app(session), terminal_size=size, run_before=feed(session, 4))


@SIZES
def test_snapshot_a64fx_baseline(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = a64fx()
    assert snap_compare(make_app(session), terminal_size=size, run_before=feed(session, 2, ["b"], after=3))


@SIZES
def test_snapshot_generic_host(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = FakeSession(generic_header(), generic_frames(4))
    assert snap_compare(make_app(session), terminal_size=size, run_before=feed(session, 2))


@SIZES
def test_snapshot_replay(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = FakeReplay(a64fx_header("replay"), a64fx_frames(8, sector_from=3))
    assert snap_compare(make_app(session), terminal_size=size, run_before=feed(session, 5, ["space"]))


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x50"])
def test_snapshot_core_detail(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = a64fx()
    run_before = feed(session, 2, ["b"], after=3)

    async def open_detail(pilot: Pilot) -> None:
        await run_before(pilot)
        await pilot.press("down", "down", "enter")
        await pilot.pause()

    assert snap_compare(make_app(session), terminal_size=size, run_before=open_detail)


def test_snapshot_cmg_detail(snap_compare: SnapCompare) -> None:
    session = a64fx()
    run_before = feed(session, 4)

    async def open_detail(pilot: Pilot) -> None:
        await run_before(pilot)
        pilot.app.query_one("#cmgs-table").focus()
        await pilot.press("down", "down", "enter")
        await pilot.pause()

    assert snap_compare(make_app(session), terminal_size=WIDE, run_before=open_detail)


@pytest.mark.parametrize(("key", "view"), [("2", "sectors"), ("3", "stalls"), ("5", "history")])
def test_snapshot_views_160x50(snap_compare: SnapCompare, key: str, view: str) -> None:
    session = a64fx()
    assert snap_compare(make_app(session), terminal_size=WIDE, run_before=feed(session, 4, [key], after=2))


def test_snapshot_energy_tab_80x24(snap_compare: SnapCompare) -> None:
    session = a64fx()
    assert snap_compare(make_app(session), terminal_size=SMALL, run_before=feed(session, 4, ["4"]))


def test_snapshot_help_80x24(snap_compare: SnapCompare) -> None:
    session = a64fx()
    assert snap_compare(
        make_app(session), terminal_size=SMALL, run_before=feed(session, 1, ["question_mark"])
    )


@pytest.mark.parametrize(
    ("theme", "size"), [("high-contrast", WIDE), ("light", SMALL)], ids=["hc-160x50", "light-80x24"]
)
def test_snapshot_themes(snap_compare: SnapCompare, theme: str, size: tuple[int, int]) -> None:
    session = a64fx()
    app = make_app(session, theme=theme)
    assert snap_compare(app, terminal_size=size, run_before=feed(session, 2, ["b"], after=3))


def marked_session() -> FakeSession:
    """The generic host running tests/regions/programs/marked.c's regions (regions_fixture)."""
    return FakeSession(generic_header(), generic_region_frames(8))


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x50"])
def test_snapshot_regions(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    session = marked_session()
    assert snap_compare(make_app(session), terminal_size=size, run_before=feed(session, 3, ["7"]))


def test_snapshot_regions_empty_80x24(snap_compare: SnapCompare) -> None:
    session = FakeSession(generic_header(), generic_frames(4))
    assert snap_compare(make_app(session), terminal_size=SMALL, run_before=feed(session, 2, ["7"]))


def test_snapshot_regions_baseline_120x40(snap_compare: SnapCompare) -> None:
    session = marked_session()
    assert snap_compare(
        make_app(session), terminal_size=MIDDLE, run_before=feed(session, 3, ["7", "b"], after=2)
    )


def test_snapshot_region_detail_120x40(snap_compare: SnapCompare) -> None:
    session = marked_session()
    keys = ["7", "down", "down", "enter"]
    assert snap_compare(make_app(session), terminal_size=MIDDLE, run_before=feed(session, 3, keys))


def test_snapshot_regions_a64fx_160x50(snap_compare: SnapCompare) -> None:
    session = FakeSession(a64fx_header(), a64fx_region_frames(8, sector_from=3), presets=PRESETS)
    assert snap_compare(make_app(session), terminal_size=WIDE, run_before=feed(session, 4, ["7"]))
