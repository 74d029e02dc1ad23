"""Deterministic frames and headers for the TUI tests and the UI benchmark.

Two sessions:

* an A64FX session (FX1000-like: CPUs 12-59, CMGs 0-3, plus "unbound" threads) with the a64fx
  profile's metrics, some of them n/a, some counted under half the window (low coverage), some
  split across groups, and a baseline;
* a generic x86 host (2 CPUs, software events only: IPC and cache metrics n/a).

The values are made up but plausible (the shape of the PMU document's metrics); the fixture is
test data, so it may compute rates and deltas that the UI itself never computes.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any

from sectormon.data.frames import Baseline, Frame, MetricDelta, ScopeStats, WindowStats

INTERVAL = 1.0
A64FX_CPUS = tuple(range(12, 60))
A64FX_CMGS = {str(c): list(range(12 + 12 * c, 24 + 12 * c)) for c in range(4)}
GROUPS = ("SC1", "SC2", "SC3", "SC4", "SC5")
ROTATION_SHARE = 1 / len(GROUPS)
"""Five groups take turns: an event is counted about a fifth of each window (its coverage)."""

A64FX_METRICS: dict[str, dict[str, str]] = {
    "IPC": {"formula": "INST_RETIRED / CPU_CYCLES", "unit": "inst/cycle", "better": "higher", "scope": "any"},
    "L1D_miss_rate": {
        "formula": "L1D_CACHE_REFILL / L1D_CACHE",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "L1D_demand_refill_ratio": {
        "formula": "L1D_CACHE_REFILL_DM / L1D_CACHE_REFILL",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "L1D_WB_per_access": {
        "formula": "L1D_CACHE_WB / L1D_CACHE",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "L2D_miss_rate": {
        "formula": "L2D_CACHE_REFILL / L2D_CACHE",
        "unit": "ratio",
        "better": "lower",
        "scope": "cmg",
    },
    "L2D_miss_rate_corrected": {
        "formula": "(L2D_CACHE_REFILL - L2D_SWAP_DM - L2D_CACHE_MIBMCH_PRF) / L2D_CACHE",
        "unit": "ratio",
        "better": "lower",
        "scope": "cmg",
    },
    "L2D_demand_refill_ratio": {
        "formula": "(L2D_CACHE_REFILL_DM - L2D_SWAP_DM) / L2D_CACHE_REFILL",
        "unit": "ratio",
        "better": "lower",
        "scope": "cmg",
    },
    "L2D_WB_per_access": {
        "formula": "L2D_CACHE_WB / L2D_CACHE",
        "unit": "ratio",
        "better": "lower",
        "scope": "cmg",
    },
    "L2_swap_dm_per_cycle": {
        "formula": "L2D_SWAP_DM / CPU_CYCLES",
        "unit": "1/cycle",
        "better": "lower",
        "scope": "cmg",
    },
    "avg_L1_miss_penalty": {
        "formula": "L1_MISS_WAIT / L1D_CACHE_REFILL",
        "unit": "cycles",
        "better": "lower",
        "scope": "any",
    },
    "avg_L2_miss_penalty": {
        "formula": "L2_MISS_WAIT / L2_MISS_COUNT_corrected",
        "unit": "cycles",
        "better": "lower",
        "scope": "cmg",
    },
    "mem_stall_rate": {
        "formula": "LD_COMP_WAIT_L2_MISS / CPU_CYCLES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "l2_stall_rate": {
        "formula": "LD_COMP_WAIT_L1_MISS / CPU_CYCLES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "other_ld_stall_rate": {
        "formula": "(LD_COMP_WAIT - LD_COMP_WAIT_L1_MISS - LD_COMP_WAIT_L2_MISS) / CPU_CYCLES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "total_ld_stall_rate": {
        "formula": "LD_COMP_WAIT / CPU_CYCLES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "SCE_usage_ratio": {
        "formula": (
            "(L1_PIPE0_VAL_IU_TAG_ADRS_SCE + L1_PIPE1_VAL_IU_TAG_ADRS_SCE) / (L1_PIPE0_VAL + L1_PIPE1_VAL)"
        ),
        "unit": "ratio",
        "better": "none",
        "scope": "any",
    },
    "non_sec0_ratio": {
        "formula": "(L1_PIPE0_VAL_IU_NOT_SEC0 + L1_PIPE1_VAL_IU_NOT_SEC0) / (L1_PIPE0_COMP + L1_PIPE1_COMP)",
        "unit": "ratio",
        "better": "none",
        "scope": "any",
    },
    "energy_total": {
        "formula": "EA_CORE * NJ_EA_CORE + EA_L2 * NJ_EA_L2 + EA_MEMORY * NJ_EA_MEMORY",
        "unit": "nJ",
        "better": "lower",
        "scope": "cmg",
    },
    "energy_per_inst": {
        "formula": "energy_total / INST_RETIRED",
        "unit": "nJ/inst",
        "better": "lower",
        "scope": "cmg",
    },
    "mem_energy_ratio": {
        "formula": "EA_MEMORY * NJ_EA_MEMORY / energy_total",
        "unit": "ratio",
        "better": "lower",
        "scope": "cmg",
    },
    "power_core_W": {
        "formula": "EA_CORE * NJ_EA_CORE * 1e-9 / SECONDS",
        "unit": "W",
        "better": "lower",
        "scope": "any",
    },
    "power_L2_W": {
        "formula": "EA_L2 * NJ_EA_L2 * 1e-9 / SECONDS",
        "unit": "W",
        "better": "lower",
        "scope": "cmg",
    },
    "power_memory_W": {
        "formula": "EA_MEMORY * NJ_EA_MEMORY * 1e-9 / SECONDS",
        "unit": "W",
        "better": "lower",
        "scope": "cmg",
    },
    "power_total_W": {
        "formula": "power_core_W + power_L2_W + power_memory_W",
        "unit": "W",
        "better": "lower",
        "scope": "cmg",
    },
    "L2_miss_count_corrected": {
        "formula": "L2_MISS_COUNT - L2D_CACHE_SWAP_LOCAL - L2_PIPE_COMP_PF_L2MIB_MCH",
        "unit": "count",
        "better": "lower",
        "scope": "cmg",
    },
}
CORE_METRICS = tuple(n for n, m in A64FX_METRICS.items() if m["scope"] == "any")
CMG_METRICS = tuple(A64FX_METRICS)

PE_EVENTS = {
    "CPU_CYCLES": 0x11,
    "INST_RETIRED": 0x08,
    "L1D_CACHE": 0x04,
    "L1D_CACHE_REFILL": 0x03,
    "L1D_CACHE_REFILL_DM": 0x200,
    "L1D_CACHE_WB": 0x15,
    "LD_COMP_WAIT": 0x184,
    "LD_COMP_WAIT_L2_MISS": 0x180,
    "LD_COMP_WAIT_L1_MISS": 0x182,
    "EA_CORE": 0x1E0,
}
CMG_EVENTS = {"L2_MISS_WAIT": 0x308, "L2_MISS_COUNT": 0x309, "EA_L2": 0x3E0, "EA_MEMORY": 0x3E8}

GENERIC_METRICS: dict[str, dict[str, str]] = {
    "IPC": {"formula": "INSTRUCTIONS / CYCLES", "unit": "inst/cycle", "better": "higher", "scope": "any"},
    "cache_miss_rate": {
        "formula": "CACHE_MISSES / CACHE_REFERENCES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "branch_miss_rate": {
        "formula": "BRANCH_MISSES / BRANCHES",
        "unit": "ratio",
        "better": "lower",
        "scope": "any",
    },
    "cpu_utilization": {
        "formula": "TASK_CLOCK / 1e9 / SECONDS",
        "unit": "cores",
        "better": "none",
        "scope": "any",
    },
    "page_fault_rate": {"formula": "PAGE_FAULTS / SECONDS", "unit": "1/s", "better": "lower", "scope": "any"},
    "context_switch_rate": {
        "formula": "CONTEXT_SWITCHES / SECONDS",
        "unit": "1/s",
        "better": "lower",
        "scope": "any",
    },
    "migration_rate": {
        "formula": "CPU_MIGRATIONS / SECONDS",
        "unit": "1/s",
        "better": "lower",
        "scope": "any",
    },
    "major_fault_rate": {
        "formula": "MAJOR_FAULTS / SECONDS",
        "unit": "1/s",
        "better": "lower",
        "scope": "any",
    },
}
GENERIC_EVENTS = {
    "TASK_CLOCK": "task-clock",
    "PAGE_FAULTS": "page-faults",
    "CONTEXT_SWITCHES": "context-switches",
    "CPU_MIGRATIONS": "cpu-migrations",
    "MAJOR_FAULTS": "major-faults",
}


# -- headers ----------------------------------------------------------------------------------


def a64fx_header(source_kind: str = "sim") -> dict[str, Any]:
    events = {name: {"code": code, "scope": "pe", "unit": "count"} for name, code in PE_EVENTS.items()}
    events.update(
        {name: {"code": code, "scope": "cmg", "unit": "count"} for name, code in CMG_EVENTS.items()}
    )
    return {
        "schema": "sectormon/header/1",
        "source": {"kind": source_kind, "scenario": "scenario-a"},
        "target": {
            "pid": 4242,
            "cmdline": ["./stream_mix", "-n", "48"],
            "threads": 48,
            "cpus": list(A64FX_CPUS),
            "mode": "per-thread",
        },
        "profile": {
            "name": "a64fx",
            "variant": "48core-2.2GHz",
            "events": events,
            "groups": {g: {} for g in GROUPS},
            "metrics": A64FX_METRICS,
        },
        "groups": {g: {"pe": [], "cmg": []} for g in GROUPS},
        "sector_config": {
            "FLIB_SCCR_CNTL": "TRUE",
            "FLIB_L1_SCCR_CNTL": "TRUE",
            "FLIB_L2_SECTOR_NWAYS_INIT": "10,4",
        },
        "options": {"interval": INTERVAL, "timeslice": 0.1},
        "unavailable": {"L2D_CACHE_SWAP_LOCAL": "ENOENT: not in this PMU's table"},
        "topology": {"cmgs": A64FX_CMGS},
    }


def generic_header() -> dict[str, Any]:
    events = {
        name: {"code": None, "scope": "pe", "unit": "count", "spec": spec}
        for name, spec in GENERIC_EVENTS.items()
    }
    return {
        "schema": "sectormon/header/1",
        "source": {"kind": "perf"},
        "target": {
            "pid": 777,
            "cmdline": "python3 work.py",
            "threads": 3,
            "cpus": [0, 1],
            "mode": "per-thread",
        },
        "profile": {"name": "generic", "events": events, "groups": {"sw": {}}, "metrics": GENERIC_METRICS},
        "groups": {"sw": {"pe": list(GENERIC_EVENTS), "cmg": []}},
        "sector_config": {},
        "options": {"interval": INTERVAL, "timeslice": 0.02},
        "unavailable": {"CYCLES": "ENOENT: no hardware PMU", "INSTRUCTIONS": "ENOENT: no hardware PMU"},
        "topology": {"cmgs": {"0": [0, 1]}},
    }


# -- scopes -----------------------------------------------------------------------------------


def _core_metrics(rng: random.Random, core: int, step: int, sector_on: bool) -> dict[str, float | None]:
    load = 0.5 + 0.5 * ((core * 7 + step) % 11) / 10
    mem = 0.12 + 0.18 * load * (0.7 if sector_on else 1.0) + rng.uniform(0, 0.02)
    l2 = 0.06 + 0.08 * rng.random()
    other = 0.04 + 0.05 * rng.random()
    sce = (0.35 + 0.3 * rng.random()) if sector_on else 0.0
    metrics: dict[str, float | None] = {
        "IPC": 0.45 + 0.9 * (1 - mem) * (1.1 if sector_on else 1.0) + rng.uniform(-0.05, 0.05),
        "L1D_miss_rate": 0.02 + 0.08 * load * (0.8 if sector_on else 1.0),
        "L1D_demand_refill_ratio": 0.3 + 0.4 * rng.random(),
        "L1D_WB_per_access": 0.004 + 0.01 * rng.random(),
        "avg_L1_miss_penalty": 40 + 60 * rng.random(),
        "mem_stall_rate": mem,
        "l2_stall_rate": l2,
        "other_ld_stall_rate": other,
        "total_ld_stall_rate": mem + l2 + other,
        "SCE_usage_ratio": sce,
        "non_sec0_ratio": sce * (0.4 + 0.3 * rng.random()),
        "power_core_W": 2.1 + 0.8 * load,
    }
    if core == 17:
        metrics["avg_L1_miss_penalty"] = None  # zero denominator: n/a, never 0
    if core == 59:
        metrics["power_core_W"] = None
    return metrics


def _counts(rng: random.Random, names: Mapping[str, int], scale: float) -> dict[str, float]:
    return {name: float(int(scale * (1 + rng.random()) * 1e6)) for name in names}


def _core_scope(rng: random.Random, core: int, step: int, sector_on: bool, seconds: float) -> ScopeStats:
    metrics = _core_metrics(rng, core, step, sector_on)
    coverage = {name: ROTATION_SHARE for name in metrics}
    split: set[str] = set()
    if core in range(30, 36):  # threads that came late: counted well under one rotation share
        coverage.update({"L1D_miss_rate": 0.06, "IPC": 0.08})
    if core in (20, 44):
        split.add("SCE_usage_ratio")
    counts = _counts(rng, PE_EVENTS, seconds * 2.2e3)
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=metrics,
        coverage={**coverage, **{k: ROTATION_SHARE for k in counts}},
        split=frozenset(split),
        seconds=seconds,
    )


def _unbound_scope(rng: random.Random, step: int, seconds: float) -> ScopeStats:
    metrics: dict[str, float | None] = dict.fromkeys(CORE_METRICS, None)
    metrics.update({"IPC": 0.31 + 0.01 * (step % 3), "L1D_miss_rate": 0.081, "mem_stall_rate": 0.2})
    counts = _counts(rng, {"CPU_CYCLES": 0, "INST_RETIRED": 0}, seconds * 10)
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=metrics,
        coverage={"IPC": 0.04, "L1D_miss_rate": 0.04, "mem_stall_rate": 0.04},
        seconds=seconds,
    )


def _cmg_scope(
    rng: random.Random, cmg: int, cores: Mapping[str, ScopeStats], sector_on: bool, seconds: float
) -> ScopeStats:
    members = [cores[str(c)] for c in A64FX_CMGS[str(cmg)]]
    metrics: dict[str, float | None] = {}
    for name in CORE_METRICS:
        values = [m.metrics.get(name) for m in members]
        known = [v for v in values if v is not None]
        metrics[name] = sum(known) / len(known) if known else None
    metrics["power_core_W"] = sum(m.metrics.get("power_core_W") or 0.0 for m in members)
    raw = 0.18 + 0.05 * cmg + 0.02 * rng.random()
    corrected = raw * (0.55 if sector_on else 0.8)
    metrics.update(
        {
            "L2D_miss_rate": raw,
            "L2D_miss_rate_corrected": corrected,
            "L2D_demand_refill_ratio": 0.4 + 0.1 * rng.random(),
            "L2D_WB_per_access": 0.05 + 0.02 * rng.random(),
            "L2_swap_dm_per_cycle": 0.0021 + 0.001 * rng.random(),
            "avg_L2_miss_penalty": 210 + 40 * rng.random(),
            "power_L2_W": 3.2 + 0.5 * rng.random(),
            "power_memory_W": 9.5 + 3 * rng.random() * (0.7 if sector_on else 1.0),
            "energy_total": 2.3e10 * seconds,
            "energy_per_inst": 0.48 + 0.1 * rng.random(),
            "mem_energy_ratio": 0.31 + 0.05 * rng.random(),
            "L2_miss_count_corrected": 1.2e7 * seconds,
        }
    )
    metrics["power_total_W"] = (
        (metrics["power_core_W"] or 0) + (metrics["power_L2_W"] or 0) + (metrics["power_memory_W"] or 0)
    )
    if cmg == 3:
        metrics["avg_L2_miss_penalty"] = None
    coverage = {name: ROTATION_SHARE for name in metrics}
    coverage["avg_L2_miss_penalty"] = 0.07
    counts = _counts(rng, {**PE_EVENTS, **CMG_EVENTS}, seconds * 2.2e4)
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=metrics,
        coverage={**coverage, **{k: ROTATION_SHARE for k in counts}},
        split=frozenset({"L2D_miss_rate_corrected"}) if cmg == 2 else frozenset(),
        seconds=seconds,
    )


def _total_scope(cmgs: Mapping[str, ScopeStats], seconds: float) -> ScopeStats:
    metrics: dict[str, float | None] = {}
    for name in CMG_METRICS:
        values = [s.metrics.get(name) for s in cmgs.values()]
        known = [v for v in values if v is not None]
        if not known:
            metrics[name] = None
        elif name.startswith("power_") or name in ("energy_total", "L2_miss_count_corrected"):
            metrics[name] = sum(known)
        else:
            metrics[name] = sum(known) / len(known)
    counts: dict[str, float] = {}
    for scope in cmgs.values():
        for key, value in scope.counts.items():
            counts[key] = counts.get(key, 0.0) + value
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=metrics,
        coverage={**{name: ROTATION_SHARE for name in metrics}, **{k: ROTATION_SHARE for k in counts}},
        seconds=seconds,
    )


def _window(
    step: int, seconds: float, sector_on: bool, seed: int
) -> tuple[ScopeStats, dict[str, ScopeStats], dict[str, ScopeStats]]:
    rng = random.Random(seed * 1000 + step)
    cores = {str(c): _core_scope(rng, c, step, sector_on, seconds) for c in A64FX_CPUS}
    cores["unbound"] = _unbound_scope(rng, step, seconds)
    cmgs = {str(c): _cmg_scope(rng, c, cores, sector_on, seconds) for c in range(4)}
    return _total_scope(cmgs, seconds), cmgs, cores


def a64fx_frame(step: int, *, sector_on: bool = False, final: bool = False) -> Frame:
    """Frame ``step`` (t = step+1 s) of the A64FX session."""
    total, cmgs, cores = _window(step, INTERVAL, sector_on, seed=1)
    recent_seconds = min(10.0, (step + 1) * INTERVAL)
    r_total, r_cmgs, r_cores = _window(step, recent_seconds, sector_on, seed=2)
    run_seconds = (step + 1) * INTERVAL
    u_total, u_cmgs, u_cores = _window(step, run_seconds, sector_on, seed=3)
    coverage = {g: ROTATION_SHARE for g in GROUPS}
    return Frame(
        t=(step + 1) * INTERVAL,
        interval=INTERVAL,
        overhead=0.0042,
        total=total,
        cmgs=cmgs,
        cores=cores,
        threads={},
        recent=WindowStats(recent_seconds, r_total, r_cmgs, r_cores),
        run=WindowStats(run_seconds, u_total, u_cmgs, u_cores),
        groups=coverage,
        active_group=GROUPS[step % len(GROUPS)],
        final=final,
    )


def a64fx_frames(count: int, *, sector_from: int | None = None) -> list[Frame]:
    """``count`` frames; from ``sector_from`` on the sector cache is on (better misses, IPC)."""
    return [
        a64fx_frame(i, sector_on=sector_from is not None and i >= sector_from, final=False)
        for i in range(count)
    ]


# -- baseline deltas (test data: the engine computes these in the real pipeline) -------------


def _delta(base: float | None, now: float | None, better: str) -> MetricDelta:
    if base is None or now is None:
        return MetricDelta(base, now, None, None, None)
    delta = now - base
    improvement = -delta if better == "lower" else delta
    relative = improvement / abs(base) if base != 0 else None
    return MetricDelta(base, now, delta, improvement, relative)


def _scope_deltas(
    base: ScopeStats, now: ScopeStats, metrics: Mapping[str, Mapping[str, str]]
) -> dict[str, MetricDelta]:
    return {
        name: _delta(base.metrics.get(name), now.metrics.get(name), info.get("better", "none"))
        for name, info in metrics.items()
        if name in base.metrics or name in now.metrics
    }


def make_baseline(
    base: Frame, now: Frame, metrics: Mapping[str, Mapping[str, str]] = A64FX_METRICS
) -> Baseline:
    """Deltas of ``now``'s rolling window against ``base``'s."""
    return Baseline(
        t_from=base.t - base.recent.seconds,
        t_to=base.t,
        total=_scope_deltas(base.recent.total, now.recent.total, metrics),
        cmgs={
            k: _scope_deltas(base.recent.cmgs[k], v, metrics)
            for k, v in now.recent.cmgs.items()
            if k in base.recent.cmgs
        },
        cores={
            k: _scope_deltas(base.recent.cores[k], v, metrics)
            for k, v in now.recent.cores.items()
            if k in base.recent.cores
        },
    )


def with_baseline(
    frame: Frame, base: Frame, metrics: Mapping[str, Mapping[str, str]] = A64FX_METRICS
) -> Frame:
    return dataclasses.replace(frame, baseline=make_baseline(base, frame, metrics))


# -- generic host -----------------------------------------------------------------------------


def _generic_scope(rng: random.Random, util: float, seconds: float) -> ScopeStats:
    metrics: dict[str, float | None] = {
        "IPC": None,
        "cache_miss_rate": None,
        "branch_miss_rate": None,
        "cpu_utilization": util,
        "page_fault_rate": 120 + 40 * rng.random(),
        "context_switch_rate": 800 + 300 * rng.random(),
        "migration_rate": 2 + rng.random(),
        "major_fault_rate": 0.0,
    }
    counts = {"TASK_CLOCK": util * seconds * 1e9, "PAGE_FAULTS": float(int(130 * seconds))}
    return ScopeStats(
        counts=counts,
        rates={k: v / seconds for k, v in counts.items()},
        metrics=metrics,
        coverage={**{n: 1.0 for n in metrics}, **{k: 1.0 for k in counts}},
        seconds=seconds,
    )


def generic_frame(step: int) -> Frame:
    rng = random.Random(7000 + step)
    cores = {"0": _generic_scope(rng, 0.62, INTERVAL), "1": _generic_scope(rng, 0.18, INTERVAL)}
    cores["unbound"] = _generic_scope(rng, 0.05, INTERVAL)
    cmgs = {"0": _generic_scope(rng, 0.4, INTERVAL)}
    total = _generic_scope(rng, 0.42, INTERVAL)
    window = WindowStats(INTERVAL, total, cmgs, cores)
    return Frame(
        t=(step + 1) * INTERVAL,
        interval=INTERVAL,
        overhead=0.0011,
        total=total,
        cmgs=cmgs,
        cores=cores,
        threads={},
        recent=window,
        run=window,
        groups={"sw": 1.0},
        active_group="sw",
    )


def generic_frames(count: int) -> list[Frame]:
    return [generic_frame(i) for i in range(count)]
