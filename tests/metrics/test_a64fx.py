"""The real a64fx profile through the engine: every formula of the PMU document's section 3.

The feed rotates all six groups once (1 s each, SC2 first so the CMG unit is present for the
whole 6 s) on one thread pinned to core 12 of CMG 0 plus the CMG 0 unit. Every event counts at a
constant rate per second, so each scaled total is exactly 6 x its rate whichever groups hold it,
and each expected metric below is worked out by hand from the rates.
"""

from __future__ import annotations

import pytest

from sectormon.data.frames import Frame
from sectormon.data.readings import Slice
from sectormon.metrics.engine import MetricsEngine
from sectormon.profiles import resolve
from sectormon.profiles.model import Profile
from tests.rows import row

NS = 1_000_000_000
SECONDS = 6.0

RATES = {  # counts per second
    "CPU_CYCLES": 2_000_000_000,
    "INST_RETIRED": 3_000_000_000,
    "L1D_CACHE": 1_000_000_000,
    "L1D_CACHE_REFILL": 50_000_000,
    "L1D_CACHE_REFILL_DM": 40_000_000,
    "L1D_CACHE_REFILL_PRF": 10_000_000,
    "L1D_CACHE_REFILL_HWPRF": 4_000_000,
    "L1D_CACHE_WB": 10_000_000,
    "L1_MISS_WAIT": 1_000_000_000,
    "L2D_CACHE": 80_000_000,
    "L2D_CACHE_REFILL": 20_000_000,
    "L2D_CACHE_REFILL_DM": 15_000_000,
    "L2D_CACHE_REFILL_PRF": 5_000_000,
    "L2D_CACHE_REFILL_HWPRF": 2_000_000,
    "L2D_CACHE_WB": 4_000_000,
    "L2D_SWAP_DM": 1_000_000,
    "L2D_CACHE_MIBMCH_PRF": 2_000_000,
    "L2_MISS_WAIT": 4_800_000_000,  # CMG
    "L2_MISS_COUNT": 40_000_000,  # CMG
    "L2D_CACHE_SWAP_LOCAL": 1_000_000,  # CMG
    "L2_PIPE_COMP_PF_L2MIB_MCH": 3_000_000,  # CMG
    "LD_COMP_WAIT": 600_000_000,
    "LD_COMP_WAIT_L2_MISS": 200_000_000,
    "LD_COMP_WAIT_L1_MISS": 300_000_000,
    "L1_PIPE0_VAL": 500_000_000,
    "L1_PIPE1_VAL": 300_000_000,
    "L1_PIPE0_VAL_IU_TAG_ADRS_SCE": 300_000_000,
    "L1_PIPE1_VAL_IU_TAG_ADRS_SCE": 100_000_000,
    "L1_PIPE0_VAL_IU_NOT_SEC0": 100_000_000,
    "L1_PIPE1_VAL_IU_NOT_SEC0": 100_000_000,
    "L1_PIPE0_COMP": 600_000_000,
    "L1_PIPE1_COMP": 400_000_000,
    "EA_CORE": 100_000_000,  # x 8 nJ = 0.8 W
    "EA_L2": 10_000_000,  # CMG, x 32 nJ = 0.32 W
    "EA_MEMORY": 5_000_000,  # CMG, x 256 nJ = 1.28 W
    "STALL_FRONTEND": 200_000_000,
    "STALL_BACKEND": 800_000_000,
}


@pytest.fixture(scope="module")
def a64fx() -> Profile:
    return resolve.load_profile("a64fx")


def run_rotation(profile: Profile, scale: dict[str, float] | None = None) -> list[Slice]:
    scale = scale or {}
    order = ["SC2", *(g.name for g in profile.groups if g.name != "SC2")]
    slices = []
    for i, name in enumerate(order):
        group = profile.group(name)
        rate = {e: int(RATES[e] * scale.get(e, 1.0)) for e in group.events}
        pe = {e: rate[e] for e in profile.pe_events(group)}
        cmg = {e: rate[e] for e in profile.cmg_events(group)}
        readings = [row("thread:100", 12, 0, name, NS, NS, pe)]
        if cmg:
            readings.append(row("cmg:0", 12, 0, name, NS, NS, cmg))
        slices.append(Slice(float(i + 1), i, 1.0, name, tuple(readings)))
    return slices


@pytest.fixture(scope="module")
def frame(a64fx: Profile) -> Frame:
    engine = MetricsEngine(a64fx)
    for s in run_rotation(a64fx):
        engine.add_slice(s)
    return engine.frame(SECONDS)


def test_every_event_is_counted_and_scaled(a64fx: Profile, frame: Frame) -> None:
    grouped = {e for g in a64fx.groups for e in g.events}
    assert set(RATES) == grouped, "update RATES when the profile's groups change"
    for event, rate in RATES.items():
        assert frame.total.counts[event] == pytest.approx(rate * SECONDS), event
    assert set(frame.total.counts) == grouped  # events in no group are never counted, never 0
    cmg_only = {e for e, d in a64fx.events.items() if d.scope == "cmg"}
    assert cmg_only == {
        "L2_MISS_WAIT",
        "L2_MISS_COUNT",
        "L2D_CACHE_SWAP_LOCAL",
        "L2_PIPE_COMP_PF_L2MIB_MCH",
        "EA_L2",
        "EA_MEMORY",
    }
    assert not cmg_only & set(frame.threads["100"].counts)
    assert frame.total.coverage["CPU_CYCLES"] == pytest.approx(1.0)  # in every group
    assert frame.total.coverage["L1D_CACHE"] == pytest.approx(1 / 6)
    assert frame.total.coverage["L2_MISS_COUNT"] == pytest.approx(2 / 6)  # SC2 and SC6


# metric -> hand-computed value at the CMG (and total) scope
EXPECTED = {
    # 3.1 miss rates
    "L1D_miss_rate": 50e6 / 1e9,  # 0.05
    "L2D_miss_rate": 20e6 / 80e6,  # 0.25
    # 3.2 demand share of refills
    "L1D_demand_refill_ratio": 40e6 / 50e6,  # 0.8
    "L2D_demand_refill_ratio": 15e6 / 20e6,  # 0.75
    # 3.3 stalls
    "mem_stall_rate": 200e6 / 2e9,  # 0.1
    "l2_stall_rate": 300e6 / 2e9,  # 0.15
    "total_ld_stall_rate": 600e6 / 2e9,  # 0.3
    "other_ld_stall_rate": (600e6 - 200e6 - 300e6) / 2e9,  # 0.05
    # 3.4 miss penalties
    "avg_L1_miss_penalty": 1e9 / 50e6,  # 20 cycles
    "avg_L2_miss_penalty": 4.8e9 / 40e6,  # 120 cycles (CMG-wide)
    # 3.5 sector usage
    "SCE_usage_ratio": (300e6 + 100e6) / (500e6 + 300e6),  # 0.5
    "non_sec0_ratio": (100e6 + 100e6) / (600e6 + 400e6),  # 0.2
    # 3.6 write-backs
    "L1D_WB_per_access": 10e6 / 1e9,  # 0.01
    "L2D_WB_per_access": 4e6 / 80e6,  # 0.05
    # 3.7 energy over 6 s: (8e8 + 3.2e8 + 1.28e9) nJ/s * 6 s = 1.44e10 nJ
    "energy_total": 1.44e10,
    "energy_per_inst": 1.44e10 / 1.8e10,  # 0.8 nJ per instruction
    "mem_energy_ratio": 1.28e9 / 2.4e9,  # 0.5333
    "power_core_W": 0.8,
    "power_L2_W": 0.32,
    "power_memory_W": 1.28,
    "power_total_W": 2.4,
    # 3.8 IPC
    "IPC": 3e9 / 2e9,  # 1.5
    # errata 1.0 corrections (counts over the 6 s)
    "L2_refill_corrected": 6 * (20e6 - 1e6 - 2e6),  # 1.02e8
    "L2_demand_refill_corrected": 6 * (15e6 - 1e6),  # 8.4e7
    "L2_prefetch_refill_corrected": 6 * (5e6 - 2e6),  # 1.8e7
    "L2_miss_count_corrected": 6 * (40e6 - 1e6 - 3e6),  # 2.16e8 (CMG-wide)
    "L2D_miss_rate_corrected": (20e6 - 1e6 - 2e6) / 80e6,  # 0.2125
    # section 6.6 per-cycle rates
    "L1_hwprf_refill_per_cycle": 4e6 / 2e9,
    "L1_prf_refill_per_cycle": 10e6 / 2e9,
    "L2_hwprf_refill_per_cycle": 2e6 / 2e9,
    "L2_prf_refill_per_cycle": 5e6 / 2e9,
    "L2_swap_dm_per_cycle": 1e6 / 2e9,
    "L2_mibmch_prf_per_cycle": 2e6 / 2e9,
    "avg_L1_miss_outstanding": 1e9 / 2e9,
    "frontend_stall_rate": 200e6 / 2e9,
    "backend_stall_rate": 800e6 / 2e9,
}

CMG_WIDE = {
    "avg_L2_miss_penalty",
    "energy_total",
    "energy_per_inst",
    "mem_energy_ratio",
    "power_L2_W",
    "power_memory_W",
    "power_total_W",
    "L2_miss_count_corrected",
}


def test_expected_table_covers_every_metric(a64fx: Profile) -> None:
    assert set(EXPECTED) == {m.name for m in a64fx.metrics}, "add the new metric to EXPECTED"


@pytest.mark.parametrize("metric", sorted(EXPECTED))
def test_section3_formula(frame: Frame, metric: str) -> None:
    expected = EXPECTED[metric]
    assert frame.cmgs["0"].metrics[metric] == pytest.approx(expected, rel=1e-12), metric
    assert frame.total.metrics[metric] == pytest.approx(expected, rel=1e-12), metric
    thread = frame.threads["100"].metrics
    if metric in CMG_WIDE:
        # CMG-wide inputs cannot be attributed to a thread: absent or n/a, never a number.
        assert thread.get(metric) is None, metric
    else:
        assert thread[metric] == pytest.approx(expected, rel=1e-12), metric
        assert frame.cores["12"].metrics[metric] == pytest.approx(expected, rel=1e-12), metric


def test_split_metrics_are_the_cross_group_ones(frame: Frame) -> None:
    # L1_MISS_WAIT (SC4) / L1D_CACHE_REFILL (SC1); NOT_SEC0 (SC3) / PIPE1_COMP (SC5); etc.
    assert {"avg_L1_miss_penalty", "non_sec0_ratio", "other_ld_stall_rate"} <= frame.total.split
    assert "IPC" not in frame.total.split  # INST_RETIRED and CPU_CYCLES share SC1 and SC5
    assert "L1D_miss_rate" not in frame.total.split


def test_baseline_deltas_give_the_documents_effects(a64fx: Profile) -> None:
    """Sector cache off (baseline) then on: ΔL1D_miss_rate = off - on, ΔIPC = on - off."""
    engine = MetricsEngine(a64fx, recent_seconds=SECONDS)
    for s in run_rotation(a64fx):
        engine.add_slice(s)
    engine.frame(SECONDS)
    engine.mark_baseline()
    on = {"L1D_CACHE_REFILL": 0.5, "INST_RETIRED": 1.2, "LD_COMP_WAIT_L2_MISS": 0.5}
    for s in run_rotation(a64fx, on):
        engine.add_slice(Slice(s.t + SECONDS, s.index + 6, s.duration, s.group, s.rows))
    frame = engine.frame(2 * SECONDS)
    assert frame.baseline is not None
    deltas = frame.baseline.total
    assert deltas["L1D_miss_rate"].improvement == pytest.approx(0.05 - 0.025)  # off - on
    assert deltas["mem_stall_rate"].improvement == pytest.approx(0.1 - 0.05)
    assert deltas["IPC"].improvement == pytest.approx(1.8 - 1.5)  # on - off
    assert deltas["IPC"].relative is not None
    assert deltas["IPC"].relative * 100 == pytest.approx(20.0)  # IPC_improvement [%]
    assert deltas["energy_per_inst"].improvement == pytest.approx(0.8 - 0.8 / 1.2)
    assert deltas["SCE_usage_ratio"].improvement is None  # better: none
