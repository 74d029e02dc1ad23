"""Fujitsu's CPU Performance Analysis report (v4.2.1) recomputed from the raw cpupa counts.

The formulas follow Fujitsu's workbook cell by cell: each event from the event set the workbook takes
it from, time-based metrics over pa1's time, the workbook's clamps, the CMG total by its own rules,
and the report's own metric names, so values can be checked against the report itself. Deliberate
differences: a zero denominator or a missing event set gives n/a, not 0, and an untimed thread is
left out of the CMG's means instead of averaging in its zeros.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectormon.errors import DataError
from sectormon.fapp.model import Measurement
from sectormon.fapp.names import measurement_profile, part_variant
from sectormon.profiles.model import Profile

Number = int | float
Value = Number | None

# Workbook constants (overridable from info.json "workbook_constants").
MEMORY_BANDWIDTH_GB_S = 256.0  # per CMG
LINE_BYTES = 256
MAX_FLOP_PER_CYCLE = 32  # FP64 per core
PREDICATE_COEFFICIENT = 16  # the workbook's divisor of the FLA/FLB predicate counts
# The energy factors are the profile's constants of these names (see measurement_profile).
NJ_CONSTANTS = ("NJ_EA_CORE", "NJ_EA_L2", "NJ_EA_MEMORY")

CA_PREFIX = "CA: "

THREAD_METRICS: tuple[str, ...] = (
    "Execution time (s)",
    "Floating-point operation",
    "GFLOPS",
    "Floating-point operation peak ratio",
    "Memory throughput (GB/s)",
    "Effective instruction",
    "SIMD instruction rate",
    "SVE operation rate",
    "Floating-point pipeline Active element rate",
    "IPC",
    "GIPS",
    "CA: Prefetch port busy wait by hardware prefetch (s)",
    "CA: Prefetch port busy wait by software prefetch (s)",
    "CA: Integer load memory access wait (s)",
    "CA: Floating-point load memory access wait (s)",
    "CA: Integer load L2 cache access wait (s)",
    "CA: Integer load L1D cache access wait (s)",
    "CA: Floating-point load L2 cache access wait (s)",
    "CA: Floating-point load L1D cache access wait (s)",
    "CA: Integer operation wait (s)",
    "CA: Floating-point operation wait (s)",
    "CA: Branch instruction wait (s)",
    "CA: Other wait (s)",
    "CA: Store port busy wait (s)",
    "CA: Instruction fetch wait (s)",
    "CA: Barrier synchronization wait (s)",
    "CA: 1 instruction commit (s)",
    "CA: 2 instruction commit (s)",
    "CA: 3 instruction commit (s)",
    "CA: 4 instruction commit (s)",
    "CA: Other instruction commit (s)",
    "CA: Total (s)",
    "L1 busy rate",
    "Load-store instruction",
    "L1D miss",
    "L1D miss rate",
    "L1D miss demand rate",
    "L1D miss hardware prefetch rate",
    "L1D miss software prefetch rate",
    "L2 miss",
    "L2 miss rate",
    "L2 miss demand rate",
    "L2 miss hardware prefetch rate",
    "L2 miss software prefetch rate",
    "Power core (W)",
)


def _cmg_order() -> tuple[str, ...]:
    """CMG-total metrics in the report's order: the CMG-only ones sit next to their relatives."""
    order: list[str] = []
    for name in THREAD_METRICS:
        order.append(name)
        if name == "Memory throughput (GB/s)":
            order.append("Memory throughput peak ratio")
        elif name == "L1 busy rate":
            order += ["L2 busy rate", "Memory busy rate"]
        elif name == "Power core (W)":
            order += ["Power L2 (W)", "Power memory (W)", "Power total (W)"]
    return tuple(order)


CMG_METRICS: tuple[str, ...] = _cmg_order()

# Metrics that are fractions (the report shows them as %), checked against [0, 1] where clamped.
CLAMPED_RATES = (
    "L1D miss demand rate",
    "L1D miss hardware prefetch rate",
    "L2 miss demand rate",
    "L2 miss hardware prefetch rate",
    "L2 miss software prefetch rate",
    "Floating-point pipeline Active element rate",
)


def _better(name: str) -> str:
    """The comparison direction of a report metric (the live profile's ``better`` convention)."""
    if name.startswith(CA_PREFIX):
        return "none" if "commit" in name or name == "CA: Total (s)" else "lower"
    lower = ("Execution time (s)", "Power core (W)", "Power L2 (W)", "Power memory (W)", "Power total (W)")
    higher = (
        "GFLOPS",
        "Floating-point operation peak ratio",
        "IPC",
        "GIPS",
        "Floating-point pipeline Active element rate",
    )
    if name in lower or (name.startswith(("L1D miss", "L2 miss")) and name.endswith("miss rate")):
        return "lower"
    return "higher" if name in higher else "none"


BETTER: dict[str, str] = {name: _better(name) for name in CMG_METRICS}
"""``lower``/``higher``/``none`` per report metric, for ``sectormon compare``'s improvement sign."""

_NAMED_UNITS = {"GFLOPS": "GFLOP/s", "GIPS": "G instructions/s", "IPC": "instructions/cycle"}


def _unit(name: str) -> str:
    """The unit a report metric's name gives: its parentheses, ``(s)``, ``(W)``, ``(GB/s)``, or a
    rate's own name; "" where the report states none."""
    if name.endswith(")") and "(" in name:
        return name[name.rindex("(") + 1 : -1]
    return _NAMED_UNITS.get(name, "")


UNITS: dict[str, str] = {name: _unit(name) for name in CMG_METRICS}
"""The unit of each report metric (for ``sectormon compare``'s tables)."""

# Cycle-accounting items: per thread X / pa2.PMCCNTR * T; CMG total = mean of the thread values.
CA_ITEMS: tuple[str, ...] = tuple(
    n for n in THREAD_METRICS if n.startswith(CA_PREFIX) and n != "CA: Total (s)"
)


class _Missing(Exception):
    """An input event is not in the data: the metric is n/a."""


def hi(x: float) -> float:
    """The workbook's GuardLimitUpper (flag 0): min(x, 1)."""
    return min(x, 1.0)


def lo(x: float) -> float:
    """The workbook's GuardLimitLower (flag 0): max(x, 0)."""
    return max(x, 0.0)


Getter = Callable[[str, "int | str"], int]


class _Inputs:
    """Event access for one scope (a thread, or the sum over threads) that remembers which sets it read."""

    def __init__(self, measurement: Measurement, threads: Sequence[int]) -> None:
        self.m = measurement
        self.threads = tuple(threads)
        self.used: set[str] = set()
        self.sums: dict[tuple[str, int | str], int | None] = {}  # formulas share inputs: sum each once

    def __call__(self, set_name: str, key: int | str) -> int:
        self.used.add(set_name)
        if (set_name, key) not in self.sums:
            self.sums[(set_name, key)] = self._sum(set_name, key)
        total = self.sums[(set_name, key)]
        if total is None:
            raise _Missing(f"{set_name}.{key}")
        return total

    def _sum(self, set_name: str, key: int | str) -> int | None:
        total = 0
        for thread in self.threads:
            value = self.m.value(set_name, key, thread)
            if value is None:
                return None
            total += value
        return total

    def mean(self, set_name: str, key: int | str) -> float:
        return self(set_name, key) / len(self.threads)


@dataclass(frozen=True, slots=True)
class Report:
    """The report's values per thread and for the CMG, plus where each metric's inputs came from.

    ``sources`` maps each metric to the event sets (runs) its inputs were read from; ``split``
    lists the metrics whose inputs come from more than one run (like the live engine's ``split``
    for inputs counted in different groups).
    """

    threads: Mapping[str, Mapping[str, Value]]
    cmg_total: Mapping[str, Value]
    sources: Mapping[str, tuple[str, ...]]
    cpu_frequency_hz: float | None

    @property
    def split(self) -> tuple[str, ...]:
        return tuple(name for name, sets in self.sources.items() if len(sets) > 1)

    def to_json(self) -> dict[str, Any]:
        return {"threads": {k: dict(v) for k, v in self.threads.items()}, "cmg_total": dict(self.cmg_total)}


@dataclass(frozen=True, slots=True)
class _Consts:
    cntfrq: float
    vl_factor: Number
    mem_bw: float
    line: int
    max_flop: float
    pred: float
    efctfrq: float | None
    nj: Mapping[str, float]

    def nj_of(self, name: str) -> float:
        """An energy factor; n/a for the metric when the profile lacks it."""
        value = self.nj.get(name)
        if value is None:
            raise _Missing(name)
        return value


def first_timed_frequency(m: Measurement) -> float | None:
    """The workbook's EFCTFRQ: PMCCNTR / CNTVCT x CNTFRQ of pa1's first row (first row with a time)."""
    pa1 = m.sets.get("pa1")
    if pa1 is None:
        return None
    first = next((r for r in pa1.rows if r.thread not in m.untimed and r.cntvct and r.pmccntr), None)
    if first is None or first.cntvct is None or first.pmccntr is None:
        return None
    return first.pmccntr / first.cntvct * m.cntfrq_hz


def report_profile(m: Measurement) -> Profile:
    """The a64fx profile for the measurement's part (its ``NJ_EA_*`` constants are the energy factors)."""
    return measurement_profile(part_variant(m.info, first_timed_frequency(m)))


def _consts(m: Measurement, profile: Profile) -> _Consts:
    wc = m.info.get("workbook_constants", {})
    wc = wc if isinstance(wc, Mapping) else {}
    vl = m.vector_length_bits
    vl_factor: Number = vl // 128 if vl % 128 == 0 else vl / 128
    efctfrq = first_timed_frequency(m)

    def constant(key: str, default: float) -> float:
        value = wc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise DataError(
                str(Path(m.path) / "info.json"),
                None,
                f"workbook_constants.{key} must be a positive number, not {value!r}",
                "fix or remove it",
            )
        return float(value)

    return _Consts(
        cntfrq=m.cntfrq_hz,
        vl_factor=vl_factor,
        mem_bw=constant("memory_bandwidth_gb_s_per_cmg", MEMORY_BANDWIDTH_GB_S),
        line=int(constant("cache_line_bytes", LINE_BYTES)),
        max_flop=constant("max_flop_per_core_per_cycle_fp64", MAX_FLOP_PER_CYCLE),
        pred=constant("predicate_coefficient", PREDICATE_COEFFICIENT),
        efctfrq=efctfrq,
        nj={k: float(profile.constants[k]) for k in NJ_CONSTANTS if k in profile.constants},
    )


def _ca_counts(e: Getter) -> dict[str, Callable[[], float]]:
    """The X of each cycle-accounting item (cycles), except the FP-load-L1D one (needs N)."""
    return {
        "CA: Integer load memory access wait (s)": lambda: e("pa6", 0x181),
        "CA: Floating-point load memory access wait (s)": lambda: e("pa6", 0x180) - e("pa6", 0x181),
        "CA: Integer load L2 cache access wait (s)": lambda: e("pa6", 0x183),
        "CA: Integer load L1D cache access wait (s)": lambda: (
            e("pa6", 0x185) - (e("pa6", 0x181) + e("pa6", 0x183) + e("pa6", 0x187))
        ),
        "CA: Floating-point load L2 cache access wait (s)": lambda: e("pa6", 0x182) - e("pa6", 0x183),
        "CA: Prefetch port busy wait by hardware prefetch (s)": lambda: lo(e("pa2", 0x186) - e("pa6", 0x188)),
        "CA: Prefetch port busy wait by software prefetch (s)": lambda: e("pa6", 0x188),
        "CA: Integer operation wait (s)": lambda: lo(e("pa2", 0x189) - e("pa6", 0x18A)),
        "CA: Floating-point operation wait (s)": lambda: e("pa6", 0x18A),
        "CA: Branch instruction wait (s)": lambda: e("pa7", 0x18B),
        "CA: Other wait (s)": lambda: lo(
            e("pa2", 0x190) - (e("pa2", 0x184) + e("pa2", 0x189) + e("pa2", 0x18C) + e("pa7", 0x18B))
        ),
        "CA: Store port busy wait (s)": lambda: e("pa2", 0x18D),
        "CA: Instruction fetch wait (s)": lambda: e("pa2", 0x18C) - (e("pa2", 0x18D) + e("pa2", 0x18E)),
        "CA: Barrier synchronization wait (s)": lambda: e("pa2", 0x18E),
        "CA: 1 instruction commit (s)": lambda: e("pa2", 0x191),
        "CA: 2 instruction commit (s)": lambda: e("pa7", 0x192),
        "CA: 3 instruction commit (s)": lambda: e("pa7", 0x193),
        "CA: 4 instruction commit (s)": lambda: e("pa7", 0x194),
        "CA: Other instruction commit (s)": lambda: lo(
            e("pa2", "PMCCNTR")
            - (e("pa2", 0x190) + e("pa2", 0x191) + e("pa7", 0x192) + e("pa7", 0x193) + e("pa7", 0x194))
        ),
    }


def _ratio_metrics(e: Getter, c: _Consts) -> dict[str, Callable[[], Value]]:
    """Metrics that are counts or ratios of counts: the same formula per thread and over Σ."""

    def l2_d() -> int:
        return e("pa4", 0x300) - e("pa4", 0x325) + e("pa9", 0x59) - e("pa9", 0x326)

    def load_store() -> int:
        return e("pa5", 0x70) + e("pa5", 0x71)

    def l2_miss() -> int:
        return e("pa1", 0x17) - e("pa1", 0x325) - e("pa1", 0x326)

    def fp_ops() -> Number:
        return e("pa1", 0x80C0) * c.vl_factor + e("pa1", 0x80C1)

    return {
        "Floating-point operation": fp_ops,
        "Effective instruction": lambda: e("pa1", 0x121),
        "SIMD instruction rate": lambda: e("pa1", 0x8000) / e("pa1", 0x121),
        "SVE operation rate": lambda: (
            c.vl_factor * e("pa1", 0x80C0) / (c.vl_factor * e("pa1", 0x80C0) + e("pa1", 0x80C1))
        ),
        "Floating-point pipeline Active element rate": lambda: hi(
            (e("pa3", 0x1B4) + e("pa3", 0x1B5)) / ((e("pa3", 0x1A4) + e("pa3", 0x1A5)) * c.pred)
        ),
        "L1 busy rate": lambda: (e("pa3", 0x240) + e("pa3", 0x241)) / 2 / e("pa3", "PMCCNTR"),
        "Load-store instruction": load_store,
        "L1D miss": lambda: e("pa4", 0x3),
        "L1D miss rate": lambda: e("pa4", 0x3) / load_store(),
        "L1D miss demand rate": lambda: hi((e("pa4", 0x3) - e("pa4", 0x49)) / e("pa4", 0x3)),
        "L1D miss hardware prefetch rate": lambda: hi(e("pa9", 0x202) / e("pa4", 0x3)),
        "L1D miss software prefetch rate": lambda: hi((e("pa4", 0x49) - e("pa9", 0x202)) / e("pa4", 0x3)),
        "L2 miss": l2_miss,
        "L2 miss rate": lambda: l2_miss() / load_store(),
        "L2 miss demand rate": lambda: hi(lo((e("pa4", 0x300) - e("pa4", 0x325)) / l2_d())),
        "L2 miss hardware prefetch rate": lambda: hi(e("pa9", 0x302) / l2_d()),
        "L2 miss software prefetch rate": lambda: hi(
            lo((e("pa9", 0x59) - e("pa9", 0x326) - e("pa9", 0x302)) / l2_d())
        ),
    }


def _memory_bytes(e: Getter, c: _Consts) -> int:
    return (e("pa1", 0x17) - e("pa1", 0x325) - e("pa1", 0x326) + e("pa1", 0x18)) * c.line


def _evaluate(
    formulas: Mapping[str, Callable[[], Value]], inputs: _Inputs, sources: dict[str, set[str]]
) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for name, formula in formulas.items():
        inputs.used = set()
        try:
            value = formula()
        except (_Missing, ZeroDivisionError, OverflowError):
            value = None
        # A result too large for a float (absurd counts or times) is not a number to show: n/a.
        out[name] = value if value is None or math.isfinite(value) else None
        sources.setdefault(name, set()).update(inputs.used)
    return out


def _thread_formulas(e: _Inputs, c: _Consts, timed: bool) -> dict[str, Callable[[], Value]]:
    def t() -> float:
        if not timed:
            raise _Missing("pa1 time")
        return e("pa1", "CNTVCT") / c.cntfrq

    def ipc() -> float:
        if not timed:
            raise _Missing("pa1 cycles")
        return e("pa1", 0x121) / e("pa1", "PMCCNTR")

    def gflops() -> float:
        return (e("pa1", 0x80C0) * c.vl_factor + e("pa1", 0x80C1)) / 1e9 / t()

    def peak() -> float:
        if c.efctfrq is None:
            raise _Missing("EFCTFRQ")
        return gflops() / (c.efctfrq * c.max_flop / 1e9)

    def ca(x: Callable[[], float]) -> Callable[[], float]:
        return lambda: x() / e("pa2", "PMCCNTR") * t()

    counts = _ca_counts(e)

    def fp_load_l1d() -> float:
        # The workbook re-derives N from the rounded seconds value (float), so do the same.
        n_value = ca(counts["CA: Integer load L1D cache access wait (s)"])()
        n = n_value * e("pa2", "PMCCNTR") / t()
        x = lo(e("pa2", 0x184) - (e("pa6", 0x180) + e("pa6", 0x182) + e("pa2", 0x186) + n))
        return x / e("pa2", "PMCCNTR") * t()

    formulas: dict[str, Callable[[], Value]] = dict(_ratio_metrics(e, c))
    formulas.update(
        {
            "Execution time (s)": t,
            "GFLOPS": gflops,
            "Floating-point operation peak ratio": peak,
            "Memory throughput (GB/s)": lambda: _memory_bytes(e, c) / 1e9 / t(),
            "IPC": ipc,
            "GIPS": lambda: e("pa1", 0x121) / 1e9 / t(),
            "CA: Total (s)": t,
            "Power core (W)": lambda: e("pa8", 0x1E0) * c.nj_of("NJ_EA_CORE") / 1e9 / t(),
        }
    )
    for name, x in counts.items():
        formulas[name] = ca(x)
    formulas["CA: Floating-point load L1D cache access wait (s)"] = fp_load_l1d
    return formulas


def _mean(values: Sequence[Value]) -> float:
    if not values or any(v is None for v in values):
        raise _Missing("thread value")
    return sum(v for v in values if v is not None) / len(values)


def _cmg_formulas(
    e: _Inputs, c: _Consts, per_thread: Mapping[str, Mapping[str, Value]], sources: Mapping[str, set[str]]
) -> dict[str, Callable[[], Value]]:
    """``per_thread``: the values of the threads with a time (the means and sums below are over them)."""

    def thread_values(name: str) -> list[Value]:
        e.used.update(sources.get(name, ()))
        return [values[name] for values in per_thread.values()]

    def mean_of(name: str) -> Callable[[], Value]:
        return lambda: _mean(thread_values(name))

    def t_mean() -> float:
        return _mean(thread_values("Execution time (s)"))

    def mem_gb_s() -> float:
        return _memory_bytes(e, c) / t_mean() / 1e9

    def power_core() -> float:
        values = thread_values("Power core (W)")
        if not values or any(v is None for v in values):  # no thread with a time: no power
            raise _Missing("Power core")
        return sum(v for v in values if v is not None)

    def power_l2() -> float:
        return e.mean("pa8", 0x3E0) * c.nj_of("NJ_EA_L2") / 1e9 / t_mean()

    def power_memory() -> float:
        return e.mean("pa8", 0x3E8) * c.nj_of("NJ_EA_MEMORY") / 1e9 / t_mean()

    formulas: dict[str, Callable[[], Value]] = dict(_ratio_metrics(e, c))
    formulas.update(
        {
            "Execution time (s)": t_mean,
            "GFLOPS": lambda: (e("pa1", 0x80C0) * c.vl_factor + e("pa1", 0x80C1)) / 1e9 / t_mean(),
            "Floating-point operation peak ratio": mean_of("Floating-point operation peak ratio"),
            "Memory throughput (GB/s)": mem_gb_s,
            "Memory throughput peak ratio": lambda: mem_gb_s() / c.mem_bw,
            "IPC": mean_of("IPC"),
            "GIPS": lambda: e("pa1", 0x121) / 1e9 / t_mean(),
            "CA: Total (s)": t_mean,
            "L2 busy rate": lambda: e("pa3", 0x330) / 2 / e("pa3", "PMCCNTR"),
            "Memory busy rate": lambda: mem_gb_s() / c.mem_bw,
            "Power core (W)": power_core,
            "Power L2 (W)": power_l2,
            "Power memory (W)": power_memory,
            "Power total (W)": lambda: power_core() + power_l2() + power_memory(),
        }
    )
    for name in CA_ITEMS:
        formulas[name] = mean_of(name)
    return formulas


def compute_report(m: Measurement, profile: Profile | None = None) -> Report:
    """The report's metrics per thread (keys ``"0"``, ``"1"``, ...) and for the CMG total.

    ``profile`` gives the energy factors; default: the a64fx profile for the measurement's part.
    """
    c = _consts(m, profile if profile is not None else report_profile(m))
    sources: dict[str, set[str]] = {}
    threads: dict[str, dict[str, Value]] = {}
    for thread in m.threads:
        inputs = _Inputs(m, (thread,))
        values = _evaluate(_thread_formulas(inputs, c, thread not in m.untimed), inputs, sources)
        threads[str(thread)] = {name: values[name] for name in THREAD_METRICS}
    timed = {str(t): threads[str(t)] for t in m.timed_threads}
    total_inputs = _Inputs(m, m.threads)
    total_values = _evaluate(_cmg_formulas(total_inputs, c, timed, sources), total_inputs, sources)
    cmg_total = {name: total_values[name] for name in CMG_METRICS}
    ordered = {name: tuple(sorted(sources.get(name, set()), key=_set_order)) for name in CMG_METRICS}
    return Report(threads=threads, cmg_total=cmg_total, sources=ordered, cpu_frequency_hz=c.efctfrq)


def _set_order(name: str) -> tuple[int, str]:
    digits = name[2:] if name.startswith("pa") else ""
    return (int(digits), name) if digits.isdigit() else (1 << 30, name)
