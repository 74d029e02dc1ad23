"""A merged job in the TUI: the Nodes level (each node's total, then its CMGs) and its timeline."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sectormon.job.jobfile import open_job
from sectormon.job.replay import job_frames
from sectormon.job.session import JobReplaySession
from sectormon.ui.app import make_app
from sectormon.ui.widgets.cmg_panel import CmgPanel
from tests.e2e.helpers import run_sectormon
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tuijob")
    nodes = []
    for host, sector in (("alpha", "on"), ("beta", "off")):
        path = tmp / f"{host}.jsonl.gz"
        done = run_sectormon(
            "sim", "--json", "--count", "3", "--sector-cache", sector, "--record", str(path),
            env={**os.environ, "SECTORMON_HOST": host},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        nodes.append(str(path))
    out = tmp / "job.jsonl.gz"
    done = run_sectormon("merge", *nodes, "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.asyncio
async def test_the_cmg_panel_shows_each_node_then_its_cmgs(job: Path) -> None:
    session = JobReplaySession(job, speed=64.0)
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.latest is not None:
                break
        assert app.latest is not None
        app.redraw()
        await pilot.pause()
        keys = app.dashboard.query_one(CmgPanel).table.row_keys
        assert keys == [
            "node:alpha", "node:alpha/cmg:0", "node:alpha/cmg:1",
            "node:beta", "node:beta/cmg:0", "node:beta/cmg:1",
            "total",
        ]  # fmt: skip
        text = screen_text(app)
        assert "alpha" in text and "beta" in text and "alpha:12" in text
        await pilot.press("q")
    assert session.wait(5.0)


def test_the_session_plays_the_job_frames_and_seeks_back(job: Path) -> None:
    with open_job(job) as alignment:
        expected = [f.to_json() for f in job_frames(alignment)]
    session = JobReplaySession(job, speed=1e6)
    shown: list[dict[str, object]] = []
    session.subscribe(lambda frame: shown.append(frame.to_json()))
    session.start()
    try:
        assert session.wait(30.0)
        assert shown == expected
        session.seek_to(0.0)
        deadline = time.monotonic() + 30.0
        while len(shown) <= len(expected) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert shown[len(expected)] == expected[0]  # the kept first frame again
        with pytest.raises(Exception, match="a job replay has no baseline"):
            session.mark_baseline()
    finally:
        session.stop()
