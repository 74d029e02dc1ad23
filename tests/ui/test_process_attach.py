"""``p`` over the live monitor: the process list, its filter and tree, Enter asking the command to
attach (a real child process picked from the host's list), Escape back untouched, and what a
replay or a command without the offer says instead; ``z`` pauses the display now."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from textual.pilot import Pilot

from sectormon.host import process_table
from sectormon.ui.app import SectormonApp, make_app
from sectormon.ui.process_picker import ProcessListScreen
from sectormon.ui.screens.help import HelpScreen
from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header
from tests.ui.screen_text import screen_text
from tests.ui.test_process_picker import ROWS

ASYNC = pytest.mark.asyncio
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
NOTE = "Enter ends this session and counts the chosen process. Escape returns to the monitor."


class Offer:
    """The command layer's side of ``p``, recorded: what was requested, and what to answer."""

    def __init__(self, refused: str | None = None, answer: str | None = None) -> None:
        self.refused = refused
        self.answer = answer
        self.requested: list[int] = []

    def refusal(self) -> str | None:
        return self.refused

    def note(self) -> str:
        return NOTE

    def request(self, pid: int) -> str | None:
        self.requested.append(pid)
        return self.answer


@pytest.fixture
def child() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A real process to pick, with a token in its command line no other process has."""
    token = f"sectormon-attach-{uuid.uuid4().hex}"
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", token])
    try:
        yield process, token
    finally:
        process.kill()
        process.wait()


async def wait_for(pilot: Pilot[object], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await pilot.pause(0.05)


def messages(app: SectormonApp) -> list[str]:
    return [n.message for n in app._notifications]


@ASYNC
@SIZES
async def test_p_filter_and_enter_ask_to_attach_to_the_chosen_process(
    a64fx_session: FakeSession, child: tuple[subprocess.Popen[bytes], str], size: tuple[int, int]
) -> None:
    process, token = child
    offer = Offer()
    app = make_app(a64fx_session, attach=offer)
    async with app.run_test(size=size) as pilot:
        a64fx_session.emit(2)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessListScreen), "the list opens")
        listing = app.screen
        assert isinstance(listing, ProcessListScreen)
        await wait_for(pilot, lambda: process.pid in listing.shown, "the child is listed")
        assert "Enter ends this session" in screen_text(app)  # what attaching does, said first
        await pilot.press("slash", *token[-12:], "enter")
        await wait_for(pilot, lambda: listing.shown == [process.pid], "the filter keeps only the child")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running, "the monitor ends")
    assert offer.requested == [process.pid]
    assert "stop" in a64fx_session.calls and app.return_value == 0


@ASYNC
@SIZES
async def test_escape_returns_to_the_monitor_untouched_and_t_shows_the_tree(
    a64fx_session: FakeSession, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.setattr(process_table.ProcessTable, "snapshot", lambda _self: list(ROWS))
    offer = Offer()
    app = make_app(a64fx_session, attach=offer)
    async with app.run_test(size=size) as pilot:
        a64fx_session.emit(2)
        theme = app.theme
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessListScreen), "the list opens")
        listing = app.screen
        assert isinstance(listing, ProcessListScreen)
        await pilot.press("t")
        await wait_for(pilot, lambda: listing.shown == [1, 400, 401, 666, 500, 2], "the tree")
        assert "└ ./stream-helper" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, "back to the monitor")
        a64fx_session.emit()
        await pilot.pause()
        assert app.is_running and offer.requested == [] and "stop" not in a64fx_session.calls
        assert app.latest is a64fx_session.last_emitted
        assert app.theme == theme  # t was the list's tree, not the monitor's next theme


@ASYNC
async def test_a_refused_request_keeps_the_session(
    a64fx_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_table.ProcessTable, "snapshot", lambda _self: list(ROWS))
    offer = Offer(answer="pid 400 has ended: pick another process")
    app = make_app(a64fx_session, attach=offer)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessListScreen), "the list opens")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.dashboard, "back to the monitor")
        assert app.is_running and offer.requested == [400] and "stop" not in a64fx_session.calls
        assert "pid 400 has ended: pick another process" in messages(app)


@ASYNC
async def test_a_replay_says_it_cannot_attach(replay_session: FakeReplay) -> None:
    app = make_app(replay_session, attach=Offer())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any(m.startswith("a replay cannot attach to a process") for m in messages(app))
        await pilot.press("z")  # the display pauses with z in a replay too
        assert app.display_paused


@ASYNC
async def test_without_an_offer_or_with_a_refusal_p_says_why(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session)  # sectormon sim: its command offers no attach
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any(m.startswith("this command cannot attach") for m in messages(app))
    refusing = make_app(a64fx_session, attach=Offer(refused="cannot attach with these options: --seed"))
    async with refusing.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        assert refusing.screen is refusing.dashboard
        assert "cannot attach with these options: --seed" in messages(refusing)


@ASYNC
async def test_z_pauses_the_display_and_the_help_lists_p_and_z(a64fx_session: FakeSession) -> None:
    app = make_app(a64fx_session, attach=Offer())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("z")
        assert app.display_paused
        await pilot.press("z")
        assert not app.display_paused
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text
        assert "space / z" in text and "process list: Enter ends this session" in text


@SIZES
def test_snapshot_process_list_over_the_monitor(
    snap_compare: Callable[..., bool], monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """The list with what attaching does said above it, over a live session (fixed rows)."""
    monkeypatch.setattr(process_table.ProcessTable, "snapshot", lambda _self: list(ROWS))
    session = FakeSession(a64fx_header(), a64fx_frames(4))

    async def opened(pilot: Pilot[object]) -> None:
        session.emit(2)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ProcessListScreen), "the list opens")

    assert snap_compare(make_app(session, attach=Offer()), terminal_size=size, run_before=opened)
