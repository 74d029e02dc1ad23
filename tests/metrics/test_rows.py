"""The engine's fast path (rows whose names tuple is the group's own, by identity) changes no frame.

This property test feeds the same random slices with layouts shared across slices (as the sampler
and the recording reader share them) and with a new names tuple per row, including everything
that takes rows off the fast path: threads rebinding cores, units ending and coming back, groups
whose reading layouts change (reordered, missing or extra events), te = 0, tr < te, tr = 0, empty
readings, CMG units, events listed as unavailable, unknown unit keys, and baseline marks.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sectormon.metrics.engine as engine_module
from sectormon.data.readings import Mark, Row, Slice
from sectormon.metrics.engine import MetricsEngine
from tests.metrics.metrics_support import NS, make_profile
from tests.rows import row, share_layouts

GROUPS = {
    "G1": ["CYC", "INS", "L1", "L1M", "L2", "L2M"],
    "G2": ["CYC", "ST", "L2M", "CW", "CM"],
    "G3": ["CYC", "INS", "E1", "E2", "CW"],
}
CMG_EVENTS = ("CW", "CM")
PROFILE = make_profile(
    GROUPS,
    {
        "ipc": ("INS / CYC", "higher"),
        "l1_miss": ("L1M / L1", "lower"),
        "l2_rate": ("L2M / SECONDS", "lower"),
        "stall": ("ST / CYC", "lower", "core"),
        "cmg_wait": ("CW / CM", "lower", "cmg"),
        "mixed": ("(E1 + E2) / max(CYC, INS) + ipc", "none"),
        "total_only": ("CM / SECONDS", "none", "total"),
        "uses_total": ("total_only * 2", "none"),
    },
    cmg_events=CMG_EVENTS,
    extra_events=["NEVER"],
    constants={"K": 3.0},
)
UNITS = ["thread:1", "thread:2", "thread:3", "cpu:4", "cpu:5", "cmg:0", "cmg:1", "bogus"]


@st.composite
def readings(draw: st.DrawFn, group: str) -> Row:
    unit = draw(st.sampled_from(UNITS))
    events = list(GROUPS[group])
    if unit.startswith("cmg"):
        events = [e for e in events if e in CMG_EVENTS] or events[:1]
    layout = draw(st.sampled_from(["same", "same", "same", "reversed", "fewer", "more", "empty"]))
    if layout == "reversed":
        events.reverse()
    elif layout == "fewer":
        events = events[: draw(st.integers(0, len(events)))]
    elif layout == "more":
        events = [*events, "NEVER"]
    elif layout == "empty":
        events = []
    counts = {e: draw(st.integers(0, 10**9)) for e in events}
    te = draw(st.sampled_from([0, NS, NS, NS // 2, 3 * NS]))
    tr = draw(st.sampled_from([te, te, te, te // 3, 0, te + 7, max(0, te - 1)]))
    core = draw(st.sampled_from([None, 0, 0, 1, 2]))
    cmg = draw(st.sampled_from([None, 0, 0, 1]))
    return row(unit, core, cmg, group, te, tr, counts)


@st.composite
def feeds(draw: st.DrawFn) -> list[Slice | Mark | str]:
    """Slices, marks and "frame" (take a frame here), in stream order."""
    out: list[Slice | Mark | str] = []
    t = 0.0
    for index in range(draw(st.integers(1, 30))):
        group = draw(st.sampled_from(list(GROUPS)))
        duration = draw(st.sampled_from([0.25, 0.25, 0.1, 0.0, 1.0 / 3.0]))
        t += duration
        rs = draw(st.lists(readings(group), max_size=6))
        ended = tuple(draw(st.lists(st.sampled_from(UNITS), max_size=2, unique=True)))
        out.append(Slice(t, index, duration, group, tuple(rs), overhead_s=0.001 * index, ended=ended))
        choice = draw(st.integers(0, 9))
        if choice < 3:
            out.append("frame")
        elif choice == 3:
            out.append(Mark(t, draw(st.sampled_from(["baseline", "baseline-clear", "bookmark"]))))
    return out


def frames_of(feed: list[Slice | Mark | str], *, shared: bool, unavailable: dict[str, str]) -> list[str]:
    engine = MetricsEngine(PROFILE, recent_seconds=0.6, unavailable=unavailable)
    layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
    out: list[dict[str, Any]] = []
    t = 0.0
    for item in feed:
        if item == "frame":
            out.append(engine.frame(t).to_json())
        elif isinstance(item, Mark):
            engine.add_mark(item)
        elif isinstance(item, Slice):
            t = item.t
            engine.add_slice(share_layouts(item, layouts) if shared else item)
    out.append(engine.final_frame(t).to_json())
    return [json.dumps(frame, sort_keys=True) for frame in out]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(feeds(), st.sampled_from([{}, {"L2": "not here"}, {"CW": "no uncore"}]))
def test_shared_and_unshared_layouts_give_identical_frames(
    feed: list[Slice | Mark | str], unavailable: dict[str, str]
) -> None:
    assert frames_of(feed, shared=True, unavailable=unavailable) == frames_of(
        feed, shared=False, unavailable=unavailable
    )


@pytest.mark.parametrize("fold_every", [1, 7, 10**9])
def test_folding_pending_readings_early_or_late_changes_nothing(
    fold_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readings wait in a group until a frame (or every _FOLD_EVERY slices) adds them up; when
    that happens must not show: sum(column, start) chains exactly."""
    feed = []
    for i in range(300):
        group = ("G1", "G2", "G3")[i % 3]
        counts = {e: (i * 7919 + k * 104729) % 10**9 + 1 for k, e in enumerate(GROUPS[group])}
        tr = NS if i % 4 else NS // 3
        feed.append(Slice(0.02 * (i + 1), i, 0.02, group, (row("thread:1", 0, 0, group, NS, tr, counts),)))
    monkeypatch.setattr(engine_module, "_FOLD_EVERY", 256)
    reference = MetricsEngine(PROFILE)
    for s in feed:
        reference.add_slice(s)
    want = json.dumps(reference.frame(feed[-1].t).to_json())
    monkeypatch.setattr(engine_module, "_FOLD_EVERY", fold_every)
    for shared in (False, True):
        layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
        engine = MetricsEngine(PROFILE)
        for s in feed:
            engine.add_slice(share_layouts(s, layouts) if shared else s)
        assert json.dumps(engine.frame(feed[-1].t).to_json()) == want


def test_engine_copied_mid_interval_carries_on_identically() -> None:
    """Replay checkpoints deep-copy the engine between frames, with readings still pending."""
    feed = [
        Slice(
            0.1 * (i + 1),
            i,
            0.1,
            group,
            (row("thread:1", 0, 0, group, NS, NS - i, {e: 1000 + i for e in GROUPS[group]}),),
        )
        for i, group in enumerate(["G1", "G2", "G3", "G1", "G2", "G3"])
    ]
    engine = MetricsEngine(PROFILE)
    engine.add_slice(feed[0])
    engine.add_slice(feed[1])
    copied = copy.deepcopy(engine)
    frames = []
    for e in (engine, copied):
        for s in feed[2:]:
            e.add_slice(s)
        frames.append(json.dumps(e.frame(feed[-1].t).to_json()))
    assert frames[0] == frames[1]
