"""The process list (``sectormon top``): sorting, filtering, the tree, and Enter attaching, driven
with Textual's Pilot at 80x24 and 160x50, with fixed rows so the screens are the same everywhere."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sectormon.host.process_table import ProcessRow
from sectormon.ui.process_picker import ProcessPicker

ROWS = [
    ProcessRow(1, None, "root", 0.0, 1, 12 << 20, "/sbin/init"),
    ProcessRow(400, 1, "alice", 97.5, 4, 900 << 20, "./stream --size 32M"),
    ProcessRow(401, 400, "alice", 3.0, 1, 5 << 20, "./stream-helper"),
    ProcessRow(500, 1, "bob", None, 48, 2 << 30, "mpirun -n 4 ./solver"),
    ProcessRow(2, None, "root", 0.0, 1, 0, "[kthreadd]"),
    ProcessRow(666, 1, "[b]eve[/b]", 0.5, 1, 1 << 20, "sh -c '[red]x[/red] \x1b[2J'"),
]

ASYNC = pytest.mark.asyncio
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
SnapCompare = Callable[..., bool]


def picker() -> ProcessPicker:
    return ProcessPicker(lambda: list(ROWS), refresh_seconds=3600)


@ASYNC
@SIZES
async def test_enter_attaches_to_the_highlighted_process_sorted_by_cpu(size: tuple[int, int]) -> None:
    app = picker()
    async with app.run_test(size=size) as pilot:
        assert app.shown == [400, 401, 666, 1, 2, 500]  # CPU % first; n/a last
        await pilot.press("down", "enter")
    assert app.return_value == 401


@ASYNC
@SIZES
async def test_sort_keys_filter_and_tree(size: tuple[int, int]) -> None:
    app = picker()
    async with app.run_test(size=size) as pilot:
        await pilot.press("M")
        assert app.shown[0] == 500
        await pilot.press("N")
        assert app.shown == [1, 2, 400, 401, 500, 666]
        await pilot.press("t")
        assert app.shown == [1, 400, 401, 500, 666, 2]  # children under their parent
        await pilot.press("t", "slash", *"alice", "enter")
        assert app.shown == [400, 401]
        await pilot.press("enter")
    assert app.return_value == 400


@ASYNC
async def test_q_leaves_without_choosing_and_escape_first_closes_the_filter() -> None:
    app = picker()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash", "x", "escape")
        assert app.is_running
        await pilot.press("q")
    assert app.return_value is None


@SIZES
def test_snapshot_process_list_tree(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(picker(), terminal_size=size, press=["t"])
