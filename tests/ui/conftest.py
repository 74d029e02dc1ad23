"""TUI test fixtures: deterministic controllers, and no user theme directory leaking in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.fake_controller import FakeReplay, FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header, generic_frames, generic_header

PRESETS = ("sector-off", "scenario-a")


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point $XDG_CONFIG_HOME at an empty directory: the developer's own themes stay out."""
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    yield config


@pytest.fixture
def a64fx_session() -> FakeSession:
    """48 cores / 4 CMGs; sector cache on from the 4th frame; simulator presets available."""
    return FakeSession(a64fx_header(), a64fx_frames(8, sector_from=3), presets=PRESETS)


@pytest.fixture
def generic_session() -> FakeSession:
    return FakeSession(generic_header(), generic_frames(4))


@pytest.fixture
def replay_session() -> FakeReplay:
    return FakeReplay(a64fx_header("replay"), a64fx_frames(8, sector_from=3))
