"""The PMU document's section-3 sector-cache metrics, computed over fapp cpupa event sets.

Each event set is a separate run, so a metric should take all its inputs from one set. For each
metric the first set (in set order) that holds all its events is used, and ``CPU_CYCLES`` is that
set's own ``PMCCNTR`` unless 0x11 itself was counted. When no single set holds them all, each
event comes from the first set that has it and the metric is listed as ``split`` (its inputs are
from different runs, like the live engine's inputs counted in different groups). A metric with an
event that no set counted is ``None``.

Per thread, a metric that needs a CMG-wide event (EA_L2, L2_MISS_WAIT, ...) is ``None``: every
thread's counter saw the whole CMG, so the value cannot be attributed to the thread. For the CMG
total, per-PE events are summed over the threads and CMG-wide events averaged (each thread's
row counts the same CMG), as the Fujitsu report does for EA_L2/EA_MEMORY.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sectormon.fapp.csvread import Measurement
from sectormon.fapp.names import is_cmg_scoped

CYCLES = "CPU_CYCLES"  # 0x11, or the set's PMCCNTR
CPU_CYCLES_CODE = 0x11

# Event codes by the names the PMU document uses.
L1D_CACHE = 0x04
L1D_CACHE_REFILL = 0x03
L1D_CACHE_REFILL_DM = 0x200
L1D_CACHE_WB = 0x15
L1_MISS_WAIT = 0x208
L2D_CACHE = 0x16
L2D_CACHE_REFILL = 0x17
L2D_CACHE_REFILL_DM = 0x300
L2D_CACHE_WB = 0x18
L2_MISS_WAIT = 0x308
L2_MISS_COUNT = 0x309
LD_COMP_WAIT = 0x184
LD_COMP_WAIT_L1_MISS = 0x182
LD_COMP_WAIT_L2_MISS = 0x180
INST_RETIRED = 0x08
EA_CORE = 0x1E0
EA_L2 = 0x3E0
EA_MEMORY = 0x3E8
L1_PIPE0_VAL = 0x240
L1_PIPE1_VAL = 0x241
L1_PIPE0_COMP = 0x260
L1_PIPE1_COMP = 0x261
L1_PIPE0_VAL_IU_TAG_ADRS_SCE = 0x250
L1_PIPE1_VAL_IU_TAG_ADRS_SCE = 0x252
L1_PIPE0_VAL_IU_NOT_SEC0 = 0x2A0
L1_PIPE1_VAL_IU_NOT_SEC0 = 0x2A1

# nJ per count (the document's 48-core 2.2 GHz factors, as in the Fujitsu report).
NJ = {EA_CORE: 8, EA_L2: 32, EA_MEMORY: 256}

Key = int | str
Get = Callable[[Key], float]


def _energy(v: Get) -> float:
    return v(EA_CORE) * NJ[EA_CORE] + v(EA_L2) * NJ[EA_L2] + v(EA_MEMORY) * NJ[EA_MEMORY]


@dataclass(frozen=True, slots=True)
class Section3Metric:
    """One section-3 metric: its events and its formula over a value getter."""

    name: str
    unit: str
    events: tuple[Key, ...]
    formula: Callable[[Get], float]
    better: str = "none"


METRICS: tuple[Section3Metric, ...] = (
    Section3Metric(
        "L1D_miss_rate",
        "",
        (L1D_CACHE_REFILL, L1D_CACHE),
        lambda v: v(L1D_CACHE_REFILL) / v(L1D_CACHE),
        "lower",
    ),
    Section3Metric(
        "L2D_miss_rate",
        "",
        (L2D_CACHE_REFILL, L2D_CACHE),
        lambda v: v(L2D_CACHE_REFILL) / v(L2D_CACHE),
        "lower",
    ),
    Section3Metric(
        "L1D_demand_refill_ratio",
        "",
        (L1D_CACHE_REFILL_DM, L1D_CACHE_REFILL),
        lambda v: v(L1D_CACHE_REFILL_DM) / v(L1D_CACHE_REFILL),
        "lower",
    ),
    Section3Metric(
        "L2D_demand_refill_ratio",
        "",
        (L2D_CACHE_REFILL_DM, L2D_CACHE_REFILL),
        lambda v: v(L2D_CACHE_REFILL_DM) / v(L2D_CACHE_REFILL),
        "lower",
    ),
    Section3Metric(
        "mem_stall_rate",
        "",
        (LD_COMP_WAIT_L2_MISS, CYCLES),
        lambda v: v(LD_COMP_WAIT_L2_MISS) / v(CYCLES),
        "lower",
    ),
    Section3Metric(
        "l2_stall_rate",
        "",
        (LD_COMP_WAIT_L1_MISS, CYCLES),
        lambda v: v(LD_COMP_WAIT_L1_MISS) / v(CYCLES),
        "lower",
    ),
    Section3Metric(
        "total_ld_stall_rate", "", (LD_COMP_WAIT, CYCLES), lambda v: v(LD_COMP_WAIT) / v(CYCLES), "lower"
    ),
    Section3Metric(
        "avg_L1_miss_penalty",
        "cycles",
        (L1_MISS_WAIT, L1D_CACHE_REFILL),
        lambda v: v(L1_MISS_WAIT) / v(L1D_CACHE_REFILL),
        "lower",
    ),
    Section3Metric(
        "avg_L2_miss_penalty",
        "cycles",
        (L2_MISS_WAIT, L2_MISS_COUNT),
        lambda v: v(L2_MISS_WAIT) / v(L2_MISS_COUNT),
        "lower",
    ),
    Section3Metric(
        "SCE_usage_ratio",
        "",
        (L1_PIPE0_VAL_IU_TAG_ADRS_SCE, L1_PIPE1_VAL_IU_TAG_ADRS_SCE, L1_PIPE0_VAL, L1_PIPE1_VAL),
        lambda v: (
            (v(L1_PIPE0_VAL_IU_TAG_ADRS_SCE) + v(L1_PIPE1_VAL_IU_TAG_ADRS_SCE))
            / (v(L1_PIPE0_VAL) + v(L1_PIPE1_VAL))
        ),
    ),
    Section3Metric(
        "non_sec0_ratio",
        "",
        (L1_PIPE0_VAL_IU_NOT_SEC0, L1_PIPE1_VAL_IU_NOT_SEC0, L1_PIPE0_COMP, L1_PIPE1_COMP),
        lambda v: (
            (v(L1_PIPE0_VAL_IU_NOT_SEC0) + v(L1_PIPE1_VAL_IU_NOT_SEC0))
            / (v(L1_PIPE0_COMP) + v(L1_PIPE1_COMP))
        ),
    ),
    Section3Metric(
        "L1D_WB_per_access", "", (L1D_CACHE_WB, L1D_CACHE), lambda v: v(L1D_CACHE_WB) / v(L1D_CACHE), "lower"
    ),
    Section3Metric(
        "L2D_WB_per_access", "", (L2D_CACHE_WB, L2D_CACHE), lambda v: v(L2D_CACHE_WB) / v(L2D_CACHE), "lower"
    ),
    Section3Metric("energy_total", "nJ", (EA_CORE, EA_L2, EA_MEMORY), _energy, "lower"),
    Section3Metric(
        "energy_per_inst",
        "nJ",
        (EA_CORE, EA_L2, EA_MEMORY, INST_RETIRED),
        lambda v: _energy(v) / v(INST_RETIRED),
        "lower",
    ),
    Section3Metric(
        "mem_energy_ratio",
        "",
        (EA_CORE, EA_L2, EA_MEMORY),
        lambda v: v(EA_MEMORY) * NJ[EA_MEMORY] / _energy(v),
        "lower",
    ),
    Section3Metric("IPC", "", (INST_RETIRED, CYCLES), lambda v: v(INST_RETIRED) / v(CYCLES), "higher"),
)

METRIC_NAMES: tuple[str, ...] = tuple(metric.name for metric in METRICS)


@dataclass(frozen=True, slots=True)
class Section3:
    """Section-3 values per thread and for the CMG, and the set each event was taken from."""

    threads: Mapping[str, Mapping[str, float | None]]
    cmg_total: Mapping[str, float | None]
    sources: Mapping[str, Mapping[str, str]]  # metric -> {event label: set name}
    split: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "threads": {k: dict(v) for k, v in self.threads.items()},
            "cmg_total": dict(self.cmg_total),
            "sources": {k: dict(v) for k, v in self.sources.items()},
            "split": list(self.split),
        }


def _has(m: Measurement, set_name: str, key: Key) -> bool:
    event_set = m.sets[set_name]
    if key == CYCLES:
        return True  # PMCCNTR is in every set
    return isinstance(key, int) and key in event_set.codes


def choose_sets(m: Measurement, events: Sequence[Key]) -> dict[Key, str] | None:
    """Which set each event is read from (one set for all if possible); ``None`` if an event is absent."""
    for set_name in m.sets:
        if all(_has(m, set_name, key) for key in events):
            return dict.fromkeys(events, set_name)
    chosen: dict[Key, str] = {}
    for key in events:
        if key == CYCLES:
            continue
        home = next((s for s in m.sets if _has(m, s, key)), None)
        if home is None:
            return None
        chosen[key] = home
    if CYCLES in events:
        # Cycles from the set of the metric's first counted event: the closest thing to "same run".
        first = next(iter(chosen.values()))
        chosen[CYCLES] = first
    return chosen


def _raw(m: Measurement, set_name: str, key: Key, thread: int) -> int | None:
    if key == CYCLES:
        if CPU_CYCLES_CODE in m.sets[set_name].codes:
            return m.value(set_name, CPU_CYCLES_CODE, thread)
        return m.value(set_name, "PMCCNTR", thread)
    return m.value(set_name, key, thread)


class _Missing(Exception):
    pass


def _getter(m: Measurement, sets: Mapping[Key, str], threads: Sequence[int], per_thread: bool) -> Get:
    def get(key: Key) -> float:
        values = [_raw(m, sets[key], key, t) for t in threads]
        if not values or any(v is None for v in values):
            raise _Missing(key)
        total = float(sum(v for v in values if v is not None))
        if isinstance(key, int) and is_cmg_scoped(key):
            if per_thread:
                raise _Missing(key)  # a CMG-wide count is not the thread's
            return total / len(values)
        return total

    return get


def _label(key: Key) -> str:
    return key if isinstance(key, str) else f"0x{key:04x}"


def compute_section3(m: Measurement) -> Section3:
    """Every section-3 metric per thread and for the CMG total (``None`` where inputs are missing)."""
    choices = {metric.name: choose_sets(m, metric.events) for metric in METRICS}
    threads: dict[str, dict[str, float | None]] = {}
    for thread in m.threads:
        threads[str(thread)] = {
            metric.name: _apply(m, metric, choices[metric.name], (thread,), True) for metric in METRICS
        }
    cmg_total = {metric.name: _apply(m, metric, choices[metric.name], m.threads, False) for metric in METRICS}
    sources = {
        name: {_label(k): s for k, s in chosen.items()}
        for name, chosen in choices.items()
        if chosen is not None
    }
    split = tuple(
        name for name, chosen in choices.items() if chosen is not None and len(set(chosen.values())) > 1
    )
    return Section3(threads=threads, cmg_total=cmg_total, sources=sources, split=split)


def _apply(
    m: Measurement,
    metric: Section3Metric,
    sets: Mapping[Key, str] | None,
    threads: Sequence[int],
    per_thread: bool,
) -> float | None:
    if sets is None:
        return None
    try:
        return metric.formula(_getter(m, sets, threads, per_thread))
    except (_Missing, ZeroDivisionError):
        return None
