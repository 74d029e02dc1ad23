"""Text from files and profiles reaches the screen as text: never as Textual/Rich markup (``[/]``
ended the live TUI with MarkupError, and exit status 0), never as terminal control sequences.

The two end-to-end cases run the real commands in-process, with the TUI under Pilot instead of a
terminal: ``sectormon sim`` with a profile whose group names, units and descriptions hold markup
and escape sequences, and ``sectormon replay`` of a recording whose marks and bookmarks do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.data.readings import Mark
from sectormon.io.jsonl import encode_mark
from sectormon.session.control import SessionControl
from sectormon.ui.app import SectormonApp, make_app, run_tui
from sectormon.ui.attach import AttachOffer
from sectormon.ui.messages import FrameArrived, SessionWarning
from sectormon.ui.screens.help import HelpScreen
from sectormon.ui.screens.warnings import WarningsScreen
from tests.ui.fake_controller import FakeSession
from tests.ui.frames_fixture import generic_frames, generic_header
from tests.ui.screen_text import screen_text

PROFILES = Path(__file__).resolve().parents[2] / "sectormon" / "profiles"
HOSTILE = "[link=file:///etc/passwd]x[/link]\x1b]0;pwned\x07\nsectormon: fake"
"""Markup, an OSC retitling the terminal, and a newline faking a sectormon line."""
WAIT_S = 60.0


def hostile_profile(tmp_path: Path) -> Path:
    """The a64fx profile with markup and control characters in group names, a unit and
    descriptions, and an event the simulator cannot count alone in a group (two warnings that
    quote them)."""
    text = (PROFILES / "a64fx.yaml").read_text(encoding="utf-8")
    text = re.sub(r"^  SC1:", lambda _m: '  "[/]":', text, flags=re.M)
    text = re.sub(r"^  SC2:", lambda _m: "  " + json.dumps(HOSTILE) + ":", text, flags=re.M)
    text = text.replace(
        "events:\n", 'events:\n  BOGUS: {code: 0x7ff0, scope: pe, unit: "[/]", desc: "[bold]x[/]"}\n', 1
    )
    text = text.replace("groups:\n", 'groups:\n  "[b]empty[/b]": {desc: "[/]", events: [BOGUS]}\n', 1)
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def _until(pilot: Any, done: Callable[[], bool], what: str) -> None:
    """Let the app run until ``done()`` (a state, not a time), failing after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def tui_under_pilot(
    monkeypatch: pytest.MonkeyPatch, drive: Callable[[SectormonApp, Any], Any]
) -> list[SectormonApp]:
    """Make the commands' TUI run under Pilot (no terminal needed); ``drive`` plays the user."""
    apps: list[SectormonApp] = []

    def run_tui(
        controller: SessionControl, theme: str | None = None, attach: AttachOffer | None = None
    ) -> int:
        async def main() -> None:
            app = make_app(controller, theme=theme, attach=attach)
            apps.append(app)
            async with app.run_test(size=(160, 50)) as pilot:
                await drive(app, pilot)
                await pilot.press("q")

        asyncio.run(main())
        controller.wait(5.0)
        return int(apps[-1].return_code or 0)

    monkeypatch.setattr("sectormon.commands.front_end.require_terminal", lambda: None)
    monkeypatch.setattr("sectormon.commands.replay.require_terminal", lambda: None)
    monkeypatch.setattr("sectormon.ui.app.run_tui", run_tui)
    return apps


def assert_plain(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


@pytest.mark.slow
def test_live_sim_tui_shows_markup_and_escapes_in_profile_names_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = hostile_profile(tmp_path)

    async def drive(app: SectormonApp, pilot: Any) -> None:
        await _until(pilot, lambda: app.frames_received >= 2 and len(app.warning_log) >= 2, "frames")
        text = screen_text(app)
        assert "[/] " in text  # the rotation bar names the group as it is spelt
        assert r"[link=file:///etc/passwd]x[/link]\x1b]0;pwned\x07\x0asectormon: fake" in text
        assert "⚠ 2 warnings (l lists)" in text
        assert_plain(text)
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, WarningsScreen), "the warnings log")
        log = app.screen.text  # type: ignore[attr-defined]
        assert "groups left empty and skipped: [b]empty[/b]" in log
        await pilot.press("escape")
        await pilot.press("question_mark")
        await _until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        assert_plain(app.screen.text)  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.press("enter")  # a core's detail: the metrics and events with their units
        await pilot.pause()
        assert_plain(screen_text(app))

    apps = tui_under_pilot(monkeypatch, drive)
    status = cli.main(["sim", "--profile", str(profile), "--pace", "0.01"])
    assert apps and apps[0].return_code == 0 and status == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "MarkupError" not in err


@pytest.mark.slow
def test_replay_shows_markup_in_mark_labels_and_bookmarks_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "run.jsonl"
    assert cli.main(["sim", "--json", "--count", "4", "--record", str(recording)]) == 0
    lines = recording.read_text(encoding="utf-8").splitlines()
    t = json.loads(lines[2])["t"]
    lines.insert(2, encode_mark(Mark(t=t, kind="bookmark", label="[/]" + HOSTILE)))
    recording.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bookmarks = Path(f"{recording}.bookmarks.jsonl")
    bookmarks.write_text(
        encode_mark(Mark(t=t, kind="bookmark", label="[/]"))
        + "\n"
        + json.dumps({"schema": "[/]" + HOSTILE})
        + "\n",
        encoding="utf-8",
    )
    capsys.readouterr()

    async def drive(app: SectormonApp, pilot: Any) -> None:
        await _until(pilot, lambda: app.frames_received >= 1 and app.warning_log, "a frame and a warning")
        assert_plain(screen_text(app))
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, WarningsScreen), "the warnings log")
        log = app.screen.text  # type: ignore[attr-defined]
        assert "[/][link=file:///etc/passwd]" in log
        assert not any(line.startswith("sectormon: fake") for line in log.splitlines())
        assert_plain(log)
        await pilot.press("escape")
        await pilot.press("m")  # a new bookmark beside the hostile ones
        await pilot.pause()
        assert_plain(screen_text(app))

    apps = tui_under_pilot(monkeypatch, drive)
    assert cli.main(["replay", str(recording)]) == 0
    assert apps and apps[0].return_code == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_crash_inside_the_tui_is_not_exit_status_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live TUI that died of a MarkupError exited 0: Textual's return code (1 after an
    unhandled exception, with no result) is the exit status."""

    def crashed(self: SectormonApp, *args: Any, **kwargs: Any) -> None:
        try:
            raise RuntimeError("a widget raised")
        except RuntimeError as exc:
            self._handle_exception(exc)

    monkeypatch.setattr(SectormonApp, "run", crashed)
    fake = FakeSession(generic_header(), generic_frames(1))
    assert run_tui(fake) == 1


@pytest.mark.asyncio
async def test_markup_in_warnings_and_group_names_is_drawn_as_text() -> None:
    """The quick form of the two above, on the fake session: a warning and a group named ``[/]``
    (MarkupError ended the app) and an escape sequence in a group name."""
    fake = FakeSession(generic_header(), generic_frames(2))
    app = make_app(fake)
    async with app.run_test(size=(160, 50)) as pilot:
        frame = fake.next_frame()
        groups = {"[/]": 0.5, "\x1b]0;pwned\x07": 0.5}
        app.post_message(SessionWarning("groups left empty and skipped: [/], [b]x"))
        app.post_message(FrameArrived(dataclasses.replace(frame, groups=groups, active_group="[/]"), 1))
        await _until(pilot, lambda: app.frames_received >= 1 and app.warning_log, "a frame and a warning")
        await pilot.pause()
        text = screen_text(app)
        assert "▶[/] 50%" in text and r"\x1b]0;pwned\x07 50%" in text
        assert "⚠ 1 warning (l lists): groups left empty and skipped: [/], [b]x" in text
        assert_plain(text)
        app.notify("[link=file:///etc/passwd]x[/link] [/]")  # any notification: plain text too
        await pilot.pause()
        shown = [n for n in app._notifications if n.message == "[link=file:///etc/passwd]x[/link] [/]"]
        assert shown and not shown[0].markup
        assert_plain(screen_text(app))
    assert app.return_code in (None, 0)
