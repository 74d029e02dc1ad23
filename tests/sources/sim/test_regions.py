"""The simulated kernels' region (sectormon/sources/sim/regions.py): each simulated thread marks its
measured phase, the warm-up outside; the region's counts are the model's counters over that phase,
exactly; CMG-wide events are the CMG's and count once per CMG; both cores give the same regions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.commands.options.sim import sim_options
from sectormon.data.regions import RegionSnapshot, ThreadRegion
from sectormon.metrics.formulas import MetricSet
from sectormon.metrics.regions import RegionScopes, cmg_of_topology
from sectormon.profiles.resolve import load_profile
from sectormon.sim import events as sim_events
from sectormon.sim import native
from sectormon.sources.sim.source import SimSource, build_sim_source
from tests.sim.cores import NOT_BUILT

PROFILE = load_profile("a64fx")
GROUP_EVENTS = {e for g in PROFILE.groups for e in g.events}
CMG_EVENTS = {e for e in GROUP_EVENTS if PROFILE.events[e].scope == "cmg"}
# A CMG's energy has a static part that grows with its clock: after its last thread has left the
# region, an idle CMG still spends while the other CMGs run, and the whole run counts that too.
CLOCKED = {"EA_L2", "EA_MEMORY"}
# Small workloads that outlast a 10 us warm-up (3 threads: one CMG each, so the frame stream's
# interleaving cannot change a count and `--summary` of the same options is the reference).
KERNELS = {
    "scenario-a": "passes=60",
    "scenario-b": "n=64,tile_j=64",
    "random": "table=4M,accesses=30000",
}


def _sim(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert cli.main(["sim", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _final(lines: list[dict[str, Any]]) -> dict[str, Any]:
    frames = [x for x in lines if x["schema"].startswith("sectormon/frame/")]
    assert frames[-1]["final"] is True
    return frames[-1]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_a_kernels_region_is_its_run_less_the_warmup(kernel: str, capsys: pytest.CaptureFixture[str]) -> None:
    options = ("--kernel", kernel, "--size", KERNELS[kernel], "--threads", "3", "--warmup", "10e-6")
    region = _final(_sim(capsys, "--json", *options))["run"]["regions"][kernel]
    (summary,) = _sim(capsys, "--summary", *options)
    whole = _sim(capsys, "--summary", *options[:-1], "0")[0]["counts"]
    assert (region["name"], region["number"], region["calls"], region["thread_count"]) == (kernel, 0, 3, 3)
    assert region["open"] is False
    counts = region["total"]["counts"]
    assert set(counts) == GROUP_EVENTS
    assert set(region["total"]["coverage"].values()) == {1.0}
    for event, value in counts.items():
        if event in CLOCKED:
            assert 0 < value <= summary["counts"][event], event
        else:
            assert value == summary["counts"][event], event
    assert 0 < counts["L1D_CACHE"] < whole["L1D_CACHE"]  # the warm-up's accesses are outside
    assert region["seconds"] == pytest.approx(summary["seconds"], rel=0.01)
    assert set(region["threads"]) == set(summary["threads"]) == {"0", "1", "2"}
    for tid, thread in summary["threads"].items():
        row = region["threads"][tid]["counts"]
        cmg = summary["cmgs"][str(thread["cmg"])]["counts"]
        assert {e: row[e] for e in thread["counts"] if e in row} == {
            e: v for e, v in thread["counts"].items() if e in row
        }
        assert not CMG_EVENTS & set(row)  # a CMG-wide event is the CMG's, never a thread's (as in frames)
    assert set(region["cmgs"]) == {"0", "1", "2"}
    for c, cmg in summary["cmgs"].items():
        assert all(region["cmgs"][c]["counts"][e] == cmg["counts"][e] for e in CMG_EVENTS - CLOCKED)


def test_a_recording_replays_the_regions_as_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recording = tmp_path / "sim.jsonl.gz"
    argv = ("--size", "passes=60", "--threads", "2", "--warmup", "10e-6")
    live = _final(_sim(capsys, "--json", *argv, "--record", str(recording)))
    assert cli.main(["replay", "--json", str(recording)]) == 0
    replayed = _final([json.loads(x) for x in capsys.readouterr().out.splitlines()])
    assert replayed["run"]["regions"] == live["run"]["regions"]
    assert list(live["run"]["regions"]) == ["scenario-a"]


def test_compare_judges_the_sector_cache_on_the_kernels_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The PMU document's procedure on the model: baseline and sector run, compared on the region."""
    runs = {}
    for sectors in ("off", "on"):
        runs[sectors] = tmp_path / f"{sectors}.jsonl.gz"
        _sim(capsys, "--json", "--sector-cache", sectors, "--threads", "1", "--record", str(runs[sectors]))
    argv = ["compare", str(runs["off"]), str(runs["on"]), "--region", "scenario-a", "--json"]
    assert cli.main(argv) == 0
    refills = json.loads(capsys.readouterr().out)["scopes"]["total"]["metrics"]["L1D_demand_refill_ratio"]
    assert refills["base"] > 0.1 and refills["other"] < 0.01  # the reused array stays in its ways
    assert (refills["coverage_base"], refills["coverage_other"]) == (1.0, 1.0)


def _source(*argv: str, loop: bool = False) -> SimSource:
    return build_sim_source(sim_options(cli.build_parser("sim").parse_args(list(argv))), loop=loop)


def _open_groups(src: SimSource) -> None:
    """The profile's groups on every unit, as the sampler opens them."""
    for group in PROFILE.groups:
        for unit in src.poll_units().alive:
            src.open_group(unit, [PROFILE.events[e] for e in PROFILE.pe_events(group)])
        for unit in src.cmg_units():
            if PROFILE.cmg_events(group):
                src.open_group(unit, [PROFILE.events[e] for e in PROFILE.cmg_events(group)])


def _run(src: SimSource, step: float = 20e-6) -> RegionSnapshot:
    """Run the source to its end, reading the regions after every step as the sampler does; the
    last table read."""
    last = None
    while not src.finished():
        src.wait_until(src.now() + step)
        last = src.read_regions() or last
    assert last is not None
    return last


def _pe(src: SimSource) -> dict[int, dict[str, int]]:
    energy = src.config.energy
    return {
        t.tid: {
            e: sim_events.read_pe(PROFILE.events[e].code or 0, t, energy) for e in GROUP_EVENTS - CMG_EVENTS
        }
        for t in src.machine.threads
    }


def _cmg(src: SimSource) -> dict[int, dict[str, int]]:
    energy = src.config.energy
    return {
        c.ident: {e: sim_events.read_cmg(PROFILE.events[e].code or 0, c, energy) for e in CMG_EVENTS}
        for c in src.machine.cmgs.values()
    }


def test_cmg_wide_events_are_the_cmgs_during_the_region_and_count_once_per_cmg() -> None:
    src = _source("--threads", "8", "--size", "passes=60", "--warmup", "10e-6")  # 2 threads a CMG
    src.start()
    _open_groups(src)
    warm_pe, warm_cmg = _pe(src), _cmg(src)
    table = _run(src)
    end_pe, end_cmg = _pe(src), _cmg(src)
    assert src.read_regions() is None  # nothing moves after the end
    by_tid = {r.tid: r for r in table.threads}
    assert sorted(by_tid) == list(range(8))
    for t in src.machine.threads:
        region = by_tid[t.tid]
        counts = region.counts()
        assert (region.calls, region.open, region.last_cpu, region.thread_exited) == (1, False, t.cpu, True)
        assert {e: counts[e] for e in warm_pe[t.tid]} == {
            e: end_pe[t.tid][e] - warm_pe[t.tid][e] for e in warm_pe[t.tid]
        }
        cmg = t.cmg
        left = cmg.at(max(u.cyc for u in cmg.threads))  # the CMG when its last thread left
        for event in CMG_EVENTS:
            whole = end_cmg[cmg.ident][event] - warm_cmg[cmg.ident][event]
            if event in CLOCKED:  # up to the last thread's end: not the idle CMG's spending after it
                code = PROFILE.events[event].code or 0
                then = sim_events.read_cmg(code, left, src.config.energy) - warm_cmg[cmg.ident][event]
                assert 0 < counts[event] == then <= whole, event
            else:
                assert counts[event] == whole, event
    # Metrics count the CMG's value once: its row is the CMG's, the total adds CMGs, not threads.
    stats = RegionScopes(MetricSet(PROFILE), CMG_EVENTS, cmg_of_topology(src.topology_json())).build(
        table.threads
    )["scenario-a"]
    misses = {c: end_cmg[c]["L2_MISS_COUNT"] - warm_cmg[c]["L2_MISS_COUNT"] for c in end_cmg}
    assert min(misses.values()) > 0
    assert {c: s.counts["L2_MISS_COUNT"] for c, s in stats.cmgs.items()} == {
        str(c): m for c, m in misses.items()
    }
    assert stats.total.counts["L2_MISS_COUNT"] == sum(misses.values())
    assert (stats.calls, stats.thread_count, stats.open) == (8, 8, False)


def test_the_region_is_open_while_the_threads_run() -> None:
    src = _source("--threads", "2", "--size", "passes=200", "--warmup", "10e-6")
    src.start()
    _open_groups(src)
    assert src.read_regions() is not None  # entered at the warm-up's end: nothing counted yet
    src.wait_until(20e-6)
    early = src.read_regions()
    src.wait_until(40e-6)
    later = src.read_regions()
    assert early is not None and later is not None
    for before, after in zip(early.threads, later.threads, strict=True):
        assert after.open and after.open_counted and not after.thread_exited
        assert (after.calls, after.wall_ns) == (1, 0)  # wall time is the closed entries'
        assert 0 < before.counts()["L1D_CACHE"] < after.counts()["L1D_CACHE"]
        assert after.seconds == pytest.approx(40e-6, rel=0.05)


def test_a_looping_kernel_stays_in_its_region_and_a_trace_marks_none(tmp_path: Path) -> None:
    src = _source("--threads", "1", "--size", "passes=2", "--warmup", "0", loop=True)
    src.start()
    _open_groups(src)
    src.wait_until(30e-6)  # many passes
    table = src.read_regions()
    assert table is not None
    (region,) = table.threads
    assert (region.calls, region.open) == (1, True)
    trace = tmp_path / "t.din"
    trace.write_text("".join(f"0 {0x1000 + 256 * i:x}\n" for i in range(2000)))
    traced = _source("--trace", str(trace))
    traced.start()
    _open_groups(traced)
    traced.wait_until(1.0)
    assert traced.finished() and traced.read_regions() is None


def _table(core: str, monkeypatch: pytest.MonkeyPatch) -> tuple[ThreadRegion, ...]:
    monkeypatch.setenv(native.ENV, core)
    src = _source("--threads", "5", "--size", "passes=40", "--warmup", "5e-6")
    assert src.machine.core == core
    src.start()
    _open_groups(src)
    return _run(src, step=7e-6).threads


@pytest.mark.skipif(native.compiled is None, reason=NOT_BUILT)
def test_both_cores_give_the_same_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    python = _table("python", monkeypatch)
    assert python == _table("c", monkeypatch)
    assert python[0].counts()["L1D_CACHE"] > 0
