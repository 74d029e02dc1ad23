"""Event spec strings -> (type, config, config1, config2, config3), as ``perf`` spells them.

Three forms, the ones profiles use: perf's generic names (``cycles``, ``task-clock``, and the
cache events such as ``L1-dcache-load-misses``), raw codes
(``r11`` = PERF_TYPE_RAW with config 0x11) and PMU forms (``armv8_pmuv3_0/event=0x11/``) resolved
through sysfs: ``<root>/bus/event_source/devices/<pmu>/type`` gives the type and ``format/<term>``
(e.g. ``config:0-15``, ``config1:0-7``) says where each term's bits go. The sysfs root is a
parameter so tests run against a fake tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sectormon.perf import abi
from sectormon.perf.errors import BadEventSpec

HARDWARE_EVENTS: dict[str, int] = {
    "cycles": abi.PERF_COUNT_HW_CPU_CYCLES,
    "cpu-cycles": abi.PERF_COUNT_HW_CPU_CYCLES,
    "instructions": abi.PERF_COUNT_HW_INSTRUCTIONS,
    "cache-references": abi.PERF_COUNT_HW_CACHE_REFERENCES,
    "cache-misses": abi.PERF_COUNT_HW_CACHE_MISSES,
    "branches": abi.PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
    "branch-instructions": abi.PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
    "branch-misses": abi.PERF_COUNT_HW_BRANCH_MISSES,
    "bus-cycles": abi.PERF_COUNT_HW_BUS_CYCLES,
    "stalled-cycles-frontend": abi.PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
    "idle-cycles-frontend": abi.PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
    "stalled-cycles-backend": abi.PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
    "idle-cycles-backend": abi.PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
    "ref-cycles": abi.PERF_COUNT_HW_REF_CPU_CYCLES,
}

SOFTWARE_EVENTS: dict[str, int] = {
    "cpu-clock": abi.PERF_COUNT_SW_CPU_CLOCK,
    "task-clock": abi.PERF_COUNT_SW_TASK_CLOCK,
    "page-faults": abi.PERF_COUNT_SW_PAGE_FAULTS,
    "faults": abi.PERF_COUNT_SW_PAGE_FAULTS,
    "context-switches": abi.PERF_COUNT_SW_CONTEXT_SWITCHES,
    "cs": abi.PERF_COUNT_SW_CONTEXT_SWITCHES,
    "cpu-migrations": abi.PERF_COUNT_SW_CPU_MIGRATIONS,
    "migrations": abi.PERF_COUNT_SW_CPU_MIGRATIONS,
    "minor-faults": abi.PERF_COUNT_SW_PAGE_FAULTS_MIN,
    "major-faults": abi.PERF_COUNT_SW_PAGE_FAULTS_MAJ,
    "alignment-faults": abi.PERF_COUNT_SW_ALIGNMENT_FAULTS,
    "emulation-faults": abi.PERF_COUNT_SW_EMULATION_FAULTS,
    "dummy": abi.PERF_COUNT_SW_DUMMY,
}

# perf's generic cache events: <cache>-<op>-<result>, config = cache | op << 8 | result << 16.
_CACHES = {"l1-dcache": 0, "l1-icache": 1, "llc": 2, "dtlb": 3, "itlb": 4, "branch": 5, "node": 6}
_CACHE_OPS = {"load": 0, "store": 1, "prefetch": 2}
_CACHE_ACCESS_NAMES = {"load": "loads", "store": "stores", "prefetch": "prefetches"}
HW_CACHE_EVENTS: dict[str, int] = {}
for _cache, _cache_id in _CACHES.items():
    for _op, _op_id in _CACHE_OPS.items():
        HW_CACHE_EVENTS[f"{_cache}-{_CACHE_ACCESS_NAMES[_op]}"] = _cache_id | _op_id << 8
        HW_CACHE_EVENTS[f"{_cache}-{_op}-misses"] = _cache_id | _op_id << 8 | 1 << 16

# Software events the kernel raises from its own code (the scheduler), with kernel-mode registers:
# exclude_kernel filters every one of them out, so user-only counting always reads 0 for these.
# Measured (``perf stat -e cs:u,migrations:u`` reads 0 while ``cs``/``migrations`` count).
_KERNEL_SIDE = {
    (abi.PERF_TYPE_SOFTWARE, abi.PERF_COUNT_SW_CONTEXT_SWITCHES),
    (abi.PERF_TYPE_SOFTWARE, abi.PERF_COUNT_SW_CPU_MIGRATIONS),
    (abi.PERF_TYPE_SOFTWARE, 11),  # PERF_COUNT_SW_CGROUP_SWITCHES
}

CONFIG_FIELDS = ("config", "config1", "config2", "config3")

_RAW = re.compile(r"r([0-9a-fA-F]+)")
_PMU = re.compile(r"([A-Za-z0-9_.:-]+)/(.*)/")
_FORMAT = re.compile(r"(config[123]?):((?:\d+(?:-\d+)?)(?:,\d+(?:-\d+)?)*)")
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class EventSpec:
    """A resolved event: what goes into ``perf_event_attr``. ``spec`` is the string it came from."""

    spec: str
    type: int
    config: int
    config1: int = 0
    config2: int = 0
    config3: int = 0


def _bad(spec: str, problem: str, fix: str) -> BadEventSpec:
    return BadEventSpec(f"event spec '{spec}': {problem} ({fix})", event=spec)


def parse_format(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``config:0-7,32-35`` -> ("config", ((0, 7), (32, 35))); bits are filled low range first."""
    m = _FORMAT.fullmatch(text.strip())
    if not m:
        raise ValueError(f"unrecognised format {text.strip()!r}")
    ranges = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        lo_i, hi_i = int(lo), int(hi or lo)
        if lo_i > hi_i or hi_i > 63:
            raise ValueError(f"bad bit range {part!r}")
        ranges.append((lo_i, hi_i))
    return m.group(1), tuple(ranges)


def place_bits(value: int, ranges: tuple[tuple[int, int], ...]) -> int:
    """Scatter ``value``'s low bits into ``ranges``; ValueError if it does not fit."""
    out = 0
    shift = 0
    for lo, hi in ranges:
        width = hi - lo + 1
        out |= ((value >> shift) & ((1 << width) - 1)) << lo
        shift += width
    if value >> shift:
        raise ValueError(f"value {value:#x} does not fit in {shift} bits")
    return out


def _int(text: str) -> int:
    text = text.strip()
    return int(text, 16) if text.lower().startswith("0x") else int(text, 10)


def _pmu_dir(sysfs_root: str | Path, pmu: str) -> Path:
    return Path(sysfs_root) / "bus/event_source/devices" / pmu


def _available_pmus(sysfs_root: str | Path) -> str:
    base = Path(sysfs_root) / "bus/event_source/devices"
    try:
        names = sorted(p.name for p in base.iterdir())
    except OSError:
        return "none found"
    return ", ".join(names) or "none found"


def _parse_pmu(spec: str, pmu: str, body: str, sysfs_root: str | Path) -> EventSpec:
    pdir = _pmu_dir(sysfs_root, pmu)
    try:
        type_ = int((pdir / "type").read_text().strip())
    except FileNotFoundError:
        raise _bad(spec, f"no PMU named '{pmu}'", f"PMUs here: {_available_pmus(sysfs_root)}") from None
    except (OSError, ValueError) as exc:
        raise _bad(spec, f"cannot read {pdir / 'type'}: {exc}", "check the sysfs tree") from None
    fields = dict.fromkeys(CONFIG_FIELDS, 0)
    terms = [t.strip() for t in body.split(",") if t.strip()]
    if not terms:
        raise _bad(spec, "no terms between the slashes", f"write e.g. '{pmu}/event=0x11/'")
    expanded: list[str] = []
    for term in terms:
        if "=" not in term and (pdir / "events" / term).is_file():
            # A named alias (``msr/tsc/``): sysfs holds its terms.
            alias = (pdir / "events" / term).read_text().strip()
            expanded.extend(t.strip() for t in alias.split(",") if t.strip())
        else:
            expanded.append(term)
    for term in expanded:
        key, eq, raw_value = term.partition("=")
        key = key.strip()
        try:
            value = _int(raw_value) if eq else 1
        except ValueError:
            raise _bad(spec, f"term '{term}' has a non-numeric value", "use decimal or 0x-hex") from None
        if value < 0:
            raise _bad(spec, f"term '{term}' is negative", "use a value >= 0")
        if key in CONFIG_FIELDS:
            if value > _MASK64:
                raise _bad(spec, f"term '{term}' exceeds 64 bits", "use a smaller value")
            fields[key] = value
            continue
        fmt_path = pdir / "format" / key
        try:
            fmt_text = fmt_path.read_text()
        except OSError:
            try:
                known = ", ".join(sorted(p.name for p in (pdir / "format").iterdir()))
            except OSError:
                known = "none"
            raise _bad(spec, f"PMU '{pmu}' has no term '{key}'", f"terms of {pmu}: {known}") from None
        try:
            field, ranges = parse_format(fmt_text)
            fields[field] |= place_bits(value, ranges)
        except ValueError as exc:
            raise _bad(spec, f"term '{term}': {exc}", f"format of {key} is '{fmt_text.strip()}'") from None
    return EventSpec(spec, type_, fields["config"], fields["config1"], fields["config2"], fields["config3"])


def parse_event(spec: str, *, sysfs_root: str | Path = "/sys") -> EventSpec:
    """Resolve one event spec string, or raise :class:`BadEventSpec` naming the spec and the problem."""
    text = spec.strip()
    if not text:
        raise _bad(spec, "empty", "give a perf event name, a raw code like r11, or pmu/event=0x11/")
    low = text.lower()
    if low in HARDWARE_EVENTS:
        return EventSpec(text, abi.PERF_TYPE_HARDWARE, HARDWARE_EVENTS[low])
    if low in SOFTWARE_EVENTS:
        return EventSpec(text, abi.PERF_TYPE_SOFTWARE, SOFTWARE_EVENTS[low])
    if low in HW_CACHE_EVENTS:
        return EventSpec(text, abi.PERF_TYPE_HW_CACHE, HW_CACHE_EVENTS[low])
    m = _RAW.fullmatch(text)
    if m:
        code = int(m.group(1), 16)
        if code > _MASK64:
            raise _bad(spec, "raw code exceeds 64 bits", "raw codes are hex, e.g. r11 or r0308")
        return EventSpec(text, abi.PERF_TYPE_RAW, code)
    m = _PMU.fullmatch(text)
    if m:
        return _parse_pmu(spec, m.group(1), m.group(2), sysfs_root)
    if "/" in text:
        raise _bad(spec, "PMU form must be 'pmu/term=value,.../'", "check the slashes")
    if low.startswith("r"):
        raise _bad(spec, "raw code is not hexadecimal", "write raw codes as r<hex>, e.g. r11 or r0308")
    raise _bad(
        spec,
        "unknown event name",
        "use a perf generic name (cycles, instructions, task-clock, page-faults, "
        "L1-dcache-load-misses, ...), "
        "a raw code like r11, or pmu/event=0x11/",
    )


def counts_only_in_kernel(spec: EventSpec) -> bool:
    """True for events that user-only counting (``exclude_kernel``) can never see."""
    return (spec.type, spec.config) in _KERNEL_SIDE
