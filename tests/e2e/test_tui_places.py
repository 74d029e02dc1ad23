"""The installed TUI in tmux: where a recording made with `r` went (header, quit), bookmarks made
in a replay kept beside the recording, and the ended screen's group shares."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import sectormon_command
from tests.e2e.test_tui import RECORDING, ROTATING, Terminal

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")]


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def _in(folder: Path, *argv: str) -> list[str]:
    return ["sh", "-c", f"cd {shlex.quote(str(folder))} && exec {shlex.join([sectormon_command(), *argv])}"]


def test_r_says_where_the_recording_goes_and_quit_says_it_again(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    term = Terminal(_in(tmp_path))
    terminals.append(term)
    term.wait_for("source sim", "CMG0")
    term.send("r")
    screen = term.wait_for(f"● REC {tmp_path}/sectormon-")
    name = re.search(rf"{re.escape(str(tmp_path))}/(sectormon-\S+\.jsonl\.gz)", screen)
    assert name is not None
    term.send("q")
    screen = term.wait_for("SECTORMON-EXIT=0", timeout=20)
    assert f"sectormon: recorded to {tmp_path / name.group(1)}" in screen
    assert (tmp_path / name.group(1)).stat().st_size > 0


def test_a_bookmark_made_in_a_replay_is_there_next_time(terminals: list[Terminal], tmp_path: Path) -> None:
    recording = tmp_path / RECORDING.name
    shutil.copy(RECORDING, recording)
    term = Terminal([sectormon_command(), "replay", str(recording)])
    terminals.append(term)
    term.wait_for("CMG0")
    term.send("m")
    term.wait_for("bookmark 1")
    term.send("q")
    term.wait_for("SECTORMON-EXIT=0", timeout=20)
    kept = Path(f"{recording}.bookmarks.jsonl")
    assert '"label":"bookmark 1"' in kept.read_text()
    again = Terminal([sectormon_command(), "replay", str(recording)])
    terminals.append(again)
    again.wait_for("CMG0")
    again.send("m")
    again.wait_for("bookmark 2")  # numbered on from the kept one
    again.send("q")
    again.wait_for("SECTORMON-EXIT=0", timeout=20)
    assert kept.read_text().count('"kind":"bookmark"') == 2


def test_the_ended_screens_group_shares_add_up_to_the_whole_run(terminals: list[Terminal]) -> None:
    """They added up to 75 %: the run counted the TUI's start-up, before the first slice. The
    rotating profile: software events of the plain generic profile are always on (one group)."""
    term = Terminal(
        [sectormon_command(), "--profile", str(ROTATING), "--rotation", "sync", "--", "sleep", "1.5"]
    )
    terminals.append(term)
    screen = term.wait_for("session ended", timeout=60)
    groups = next(line for line in screen.splitlines() if line.strip().startswith("groups"))
    shares = [int(share) for share in re.findall(r"(\d+)%", groups)]
    assert len(shares) >= 2 and 98 <= sum(shares) <= 102, groups
    term.send("q")
    term.wait_for("SECTORMON-EXIT=0", timeout=20)
