"""CPUs and CMGs of this host, read from sysfs/procfs (under :mod:`sectormon.host.roots`, so tests
use fake trees).

On an A64FX the CMG (12 cores sharing one L2 and one memory controller) comes from the NUMA nodes,
because the cache sysfs is empty on some A64FX firmware. Assistant cores (a NUMA node holding a
single CPU, e.g. CPUs 0-1 on Fugaku/FX1000) and memory-only nodes are left out. Elsewhere the L2
sharing domain plays the CMG's role, else the last-level-cache domain, else the whole machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sectormon.errors import DataError, UsageError
from sectormon.host import roots

DOMAINS = ("cmg", "l2", "llc", "single")
MAX_CPU = 65535  # far above any Linux NR_CPUS; stops "0-999999999" from allocating a huge tuple

DOMAIN_MEANING = {
    "cmg": "CMG: 12 A64FX cores sharing one L2 cache and one memory controller (from NUMA nodes)",
    "l2": "L2 domain: CPUs sharing one L2 cache, standing in for an A64FX CMG",
    "llc": "last-level-cache domain: CPUs sharing the largest cache, standing in for an A64FX CMG",
    "single": "whole machine: no NUMA or cache sharing information, so one domain stands in for a CMG",
}

_A64FX_IMPLEMENTER = 0x46
_A64FX_PART = 0x001
A64FX_CMG_CORES = 12  # compute cores of one CMG on every A64FX part (4 CMGs x 12)


class CpuListError(UsageError, ValueError):
    """A malformed CPU list (``--cpus`` or a sysfs ``cpulist`` file)."""


def parse_cpu_list(text: str, *, what: str = "", allow_empty: bool = False) -> tuple[int, ...]:
    """Parse a Linux CPU list such as ``0-3,8,10-11`` into sorted, unique CPU numbers.

    The same syntax as sysfs ``online``/``cpulist`` files and ``taskset -c``, so users can paste one.
    ``what`` (e.g. ``--cpus``) prefixes the error message.
    """
    body = text.strip()
    where = f"{what}: " if what else ""
    fix = "use CPU numbers and ranges like 0-3,8,10-11"
    if not body:
        if allow_empty:
            return ()
        raise CpuListError(f"{where}empty CPU list ({fix})")
    cpus: set[int] = set()
    for part in body.split(","):
        item = part.strip()
        match = re.fullmatch(r"([0-9]+)(?:\s*-\s*([0-9]+))?", item)  # not \d: it matches '２' too
        if match is None:
            raise CpuListError(f"{where}bad CPU list {body!r}: {item!r} is not a CPU number or range ({fix})")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise CpuListError(f"{where}bad CPU list {body!r}: range {item!r} runs backwards ({fix})")
        if last > MAX_CPU:
            raise CpuListError(f"{where}bad CPU list {body!r}: CPU {last} is beyond {MAX_CPU} ({fix})")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The compact form of a CPU set (``0-3,8``): the inverse of :func:`parse_cpu_list`."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True)
class Topology:
    """The CPUs sectormon may bind to and how they group into CMGs (or the domain playing that role).

    ``cpus`` are the online compute CPUs (A64FX assistant cores are in ``excluded`` instead).
    ``cmgs`` maps a CMG id to its online CPUs; ids follow node (or first-CPU) order and stay stable
    when some CPUs are offline. ``variant`` names the A64FX part (``48c``, ``24c-2.6GHz``) when known.
    """

    cpus: tuple[int, ...]
    cmg_of: Mapping[int, int]
    cmgs: Mapping[int, tuple[int, ...]]
    is_a64fx: bool
    model: str
    domain: str
    variant: str = ""
    excluded: tuple[int, ...] = field(default=())

    def cmg_label(self, cmg: int) -> str:
        """A short column label: ``CMG0`` on an A64FX, ``L2#0`` / ``LLC#0`` / ``ALL`` elsewhere."""
        if self.domain == "cmg":
            return f"CMG{cmg}"
        if self.domain == "l2":
            return f"L2#{cmg}"
        if self.domain == "llc":
            return f"LLC#{cmg}"
        return "ALL"

    def domain_meaning(self) -> str:
        """What "CMG" means on this host, in one sentence."""
        return DOMAIN_MEANING[self.domain]

    def cmg_notes(self) -> list[str]:
        """How CPUs map to CMGs when a CMG holds fewer CPUs than a real one (a VM, QEMU, CPUs offline).

        Said rather than guessed around: per-CMG figures then sum only those CPUs.
        """
        if self.domain != "cmg":
            return []
        short = [(cmg, cpus) for cmg, cpus in sorted(self.cmgs.items()) if len(cpus) < A64FX_CMG_CORES]
        if not short:
            return []
        listed = "; ".join(
            f"CMG{cmg} = CPU{'s' if len(cpus) > 1 else ''} {format_cpu_list(cpus)}" for cmg, cpus in short
        )
        return [
            f"{listed}: fewer CPUs than the {A64FX_CMG_CORES} cores of an A64FX CMG (a VM or emulator, or "
            "CPUs offline); each NUMA node with CPUs is taken as one CMG, so per-CMG figures sum these "
            "CPUs only and CMG-wide events are opened once, on the CMG's first CPU"
        ]

    def require_cpus(self, cpus: Sequence[int], *, option: str = "--cpus") -> tuple[int, ...]:
        """Check that every requested CPU is an online compute CPU; a clear error names the bad ones."""
        wanted = tuple(sorted(set(cpus)))
        bad = [c for c in wanted if c not in self.cmg_of]
        if bad:
            extra = (
                f"; assistant cores {format_cpu_list(self.excluded)} are excluded" if self.excluded else ""
            )
            raise UsageError(
                f"{option}: CPU {format_cpu_list(bad)} is not an online compute CPU "
                f"(choose from {format_cpu_list(self.cpus)}{extra})"
            )
        return wanted

    def to_json(self) -> dict[str, Any]:
        """JSON-able form for headers and ``check --json`` (CMG ids become string keys)."""
        return {
            "cpus": list(self.cpus),
            "cmgs": {str(k): list(v) for k, v in sorted(self.cmgs.items())},
            "is_a64fx": self.is_a64fx,
            "model": self.model,
            "domain": self.domain,
            "variant": self.variant,
            "excluded": list(self.excluded),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "<recording>") -> Topology:
        """Rebuild a topology stored by :meth:`to_json` (replay of a recording)."""
        try:
            cmgs = {int(k): tuple(int(c) for c in v) for k, v in dict(data["cmgs"]).items()}
            domain = str(data["domain"])
            if domain not in DOMAINS:
                raise ValueError(f"unknown domain {domain!r}")
            return cls(
                cpus=tuple(int(c) for c in data["cpus"]),
                cmg_of={c: k for k, cpus in cmgs.items() for c in cpus},
                cmgs=cmgs,
                is_a64fx=bool(data["is_a64fx"]),
                model=str(data["model"]),
                domain=domain,
                variant=str(data.get("variant", "")),
                excluded=tuple(int(c) for c in data.get("excluded", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(
                source, None, f"bad topology in header: {exc}", "re-record with this version"
            ) from exc


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _read_list(path: Path) -> tuple[int, ...] | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return parse_cpu_list(text, what=str(path), allow_empty=True)
    except CpuListError as exc:
        raise DataError(str(path), 1, f"bad CPU list {text.strip()!r}", "expected e.g. 0-3,8") from exc


def cpuinfo_fields() -> dict[str, str]:
    """The first value of each ``key : value`` line of /proc/cpuinfo (empty when unreadable)."""
    text = _read(Path(roots.procfs("cpuinfo"))) or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def _int_or_none(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def cpu_model(fields: Mapping[str, str]) -> tuple[str, bool]:
    """(human-readable CPU model, is it an A64FX) from cpuinfo fields."""
    implementer = _int_or_none(fields.get("CPU implementer"))
    part = _int_or_none(fields.get("CPU part"))
    if implementer == _A64FX_IMPLEMENTER and part == _A64FX_PART:
        return "Fujitsu A64FX", True
    if fields.get("model name"):
        return fields["model name"], False
    if implementer is not None:
        part_text = f"0x{part:03x}" if part is not None else "?"
        return f"Arm CPU (implementer 0x{implementer:02x}, part {part_text})", False
    for key in ("Hardware", "cpu", "Processor"):
        if fields.get(key):
            return fields[key], False
    return "unknown", False


def _online_cpus() -> tuple[int, ...]:
    cpu_dir = Path(roots.sysfs("devices/system/cpu"))
    online = _read_list(cpu_dir / "online")
    if online:
        return online
    found = (
        sorted(int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*") if p.name[3:].isdigit())
        if cpu_dir.is_dir()
        else []
    )
    if not found:
        raise DataError(str(cpu_dir / "online"), None, "cannot find the online CPUs", "is sysfs mounted?")
    return tuple(found)


def _numa_nodes() -> list[tuple[int, tuple[int, ...]]]:
    """(node id, all CPUs of the node) in node order; memory-only nodes have no CPUs."""
    node_dir = Path(roots.sysfs("devices/system/node"))
    if not node_dir.is_dir():
        return []
    nodes = []
    for path in node_dir.glob("node[0-9]*"):
        if not path.name[4:].isdigit():
            continue
        cpus = _read_list(path / "cpulist")
        if cpus is not None:
            nodes.append((int(path.name[4:]), cpus))
    return sorted(nodes)


def _a64fx_cmgs(
    nodes: list[tuple[int, tuple[int, ...]]], online: Sequence[int]
) -> tuple[dict[int, tuple[int, ...]], tuple[int, ...], int]:
    """CMGs from NUMA nodes: (cmg -> online CPUs, excluded CPUs, compute CPUs on the die)."""
    with_cpus = [(n, cpus) for n, cpus in nodes if cpus]
    compute = [(n, cpus) for n, cpus in with_cpus if len(cpus) > 1] or with_cpus
    assistant = sorted(c for n, cpus in with_cpus if (n, cpus) not in compute for c in cpus)
    online_set = set(online)
    cmgs: dict[int, tuple[int, ...]] = {}
    for cmg, (_, cpus) in enumerate(compute):
        alive = tuple(c for c in cpus if c in online_set)
        if alive:
            cmgs[cmg] = alive
    excluded = tuple(c for c in assistant if c in online_set)
    return cmgs, excluded, sum(len(cpus) for _, cpus in compute)


def _cache_domains(online: Sequence[int]) -> tuple[str, dict[int, tuple[int, ...]]] | None:
    """("l2" | "llc", domains) from cpuN/cache/index*/, or None when the information is missing."""
    online_set = set(online)
    per_cpu: dict[int, dict[int, frozenset[int]]] = {}
    for cpu in online:
        levels: dict[int, frozenset[int]] = {}
        cache_dir = Path(roots.sysfs(f"devices/system/cpu/cpu{cpu}/cache"))
        for index in sorted(cache_dir.glob("index[0-9]*")) if cache_dir.is_dir() else []:
            level = _int_or_none((_read(index / "level") or "").strip())
            kind = (_read(index / "type") or "").strip()
            shared = _read_list(index / "shared_cpu_list")
            if level is None or kind == "Instruction" or not shared:
                continue
            levels[level] = frozenset(c for c in shared if c in online_set) | {cpu}
        per_cpu[cpu] = levels

    def domains_at(level: int) -> dict[int, tuple[int, ...]] | None:
        sets = {cpu: levels.get(level) for cpu, levels in per_cpu.items()}
        if any(s is None for s in sets.values()):
            return None
        groups = sorted({s for s in sets.values() if s is not None}, key=min)
        seen: set[int] = set()
        for g in groups:
            if seen & g:  # overlapping sharing lists: the sysfs is inconsistent, do not guess
                return None
            seen |= g
        return {i: tuple(sorted(g)) for i, g in enumerate(groups)}

    l2 = domains_at(2)
    if l2 is not None:
        return "l2", l2
    common = set.intersection(*(set(levels) for levels in per_cpu.values())) if per_cpu else set()
    if common:
        llc = domains_at(max(common))
        if llc is not None:
            return "llc", llc
    return None


def _max_freq_ghz(cpu: int) -> float | None:
    khz = _int_or_none(
        (_read(Path(roots.sysfs(f"devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"))) or "").strip()
    )
    return khz / 1e6 if khz else None


def _a64fx_variant(compute_cpus: int, freq_ghz: float | None) -> str:
    """The part variant that selects the energy factors (facts sheet: 48-core vs 24-core 2.6 GHz)."""
    if compute_cpus == 48:
        return "48c"
    if compute_cpus == 24:
        # The only 24-core A64FX part runs at 2.6 GHz (facts sheet); cpufreq, when present, confirms it.
        if freq_ghz is None or abs(freq_ghz - 2.6) < 0.05:
            return "24c-2.6GHz"
        return "24c"
    return ""


def load_topology() -> Topology:
    """Read the host's CPUs and CMGs (NUMA first on A64FX, cache sysfs as the fallback)."""
    online = _online_cpus()
    model, is_a64fx = cpu_model(cpuinfo_fields())
    excluded: tuple[int, ...] = ()
    variant = ""
    cmgs: dict[int, tuple[int, ...]] = {}
    domain = "single"
    if is_a64fx:
        cmgs, excluded, compute = _a64fx_cmgs(_numa_nodes(), online)
        if cmgs:
            domain = "cmg"
            first = min(c for cpus in cmgs.values() for c in cpus)
            variant = _a64fx_variant(compute, _max_freq_ghz(first))
        else:
            excluded = ()
    if not cmgs:
        found = _cache_domains(online)
        if found is not None:
            kind, cmgs = found
            # On an A64FX the L2 domain is the CMG itself.
            domain = "cmg" if is_a64fx and kind == "l2" else kind
        else:
            cmgs, domain = {0: tuple(online)}, "single"
    cpus = tuple(sorted(c for group in cmgs.values() for c in group))
    cmg_of = {c: cmg for cmg, group in cmgs.items() for c in group}
    return Topology(
        cpus=cpus,
        cmg_of=cmg_of,
        cmgs=cmgs,
        is_a64fx=is_a64fx,
        model=model,
        domain=domain,
        variant=variant,
        excluded=excluded,
    )


def online_cpus() -> tuple[int, ...]:
    """The CPUs online now, or, when sysfs does not say, those this process may run on (a task's
    per-CPU inherited sampling events must cover every CPU it may move to)."""
    try:
        online = _read_list(Path(roots.sysfs("devices/system/cpu/online")))
    except DataError:
        online = None
    return online or tuple(sorted(os.sched_getaffinity(0)))


def data_cache_line_size() -> int:
    """The L1 data cache's line size from sysfs (64 when sysfs does not say)."""
    base = Path(roots.sysfs("devices/system/cpu/cpu0/cache"))
    try:
        for index in sorted(base.glob("index*")):
            if (index / "type").read_text().strip() in ("Data", "Unified"):
                size = int((index / "coherency_line_size").read_text())
                if size > 0 and not size & (size - 1):
                    return size
    except (OSError, ValueError):
        pass
    return 64
