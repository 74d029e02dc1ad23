"""``T`` on the monitor: the counted processes' threads (tid, name, CPU %, state, last CPU,
affinity, bound), fixed rows at 80x24 and 160x50, this process's own threads read from procfs,
and what a simulated, CPU-wide or replayed session says instead."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from sectormon.host.thread_table import ThreadRow
from sectormon.io.header_codec import header_from_json
from sectormon.ui.app import SectormonApp, make_app
from sectormon.ui.screens.help import HelpScreen
from sectormon.ui.screens.threads import ThreadListScreen, target_pids, thread_list_refusal
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header
from tests.ui.screen_text import screen_text

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
SnapCompare = Callable[..., bool]

ROWS = [
    ThreadRow(4242, 4242, "stream_mix", "S", 0.5, 0, (0, 1, 2, 3, 8)),
    ThreadRow(4250, 4242, "omp [worker]", "R", 99.7, 12, (12,)),
    ThreadRow(4251, 4242, "io\x1b[2J", "D", None, None, None),
]


def perf_header(target: dict[str, Any]) -> dict[str, Any]:
    header = a64fx_header("perf")
    header["target"] = target
    return header


class Holder(App[None]):
    """The list alone over an empty screen, for its layout at each size."""

    def compose(self) -> ComposeResult:
        yield Static("monitor")

    def on_mount(self) -> None:
        self.push_screen(ThreadListScreen(lambda: list(ROWS), refresh_seconds=3600))


async def wait_for(pilot: Pilot[object], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await pilot.pause(0.05)


@pytest.mark.asyncio
@SIZES
async def test_the_list_shows_each_threads_state_last_cpu_affinity_and_binding(size: tuple[int, int]) -> None:
    app = Holder()
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ThreadListScreen), "the list opens")
        assert isinstance(app.screen, ThreadListScreen) and app.screen.shown == [4242, 4250, 4251]
        text = screen_text(app)
        assert "3 threads, 1 bound to one CPU" in text
        lines = {
            line.split()[0]: line for line in text.splitlines() if line.split()[:1] in (["4242"], ["4250"])
        }
        assert "0-3,8" in lines["4242"] and " no " in lines["4242"] and "0.5" in lines["4242"]
        assert "99.7" in lines["4250"] and " yes " in lines["4250"] and " 12 " in lines["4250"]
        assert "\\x1b[2J" in text and "n/a" in text  # a thread's name is text; unknowns are n/a
        await pilot.press("T")
        await wait_for(pilot, lambda: not isinstance(app.screen, ThreadListScreen), "T closes it")


@pytest.mark.asyncio
async def test_capital_t_lists_the_targets_own_threads_read_from_procfs() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="sm-test-worker")
    worker.start()
    target = {"mode": "pid", "pid": os.getpid(), "pids": [os.getpid()], "cmdline": ["pytest"], "threads": 2}
    fake = FakeSession(perf_header(target), a64fx_frames(2))
    app = make_app(fake)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            fake.emit()
            await pilot.press("T")
            await wait_for(pilot, lambda: isinstance(app.screen, ThreadListScreen), "the list opens")
            listing = app.screen
            assert isinstance(listing, ThreadListScreen)
            assert worker.native_id is not None
            await wait_for(pilot, lambda: worker.native_id in listing.shown, "the worker thread is listed")
            assert os.getpid() in listing.shown and f" {worker.native_id} " in screen_text(app)
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.dashboard, "Escape closes it")
    finally:
        stop.set()
        worker.join()


def messages(app: SectormonApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.asyncio
async def test_a_simulated_session_and_a_replay_say_they_have_no_threads_to_list(
    a64fx_session: FakeSession, replay_session: FakeReplay
) -> None:
    for session, said in (
        (a64fx_session, "threads: the simulated A64FX's threads are not processes of this host"),
        (replay_session, "threads: a replay's threads ran when it was recorded"),
    ):
        app = make_app(session)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("T")
            await pilot.pause()
            assert app.screen is app.dashboard
            assert any(m.startswith(said) for m in messages(app)), messages(app)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen) and "threads: CPU %" not in app.screen.text


def test_whose_threads_a_header_and_a_frame_name() -> None:
    header = header_from_json(perf_header({"mode": "pid", "pid": 10, "pids": [10, 30]}))
    assert target_pids(header, ["20", "10"]) == [10, 20, 30]
    assert thread_list_refusal(header, replay=False) is None
    cpus = header_from_json(perf_header({"mode": "cpus", "pid": None, "cpus": [0, 1]}))
    refusal = thread_list_refusal(cpus, replay=False)
    assert refusal is not None and "--cpus" in refusal


@SIZES
def test_snapshot_thread_list(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(Holder(), terminal_size=size)
