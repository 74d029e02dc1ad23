"""Pilot tests of the Hot spots view, fed the frames of a real sampling session on the simulated
A64FX: the view appears only when the session samples, shows the window chosen with ``w``, and
``o`` switches between functions and data objects."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent

from sectormon.data.frames import Frame
from sectormon.io.header_codec import header_to_json
from sectormon.profiles.resolve import load_profile
from sectormon.session.options import SessionRequest
from sectormon.session.setup import open_session
from sectormon.sources.base import SampleRequest
from sectormon.sources.sim.source import SimOptions, build_sim_source
from sectormon.ui.app import make_app
from sectormon.ui.widgets.hotspot_view import HotspotView
from tests.ui.fake_controller import FakeSession
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.asyncio

SIZE = (160, 40)


@pytest.fixture(scope="module")
def sampled() -> tuple[dict[str, object], list[Frame]]:
    source = build_sim_source(SimOptions(sector_cache=False, sizes={"passes": "600"}), loop=False)
    request = SessionRequest(interval=100e-6, sample=SampleRequest("L1D_CACHE_REFILL", 31))
    session = open_session(source, load_profile("a64fx"), request)
    frames: list[Frame] = []
    session.subscribe(frames.append)
    session.run()
    return header_to_json(session.header), frames


async def test_view_6_shows_the_hottest_functions_then_the_data_objects(
    sampled: tuple[dict[str, object], list[Frame]],
) -> None:
    header, frames = sampled
    fake = FakeSession(header, frames[:2])
    app = make_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        fake.emit(2)
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        assert app.dashboard.query_one(TabbedContent).active == "tab-hotspots"
        text = screen_text(app)
        assert "Hot spots of L1D_CACHE_REFILL (sim:0x0003), sampled one in 31 events" in text
        assert "window: last interval" in text
        assert "Functions (2)" in text and "s += reused[order[i]]" in text and "s += stream[j]" in text
        assert "L1 hit" in text and "memory" in text  # the samples carry latencies
        await pilot.press("o")
        await pilot.pause()
        assert app.dashboard.query_one(HotspotView).mode == "objects"
        text = screen_text(app)
        assert "Data objects (2)" in text and "reused" in text and "stream" in text
        second = frames[1].hotspots
        assert second is not None
        row = second.interval.objects[0]
        assert f"{row.samples:>9,}" in text  # the frame's own figure, not a recomputed one
        await pilot.press("w")  # the rolling window: hot spots show the whole run instead
        await pilot.pause()
        assert "whole run (hot spots keep no rolling window)" in screen_text(app)
        await pilot.press("o")
        await pilot.pause()
        assert app.dashboard.query_one(HotspotView).mode == "functions"


async def test_a_session_that_does_not_sample_has_no_view_6(generic_session: FakeSession) -> None:
    app = make_app(generic_session)
    async with app.run_test(size=SIZE) as pilot:
        generic_session.emit(1)
        await pilot.pause()
        tabs = app.dashboard.query_one(TabbedContent)
        assert tabs.get_tab("tab-hotspots").has_class("-hidden")
        await pilot.press("6")
        await pilot.press("o")
        await pilot.pause()
        assert tabs.active == "tab-cores"
        assert "6 Hot spots" not in screen_text(app)
