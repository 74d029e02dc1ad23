"""SimSource: the Source protocol over the model, the options, and the `sectormon sim` command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.commands.options.sim import sim_options, sim_source
from sectormon.data.readings import Unit
from sectormon.errors import DataError, UsageError
from sectormon.profiles.model import EventDef
from sectormon.profiles.resolve import load_profile
from sectormon.sim import events as sim_events
from sectormon.sim.config import FREQ_HZ
from sectormon.sources.base import CounterGroup, Source
from sectormon.sources.sim.source import (
    SECTOR_PRESETS,
    SIM_DEFAULT_INTERVAL,
    SIM_DEFAULT_TIMESLICE,
    SimEventError,
    SimSource,
    build_sim_source,
)

PROFILE = load_profile("a64fx")


def _args(*argv: str) -> argparse.Namespace:
    return cli.build_parser("sim").parse_args(list(argv))


def _source(*argv: str, loop: bool = False) -> SimSource:
    return build_sim_source(sim_options(_args(*argv)), loop=loop)


def _ev(name: str) -> EventDef:
    return PROFILE.events[name]


def test_every_event_of_the_sc_groups_is_modelled() -> None:
    names = {e for g in PROFILE.groups for e in g.events}
    assert names, "profile has groups"
    missing = sorted(n for n in names if not sim_events.is_modelled(PROFILE.events[n].code))
    assert missing == []
    cmg_codes = {code for code in sim_events.CMG_EVENTS}
    assert cmg_codes == {0x308, 0x309, 0x370, 0x396, 0x3E0, 0x3E8}
    for name, event in PROFILE.events.items():
        if event.code in cmg_codes:
            assert event.scope == "cmg", name


def test_units_spread_over_cmgs() -> None:
    src = _source("--threads", "5", "--size", "passes=2")
    update = src.poll_units()
    assert [(u.ident, u.core, u.cmg) for u in update.alive] == [
        (0, 0, 0),
        (1, 12, 1),
        (2, 24, 2),
        (3, 36, 3),
        (4, 1, 0),
    ]
    assert all(u.kind == "thread" for u in update.alive)
    assert [(u.kind, u.ident, u.core, u.cmg) for u in src.cmg_units()] == [
        ("cmg", c, 12 * c, c) for c in range(4)
    ]
    assert src.topology_json()["cmgs"]["3"] == list(range(36, 48))


def test_clock_and_wait_until() -> None:
    src = _source("--threads", "1", "--size", "passes=50", "--warmup", "0")
    src.start()
    assert src.now() == 0.0
    src.wait_until(10e-6)
    assert src.now() == pytest.approx(10e-6, abs=1 / FREQ_HZ)
    assert not src.finished()
    src.wait_until(1.0)
    assert src.finished()
    end = src.now()
    assert 10e-6 < end < 1.0
    src.wait_until(2.0)
    assert src.now() == end


def test_group_counts_only_while_enabled() -> None:
    src = _source("--threads", "1", "--size", "passes=100")
    unit = src.poll_units().alive[0]
    group = src.open_group(unit, [_ev("CPU_CYCLES"), _ev("L1D_CACHE"), _ev("INST_RETIRED")])
    assert group.events == ("CPU_CYCLES", "L1D_CACHE", "INST_RETIRED")
    src.wait_until(5e-6)
    assert group.read().values == (0, 0, 0)
    group.enable()
    src.wait_until(15e-6)
    first = group.read()
    cycles, accesses, inst = first.values
    assert cycles == pytest.approx(10e-6 * FREQ_HZ, rel=0.01)
    assert accesses > 0 and inst == 2 * accesses
    assert first.time_enabled == first.time_running == pytest.approx(10_000, rel=0.01)
    group.disable()
    src.wait_until(25e-6)
    assert group.read() == group.read()
    assert group.read().values == group.read().values
    after = group.read()
    assert after.values[0] == pytest.approx(cycles, abs=64)
    group.enable()
    src.wait_until(30e-6)
    assert group.read().values[0] > after.values[0]
    group.reset()
    assert group.read().values[0] < 100
    group.close()


def test_cmg_events_count_the_whole_cmg() -> None:
    src = _source("--threads", "5", "--size", "passes=20")  # threads 0 and 4 share CMG 0
    units = {u.ident: u for u in src.poll_units().alive}
    cmg0 = src.cmg_units()[0]
    miss = _ev("L2_MISS_COUNT")
    on_cmg = src.open_group(cmg0, [miss, _ev("EA_L2")])
    on_thread = src.open_group(units[4], [miss])
    pe_on_cmg = src.open_group(cmg0, [_ev("L1D_CACHE")])
    pe_t0 = src.open_group(units[0], [_ev("L1D_CACHE")])
    pe_t4 = src.open_group(units[4], [_ev("L1D_CACHE")])
    for g in (on_cmg, on_thread, pe_on_cmg, pe_t0, pe_t4):
        g.enable()
    src.wait_until(1.0)
    cmg = src.machine.cmgs[0]
    assert on_cmg.read().values[0] == cmg.l2_miss_count() > 0
    assert on_thread.read().values[0] == cmg.l2_miss_count()  # any PE opening it sees the CMG total
    assert pe_on_cmg.read().values == pe_t0.read().values  # a PE event on the CMG's CPU = that core
    assert pe_t4.read().values[0] > 0
    assert on_cmg.read().values[1] > 0


def test_probe_and_unsupported_events() -> None:
    src = _source("--threads", "1", "--size", "passes=2")
    task_clock = EventDef(name="TASK_CLOCK", spec="task-clock", code=None)
    other = EventDef(name="BR_MIS_PRED", spec="r10", code=0x10)
    result = src.probe([_ev("CPU_CYCLES"), _ev("EA_MEMORY"), task_clock, other])
    assert result["CPU_CYCLES"].state == "counts"
    assert result["EA_MEMORY"].state == "counts"
    for name in ("TASK_CLOCK", "BR_MIS_PRED"):
        assert result[name].state == "unsupported"
        assert result[name].reason == "not modelled by the simulator"
    unit = src.poll_units().alive[0]
    with pytest.raises(SimEventError, match="not modelled"):
        src.open_group(unit, [_ev("CPU_CYCLES"), other])
    with pytest.raises(SimEventError):
        src.open_group(Unit(kind="thread", ident=99), [_ev("CPU_CYCLES")])


def test_threads_end_once_and_source_finishes() -> None:
    src = _source("--threads", "2", "--size", "passes=3")
    src.wait_until(1.0)
    update = src.poll_units()
    assert update.alive == ()
    assert sorted(update.ended) == ["thread:0", "thread:1"]
    assert src.poll_units().ended == ()
    assert src.finished()


def test_loop_never_finishes() -> None:
    src = _source("--threads", "1", "--size", "passes=2", loop=True)
    src.wait_until(200e-6)
    assert not src.finished()
    assert src.machine.threads[0].passes >= 2
    with pytest.raises(UsageError, match="never completes"):
        src.run_to_completion()


def test_loop_defaults() -> None:
    assert sim_source(_args(), headless=False).loop is True  # TUI
    assert sim_source(_args("--json"), headless=True).loop is False
    assert sim_source(_args("--json", "--count", "3"), headless=True).loop is True
    assert sim_source(_args("--summary"), headless=True).loop is False
    assert sim_source(_args("--json", "--loop"), headless=True).loop is True
    assert sim_source(_args("--once"), headless=False).loop is False


def test_presets_and_describe() -> None:
    src = _source("--threads", "1", "--size", "passes=30")
    assert src.sector_presets() == SECTOR_PRESETS == ("off", "on")
    described = src.describe()
    assert described["source"] == "sim" and described["simulated"] is True
    assert described["sector_config"]["preset"] == "on"
    assert described["sector_config"]["l1_max_ways"] == [3, 1, 0, 0]
    assert described["kernel"]["name"] == "scenario-a"
    assert described["model"]["prefetch"]["enabled"] is True
    assert described["model"]["l2"]["usable_ways"] == 14
    json.dumps(described)
    src.apply_sector_preset("off")
    src.wait_until(20e-6)
    assert src.describe()["sector_config"]["enabled"] is False
    assert src.machine.threads[0].l1.enabled is False
    with pytest.raises(UsageError, match="unknown sector preset"):
        src.apply_sector_preset("sideways")


def test_sim_defaults_are_sane() -> None:
    assert 0 < SIM_DEFAULT_TIMESLICE < SIM_DEFAULT_INTERVAL
    assert 2 * len(PROFILE.groups) <= SIM_DEFAULT_INTERVAL / SIM_DEFAULT_TIMESLICE


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--l1-sectors", "5,0,0,0"], "at most 4 ways"),
        (["--l1-sectors", "1,2"], "expected 4"),
        (["--l2-sectors", "15,2"], "at most 14 ways"),
        (["--l2-ways", "17"], "--l2-ways 17"),
        (["--threads", "0"], "1 to 48"),
        (["--threads", "49"], "1 to 48"),
        (["--size", "bogus=1"], "no parameter 'bogus'"),
        (["--size", "reused"], "expected KEY=VALUE"),
        (["--size", "reused=lots"], "not a size"),
        (["--assign", "stream=7"], "sector id is 0, 1, 2 or 3"),
        (["--kernel", "scenario-b", "--size", "n=100"], "multiple of"),
        (["--l2-set", "2"], "expected 0 or 1"),
    ],
)
def test_bad_options(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        sim_source(_args(*argv), headless=True)


def test_trace_options(tmp_path: Path) -> None:
    trace = tmp_path / "a.din"
    trace.write_text("0 100\n1 200 1\n0 300\n")
    src = _source("--trace", str(trace), "--trace", str(trace))
    assert [u.core for u in src.poll_units().alive] == [0, 12]
    assert src.describe()["sector_config"]["enabled"] is False  # traces: restriction off unless asked
    src.wait_until(1.0)
    assert src.finished()
    with pytest.raises(UsageError, match="a trace is one thread"):
        _source("--trace", str(trace), "--threads", "3")
    bad = tmp_path / "bad.din"
    bad.write_text("0 100\n7 200\n")
    with pytest.raises(DataError, match=r"bad\.din:2: unknown din label"):
        _source("--trace", str(bad))


def test_summary_command(capsys: pytest.CaptureFixture[str]) -> None:
    # --warmup 0: the whole run is counted (20 passes take 16 us, less than the default warm-up)
    assert cli.main(["sim", "--summary", "--threads", "2", "--size", "passes=20", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    data = json.loads(out)
    assert data["source"] == "sim" and "model" in data
    counts = data["counts"]
    sc_events = {e for g in PROFILE.groups for e in g.events}
    assert sc_events <= set(counts)
    assert counts["L1D_CACHE"] == 2 * 20 * 192 * 2 * 4
    assert counts["L1_PIPE0_VAL"] + counts["L1_PIPE1_VAL"] == counts["L1D_CACHE"]
    assert counts["LD_COMP_WAIT"] == counts["LD_COMP_WAIT_L1_MISS"] + counts["LD_COMP_WAIT_L2_MISS"]
    m = data["metrics"]
    assert m["IPC"] == pytest.approx(counts["INST_RETIRED"] / counts["CPU_CYCLES"])
    assert m["SCE_usage_ratio"] == pytest.approx(1.0)
    assert m["non_sec0_ratio"] == pytest.approx(0.5)
    assert m["L2_miss_count_corrected"] <= counts["L2_MISS_COUNT"]
    assert set(data["cmgs"]) == {"0", "1"}
    assert data["unsupported"] == []


def test_summary_counts_from_the_end_of_the_warmup(capsys: pytest.CaptureFixture[str]) -> None:
    """The summary leaves the warm-up out, as the frame stream does: what a run without warm-up
    counts is the warm-up's part plus the summary's."""
    runs = {}
    for warmup in ("0", "10e-6"):
        assert (
            cli.main(["sim", "--summary", "--threads", "2", "--size", "passes=20", "--warmup", warmup]) == 0
        )
        runs[warmup] = json.loads(capsys.readouterr().out)
    whole, after = runs["0"], runs["10e-6"]
    assert after["warmup_s"] == 10e-6 and whole["warmup_s"] == 0
    assert after["seconds"] == pytest.approx(whole["seconds"] - 10e-6, abs=1e-9)
    assert 0 < after["cycles"] < whole["cycles"]
    warm = {name: whole["counts"][name] - n for name, n in after["counts"].items()}
    assert 0 < warm["L1D_CACHE"] < whole["counts"]["L1D_CACHE"]
    assert all(v >= 0 for v in warm.values())
    for tid, thread in after["threads"].items():
        assert all(0 <= n <= whole["threads"][tid]["counts"][name] for name, n in thread["counts"].items())


@pytest.mark.parametrize("mode", ["--summary", "--json"])
def test_a_workload_that_ends_within_the_warmup_is_a_clear_error(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["sim", mode, "--size", "passes=1", "--warmup", "1e-3"]) == 2
    err = capsys.readouterr().err
    assert "ended within the --warmup of 0.001 simulated seconds" in err and "--warmup 0" in err


def test_negative_warmup_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sim", "--json", "--warmup", "-1"]) == 2
    assert "--warmup -1.0: give a number of simulated seconds from 0 to 1" in capsys.readouterr().err


def test_summary_rejects_loop() -> None:
    assert cli.main(["sim", "--summary", "--loop"]) == 2


def test_sector_cache_on_beats_off_in_summary(capsys: pytest.CaptureFixture[str]) -> None:
    results = {}
    for mode in ("on", "off"):
        assert (
            cli.main(
                [
                    "sim",
                    "--summary",
                    "--threads",
                    "1",
                    "--size",
                    "passes=40",
                    "--sector-cache",
                    mode,
                    "--warmup",
                    "0",
                ]
            )
            == 0
        )
        results[mode] = json.loads(capsys.readouterr().out)
    on, off = results["on"]["counts"], results["off"]["counts"]
    assert on["L1D_CACHE_REFILL_DM"] < off["L1D_CACHE_REFILL_DM"]
    assert on["LD_COMP_WAIT"] < off["LD_COMP_WAIT"]
    assert results["on"]["metrics"]["IPC"] > results["off"]["metrics"]["IPC"]


def test_json_stream_through_the_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "sim",
            "--json",
            "--threads",
            "2",
            "--size",
            "passes=60",
            "--interval",
            "40e-6",
            "--timeslice",
            "4e-6",
            "--warmup",
            "0",
        ]
    )
    assert code == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["schema"].startswith("sectormon/header/")
    assert lines[0]["source"]["kind"] == "sim"
    frames = [x for x in lines if x["schema"].startswith("sectormon/frame/")]
    assert len(frames) >= 2
    last = frames[-1]
    assert last["total"]["counts"]["L1D_CACHE"] > 0
    assert set(last["cmgs"]) == {"0", "1"}


def test_sim_source_satisfies_the_source_protocol() -> None:
    """Checked statically by mypy (protocol assignment) and at runtime by duck typing."""
    src: Source = _source("--threads", "1", "--size", "passes=2")
    group: CounterGroup = src.open_group(src.poll_units().alive[0], [_ev("CPU_CYCLES")])
    assert src.kind == "sim"
    assert group.events == ("CPU_CYCLES",)


def test_warmup_runs_uncounted_before_time_zero() -> None:
    src = _source("--threads", "1", "--size", "passes=400", "--warmup", "20e-6")
    src.start()
    assert src.now() == 0.0  # the session starts after the warm-up
    assert src.machine.tick > 0  # ... which really ran the model
    unit = src.poll_units().alive[0]
    group = src.open_group(unit, [EventDef("L1D_CACHE", "r4", code=0x4)])
    group.enable()
    src.wait_until(10e-6)
    group.disable()
    values = group.read()
    assert values.values[0] > 0
    assert values.time_enabled == pytest.approx(10_000, abs=1)  # ns counted: only after time zero


def test_sector_config_for_a_preset_is_what_the_header_would_say() -> None:
    source = sim_source(_args(), headless=False)
    on, off = source.sector_config_for("on"), source.sector_config_for("off")
    assert on["preset"] == "on" and on["enabled"] is True
    assert off["preset"] == "off" and off["enabled"] is False
    assert {k: v for k, v in on.items() if k not in ("preset", "enabled")} == {
        k: v for k, v in off.items() if k not in ("preset", "enabled")
    }  # the same ways: off lifts the restriction
    assert source.describe()["sector_config"] == on  # the kernel default starts on


class _Clock:
    """time.monotonic and time.sleep of the sim source, on a clock that moves only by sleeping or
    by :meth:`advance` (the model's own run time)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_a_paced_source_holds_simulated_time_to_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("sectormon.sources.sim.source.time", clock)
    source = _source("--size", "passes=50", loop=True)
    source.pace = 2000.0  # 0.5 wall seconds per 250 simulated microseconds
    source.start()
    source.wait_until(0.0)  # the pace counts from here
    source.wait_until(250e-6)
    assert clock.slept == [pytest.approx(0.5)]
    clock.advance(0.2)  # the model took 0.2 s of the next interval itself
    source.wait_until(500e-6)
    assert clock.slept[1] == pytest.approx(0.3)
    assert source.now() == pytest.approx(500e-6, rel=1e-3)
    clock.advance(5.0)  # a paused session: the pace starts over instead of racing to catch up
    source.wait_until(750e-6)
    source.wait_until(1000e-6)
    assert clock.slept[2:] == [pytest.approx(0.5)]


def test_the_tui_paces_the_simulator_and_a_headless_run_does_not() -> None:
    interval = SIM_DEFAULT_INTERVAL
    assert sim_source(_args(), headless=False).pace == pytest.approx(0.5 / interval)
    assert sim_source(_args(), headless=True).pace == 0
    assert sim_source(_args("--pace", "0"), headless=False).pace == 0
    assert sim_source(_args("--pace", "2", "--interval", "0.001"), headless=True).pace == pytest.approx(2000)
    with pytest.raises(UsageError, match=r"--pace -1.0: give a number of wall seconds from 0 to 60"):
        _args("--pace", "-1")
