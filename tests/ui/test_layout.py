"""The declarative panel table and the tolerant header readers."""

from __future__ import annotations

from typing import Any

import pytest

from sectormon.io.header_codec import header_from_json
from sectormon.ui.context import RenderContext
from sectormon.ui.header_info import (
    cmg_of_cores,
    describe_sector_config,
    describe_target,
    parse_core_filter,
    parse_cpu_list,
    profile_view,
    sector_ways,
)
from sectormon.ui.history import History
from sectormon.ui.layout import LAYOUTS, resolve_panels
from tests.ui.frames_fixture import A64FX_CMGS, a64fx_frame, a64fx_header, generic_header


def test_a64fx_panels_follow_the_issue() -> None:
    panels = resolve_panels(profile_view(header_from_json(a64fx_header())))
    cmg = [c.metric for c in panels.cmg]
    assert cmg[:2] == ["L2D_miss_rate_corrected", "L2D_miss_rate"]  # corrected beside raw
    assert {"L2_swap_dm_per_cycle", "avg_L2_miss_penalty", "power_L2_W", "power_memory_W"} <= set(cmg)
    core = [c.metric for c in panels.core]
    assert core[0] == "IPC" and "SCE_usage_ratio" in core and "power_core_W" in core
    assert [c.metric for c in panels.stall] == ["mem_stall_rate", "l2_stall_rate", "other_ld_stall_rate"]
    assert [c.metric for c in panels.sector] == ["SCE_usage_ratio", "non_sec0_ratio"]
    assert not panels.fallback


def test_generic_profile_drops_the_a64fx_panels() -> None:
    panels = resolve_panels(profile_view(header_from_json(generic_header())))
    assert [c.metric for c in panels.core] == list(LAYOUTS["generic"]["core"])
    assert panels.sector == panels.stall == panels.energy == ()


def test_panels_keep_only_metrics_the_profile_defines() -> None:
    header = a64fx_header()
    metrics = dict(header["profile"]["metrics"])
    for name in ("power_L2_W", "power_memory_W", "SCE_usage_ratio"):
        metrics.pop(name)
    header["profile"] = {**header["profile"], "metrics": metrics}
    panels = resolve_panels(profile_view(header_from_json(header)))
    names = {c.metric for group in (panels.cmg, panels.core, panels.sector) for c in group}
    assert not names & {"power_L2_W", "power_memory_W", "SCE_usage_ratio"}
    assert [c.metric for c in panels.sector] == ["non_sec0_ratio"]


def test_unknown_profile_falls_back_to_all_its_metrics() -> None:
    header: dict[str, Any] = {
        "profile": {
            "name": "neoverse-v2",
            "metrics": [
                {"name": "IPC", "unit": "inst/cycle"},
                {"name": "l3_miss", "unit": "ratio", "scope": "cmg"},
                {"name": "fe_stall", "unit": "ratio", "scope": "core"},
            ],
        }
    }
    panels = resolve_panels(profile_view(header_from_json(header)))
    assert panels.fallback
    assert [c.metric for c in panels.core] == ["IPC", "fe_stall"]
    assert [c.metric for c in panels.cmg] == ["IPC", "l3_miss"]
    assert [c.metric for c in panels.history] == ["IPC", "l3_miss", "fe_stall"]
    assert panels.sector == panels.energy == ()


@pytest.mark.parametrize(
    "topology",
    [
        {"cmgs": {"0": [12, 13], "1": "24-25"}},
        {"cmgs": [{"id": 0, "cpus": [12, 13]}, {"id": 1, "cpus": [24, 25]}]},
        {
            "cpus": [
                {"cpu": 12, "cmg": 0},
                {"cpu": 13, "cmg": 0},
                {"cpu": 24, "cmg": 1},
                {"cpu": 25, "cmg": 1},
            ]
        },
        {"cpus": {"12": {"cmg": 0}, "13": {"cmg": 0}, "24": {"cmg": 1}, "25": {"cmg": 1}}},
    ],
)
def test_cmg_of_cores_reads_any_topology_shape(topology: dict[str, Any]) -> None:
    assert cmg_of_cores(topology) == {"12": "0", "13": "0", "24": "1", "25": "1"}


def test_cmg_of_cores_tolerates_garbage() -> None:
    assert cmg_of_cores({"cmgs": 5, "cpus": "x"}) == {}


def test_core_filter_syntax() -> None:
    cmg_map = cmg_of_cores({"cmgs": A64FX_CMGS})
    assert parse_core_filter("", cmg_map) is None
    assert parse_core_filter("12-14, 40", cmg_map) == {"12", "13", "14", "40"}
    assert parse_core_filter("cmg1,unbound", cmg_map) == {str(c) for c in range(24, 36)} | {"unbound"}
    for bad, why in (
        ("cmgx", "cmgN"),
        ("cmg9", "no such CMG"),
        ("12-a", "not a CPU"),
        ("20-10", "backwards"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_core_filter(bad, cmg_map)
    with pytest.raises(ValueError, match="no CMG topology"):
        parse_core_filter("cmg0", {})
    assert parse_cpu_list("0,2-3") == (0, 2, 3)  # the topology module's parser, shared with --cpus


def test_sector_ways_from_flib_and_simulator_configs() -> None:
    flib = {"FLIB_SCCR_CNTL": "TRUE", "FLIB_L2_SECTOR_NWAYS_INIT": "10,4"}
    assert sector_ways(flib, ["0", "1"]) == {"0": "sec0/sec1 = 10/4 ways", "1": "sec0/sec1 = 10/4 ways"}
    off = {"FLIB_SCCR_CNTL": "FALSE", "FLIB_L2_SECTOR_NWAYS_INIT": "10,4"}
    assert "off" in sector_ways(off, ["0"])["0"]
    sim = {"l2_sector_ways": [12, 2], "cmgs": {"1": {"l2_sector_ways": [7, 7]}}}
    assert sector_ways(sim, ["0", "1"]) == {"0": "sec0/sec1 = 12/2 ways", "1": "sec0/sec1 = 7/7 ways"}
    assert sector_ways({}, ["0"]) == {}
    sim_sets = {"enabled": True, "l2_set0_max_ways": [12, 2], "l2_set1_max_ways": [7, 7]}
    assert sector_ways(sim_sets, ["3"]) == {"3": "SET0 sec0/sec1 = 12/2, SET1 sec2/sec3 = 7/7 ways"}
    assert "off" in sector_ways({**sim_sets, "enabled": False}, ["3"])["3"]
    assert describe_sector_config({}) == "unknown"
    assert describe_sector_config(flib) == "SCCR=TRUE L2 ways=10,4"
    assert describe_sector_config(
        {"preset": "on", "l1_max_ways": [3, 1, 0, 0], "l2_set_of_threads": [0]}
    ) == ("preset=on L1 ways=3,1,0,0")


def test_describe_target() -> None:
    text = describe_target(
        {
            "pid": 4242,
            "cmdline": ["./a.out", "-n"],
            "threads": 48,
            "cpus": [12, 13, 14, 20],
            "mode": "per-thread",
        }
    )
    assert text == "pid 4242 ./a.out -n (48 threads, cpus 12-14,20, per-thread)"
    assert describe_target({}) == "—"
    # The header is one line: a command line with newlines (python -c '...') stays on it.
    assert describe_target({"cmdline": ["python3", "-c", "import x\nfor i in y:\n\tpass"]}) == (
        "python3 -c import x for i in y: pass"
    )
    # a launched command: the header counted 0 threads before exec, the frames know better
    assert "3 threads" in describe_target({"pid": 7, "threads": 0, "mode": "command"}, live_threads=3)


def test_context_picks_the_window() -> None:
    ctx = RenderContext.from_header(header_from_json(a64fx_header()))
    frame = a64fx_frame(3)
    assert ctx.scopes(frame).total is frame.total
    assert ctx.with_window("recent").scopes(frame).total is frame.recent.total
    assert ctx.with_window("run").scopes(frame).cores is frame.run.cores


def test_history_is_bounded_and_skips_na() -> None:
    history = History(["IPC", "not_in_frames"], length=5)
    for step in range(12):
        history.add(a64fx_frame(step))
    assert len(history) == 5
    assert len(history.values("IPC")) == 5
    assert history.values("not_in_frames") == []  # n/a points are left out of the sparkline
    assert history.latest("not_in_frames") is None
