"""Parameters of the simulated A64FX: geometry, sector maxima, timing and energy (a MODEL, not measurements).

Every number the simulator uses lives here, frozen, so ``describe()`` can report the whole model and
two runs can be compared knowing they used the same one. Option strings (``--l1-sectors 3,1,0,0``)
are parsed here too, so the command and the tests share one validation with one error style.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sectormon.errors import UsageError
from sectormon.files.text import is_ascii_digits

FREQ_HZ = 2.2e9
LINE_BYTES = 256
LINE_SHIFT = 8
L1_SETS = 64
L1_WAYS = 4
L2_SETS = 2048
L2_WAYS_TOTAL = 16
L2_WAYS_DEFAULT = 14
SECTORS = 4
CMGS = 4
CPUS_PER_CMG = 12
MAX_THREADS = CMGS * CPUS_PER_CMG
# The simulator's clock ticks TICKS times per cycle, so fractional issue costs stay exact integers.
TICKS = 4


def ticks_to_ns(ticks: int) -> int:
    """Engine ticks as simulated nanoseconds (the unit of perf's ``time_enabled``)."""
    return int(ticks / TICKS / FREQ_HZ * 1e9)


@dataclass(frozen=True, slots=True)
class Timing:
    """Latencies (cycles from issue to data) and the out-of-order window that overlaps misses.

    ``window`` is how many accesses the core may issue past the oldest incomplete miss (the ROB,
    counted in memory accesses); ``l1_mib`` is the number of outstanding L1D demand misses.
    ``mispredict`` is the frontend penalty of a loop exit (the only frontend stall the model has).
    """

    l1_hit: int = 5
    l2_hit: int = 37
    memory: int = 260
    window: int = 32
    l1_mib: int = 8
    mispredict: int = 10


@dataclass(frozen=True, slots=True)
class Energy:
    """Energy model in nJ: per cycle (static + clock) and per event, turned into EA_* counts.

    EA_CORE counts 8 nJ, EA_L2 32 nJ and EA_MEMORY 256 nJ (48-core 2.2 GHz part), so a count is
    ``floor(energy / nJ per count)``. Static parts: ~1.3 W per core, ~0.7 W L2 and ~1.3 W memory per CMG.
    """

    core_per_cycle: float = 0.6
    core_per_inst: float = 0.15
    core_per_l1d_access: float = 0.1
    core_per_l1d_refill: float = 0.5
    l2_per_cycle: float = 0.3
    l2_per_access: float = 1.0
    l2_per_refill: float = 1.0
    memory_per_cycle: float = 0.6
    memory_per_line: float = 8.0
    nj_ea_core: float = 8.0
    nj_ea_l2: float = 32.0
    nj_ea_memory: float = 256.0


@dataclass(frozen=True, slots=True)
class Prefetch:
    """The stream prefetcher: after two demand misses to consecutive lines it keeps ``l1_distance``
    lines ahead in L1D and ``l2_distance`` lines ahead in L2, one new line per line consumed."""

    enabled: bool = True
    l1_distance: int = 6
    l2_distance: int = 48
    table: int = 32


@dataclass(frozen=True, slots=True)
class SectorConfig:
    """Maximum ways per sector, and whether the restriction applies (``enabled``).

    ``l1`` has 4 maxima (sectors 0-3 of every core's L1D). ``l2`` has 4 maxima: SET0 = sectors 0/1,
    SET1 = sectors 2/3 of every CMG's L2; ``l2_sets`` is the set each thread uses (round robin).
    """

    enabled: bool = True
    l1: tuple[int, int, int, int] = (3, 1, 0, 0)
    l2: tuple[int, int, int, int] = (12, 2, 7, 7)
    l2_sets: tuple[int, ...] = (0,)
    tag_override: bool = True

    def l2_set_of(self, thread: int) -> int:
        return self.l2_sets[thread % len(self.l2_sets)]

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "l1_max_ways": list(self.l1),
            "l2_set0_max_ways": list(self.l2[:2]),
            "l2_set1_max_ways": list(self.l2[2:]),
            "l2_set_of_threads": list(self.l2_sets),
            "tag_override": self.tag_override,
        }


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """The whole machine model."""

    l2_ways: int = L2_WAYS_DEFAULT
    timing: Timing = field(default_factory=Timing)
    energy: Energy = field(default_factory=Energy)
    prefetch: Prefetch = field(default_factory=Prefetch)
    sectors: SectorConfig = field(default_factory=SectorConfig)
    quantum: int = 1000

    def with_sectors(self, sectors: SectorConfig) -> ModelConfig:
        return replace(self, sectors=sectors)

    def to_json(self) -> dict[str, Any]:
        return {
            "frequency_hz": FREQ_HZ,
            "l1d": {
                "size_bytes": L1_SETS * L1_WAYS * LINE_BYTES,
                "sets": L1_SETS,
                "ways": L1_WAYS,
                "line_bytes": LINE_BYTES,
                "per": "core",
            },
            "l2": {
                "size_bytes": L2_SETS * L2_WAYS_TOTAL * LINE_BYTES,
                "sets": L2_SETS,
                "ways": L2_WAYS_TOTAL,
                "usable_ways": self.l2_ways,
                "line_bytes": LINE_BYTES,
                "per": "CMG",
            },
            "policy": "LRU, write-back, write-allocate, non-inclusive (L1D misses load from L2)",
            "topology": {
                "cmgs": CMGS,
                "cpus_per_cmg": CPUS_PER_CMG,
                "numbering": "FX700: CPU n in CMG n // 12",
            },
            "timing_cycles": asdict(self.timing),
            "energy_nj": asdict(self.energy),
            "prefetch": asdict(self.prefetch),
            "interleave_quantum_cycles": self.quantum,
            "note": "a model: latencies, overlap and energies are documented assumptions, not measurements",
        }


def parse_ways(text: str, option: str, count: tuple[int, ...], limit: int) -> tuple[int, ...]:
    """Parse ``"3,1,0,0"``: one maximum per sector, each 0..limit."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in count or not all(is_ascii_digits(p) and len(p) <= 2 for p in parts):
        want = " or ".join(str(c) for c in count)
        raise UsageError(
            f"{option} {text!r}: expected {want} comma-separated way counts, e.g. {option} "
            + ",".join(["2"] * count[0])
        )
    values = tuple(int(p) for p in parts)
    bad = [v for v in values if v > limit]
    if bad:
        raise UsageError(f"{option} {text!r}: a sector can have at most {limit} ways (got {bad[0]})")
    return values


def parse_l2_sets(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p not in ("0", "1") for p in parts):
        raise UsageError(
            f"--l2-set {text!r}: expected 0 or 1 (or a list like 0,1 applied round robin to threads)"
        )
    return tuple(int(p) for p in parts)


SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
# More digits than any maximum has (they are below 2**64): longer
# numbers are refused before int() sees them, so no 5,000-digit value reaches Python's
# int-string limit (a ValueError traceback) or the compiled core's int64 (an OverflowError).
SIZE_DIGITS = 20


def parse_size(text: str, option: str, maximum: int) -> int:
    """``48K``, ``64M``, ``1G`` or a plain number (bytes, or a count for count-like keys), in
    ASCII digits; over ``maximum`` is a :class:`UsageError` stating the maximum."""
    raw = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = raw[-1:] if raw[-1:] in SIZE_UNITS and raw[-1:] != "" and not raw[-1:].isdigit() else ""
    number = raw[: len(raw) - len(unit)] if unit else raw
    shown = repr(text[:40] + ("..." if len(text) > 40 else ""))
    if not is_ascii_digits(number):
        raise UsageError(f"{option}: {shown} is not a size; use a number with an optional K, M or G suffix")
    value = int(number) * SIZE_UNITS[unit] if len(number.lstrip("0")) <= SIZE_DIGITS else None
    if value is None or value > maximum:
        raise UsageError(f"{option}: {shown} is too large (at most {format_size(maximum)})")
    return value


def format_size(value: int) -> str:
    """``value`` as the shortest exact K/M/G form (``16M``, ``4096``)."""
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= unit and value % unit == 0:
            return f"{value // unit:,}{suffix}"
    return f"{value:,}"
