"""Reading the session header into what the screens show.

The header's fields are typed and checked (:mod:`sectormon.io.header_codec`), but the documents it
carries (the recorded profile, the sector configuration, the target's facts) come from live
sessions, recordings written by older versions and fapp imports, so every reader of their insides
here is tolerant: a missing or oddly shaped entry gives an empty answer, never an exception.
Pure functions, no Textual.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sectormon.data.header import Header, json_object
from sectormon.host.topology import format_cpu_list, parse_cpu_list
from sectormon.profiles.model import MetricDef


@dataclass(frozen=True, slots=True)
class ProfileView:
    """The header's profile, as the UI needs it: metric order, units, formulas, event facts."""

    name: str
    metrics: Mapping[str, MetricDef] = field(default_factory=dict)
    events: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def unit(self, metric: str) -> str:
        info = self.metrics.get(metric)
        return info.unit if info else ""

    def info(self, metric: str) -> MetricDef:
        """What the profile says about ``metric`` (its value always comes from the frame)."""
        return self.metrics.get(metric) or MetricDef(metric, "")


def _named_items(value: Any) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """``{name: {...}}`` or ``[{"name": ..., ...}]`` as (name, fields) pairs."""
    if isinstance(value, Mapping):
        for name, fields in value.items():
            yield str(name), json_object(fields)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, Mapping) and "name" in item:
                yield str(item["name"]), item


def profile_view(header: Header) -> ProfileView:
    """The profile recorded in the header (``name``, ``metrics``, ``events``)."""
    profile = header.profile
    metrics: dict[str, MetricDef] = {}
    for name, fields in _named_items(profile.get("metrics")):
        metrics[name] = MetricDef(
            name=name,
            unit=str(fields.get("unit", "") or ""),
            better=str(fields.get("better", "none") or "none"),
            formula=str(fields.get("formula", "") or ""),
            description=str(fields.get("description", fields.get("desc", "")) or ""),
            scope=str(fields.get("scope", "any") or "any"),
        )
    events = {name: fields for name, fields in _named_items(profile.get("events"))}
    return ProfileView(name=str(profile.get("name", "") or ""), metrics=metrics, events=events)


def _cpu_list(value: Any) -> list[int]:
    if isinstance(value, str):
        try:
            return list(parse_cpu_list(value))
        except ValueError:
            return []
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value if isinstance(v, int) or (isinstance(v, str) and v.isdigit())]
    return []


def cmg_of_cores(topology: Mapping[str, Any]) -> dict[str, str]:
    """Map CPU number (as a string) to CMG id, from whichever shape the topology record has.

    Accepted: ``cmgs: {id: [cpus]}``, ``cmgs: [{"id", "cpus"}]``, ``cpus: [{"cpu", "cmg"}]`` and
    ``cpus: {cpu: {"cmg"}}``.
    """
    result: dict[str, str] = {}
    cmgs = topology.get("cmgs")
    if isinstance(cmgs, Mapping):
        for cmg, cpus in cmgs.items():
            members = cpus.get("cpus") if isinstance(cpus, Mapping) else cpus
            for cpu in _cpu_list(members):
                result[str(cpu)] = str(cmg)
    elif isinstance(cmgs, (list, tuple)):
        for index, item in enumerate(cmgs):
            if isinstance(item, Mapping):
                cmg = item.get("id", item.get("cmg", index))
                for cpu in _cpu_list(item.get("cpus")):
                    result[str(cpu)] = str(cmg)
            else:
                for cpu in _cpu_list(item):
                    result[str(cpu)] = str(index)
    cpus = topology.get("cpus")
    if isinstance(cpus, Mapping):
        for cpu, fields in cpus.items():
            if isinstance(fields, Mapping) and fields.get("cmg") is not None:
                result.setdefault(str(cpu), str(fields["cmg"]))
    elif isinstance(cpus, (list, tuple)):
        for item in cpus:
            if isinstance(item, Mapping) and item.get("cmg") is not None and item.get("cpu") is not None:
                result.setdefault(str(item["cpu"]), str(item["cmg"]))
    return result


def parse_core_filter(text: str, cmg_map: Mapping[str, str]) -> frozenset[str] | None:
    """The cores a filter string selects; ``None`` (no filter) for an empty string.

    Syntax: CPU numbers and ranges (``12-23,40``), ``cmgN`` for a CMG's cores, ``unbound``;
    comma separated, combined. Raises ValueError with a one-line explanation.
    """
    selected: set[str] = set()
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        return None
    for part in parts:
        low = part.lower()
        if low == "unbound":
            selected.add("unbound")
        elif low.startswith("cmg"):
            cmg = low[3:].strip().lstrip(":")
            if not cmg.isdigit():
                raise ValueError(f"{part!r}: write cmgN, e.g. cmg1")
            if not cmg_map:
                raise ValueError("the session has no CMG topology; filter by CPU numbers instead")
            members = {cpu for cpu, owner in cmg_map.items() if owner == cmg}
            if not members:
                raise ValueError(f"{part!r}: no such CMG")
            selected |= members
        else:
            selected |= {str(cpu) for cpu in parse_cpu_list(part)}
    return frozenset(selected)


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if parts and all(p.isdigit() for p in parts):
            return [int(p) for p in parts]
        return None
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        return list(value)
    return None


_WAY_KEYS = ("l2_sector_ways", "l2_ways", "L2_sector_ways", "l2")
_L1_WAY_KEYS = ("l1_sector_ways", "l1_max_ways", "l1_ways", "L1_sector_ways", "l1")
_SET_KEYS = (("l2_set0_max_ways", "SET0", 0), ("l2_set1_max_ways", "SET1", 2))


def _set_ways(config: Mapping[str, Any]) -> str:
    """The simulator's two L2 sector sets: ``SET0 sec0/sec1 = 12/2, SET1 sec2/sec3 = 7/7 ways``."""
    parts: list[str] = []
    for key, name, first in _SET_KEYS:
        ways = _int_list(config.get(key))
        if ways:
            secs = "/".join(f"sec{first + i}" for i in range(len(ways)))
            parts.append(f"{name} {secs} = {'/'.join(str(w) for w in ways)}")
    return ", ".join(parts) + " ways" if parts else ""


def sector_ways(sector_config: Mapping[str, Any], cmgs: Iterable[str]) -> dict[str, str]:
    """Per CMG, the configured L2 sector ways as text (``sec0/sec1 = 10/4``), when known.

    Read from the simulator's config (``cmgs: {id: {l2_sector_ways}}`` or a top-level
    ``l2_sector_ways``) or the Fujitsu runtime's ``FLIB_L2_SECTOR_NWAYS_INIT=n0,n1`` (which the
    process applies on every CMG it runs on).
    """
    result: dict[str, str] = {}
    per_cmg: Mapping[Any, Any] = json_object(sector_config.get("cmgs"))  # a live config keys CMGs by int
    common: list[int] | None = None
    for key in _WAY_KEYS:
        common = _int_list(sector_config.get(key))
        if common:
            break
    if common is None:
        common = _int_list(sector_config.get("FLIB_L2_SECTOR_NWAYS_INIT"))
    enabled = str(sector_config.get("FLIB_SCCR_CNTL", sector_config.get("enabled", ""))).upper()
    common_sets = _set_ways(sector_config)
    for cmg in cmgs:
        ways: list[int] | None = None
        own = json_object(per_cmg.get(cmg, per_cmg.get(int(cmg)) if cmg.isdigit() else None))
        for key in _WAY_KEYS:
            ways = _int_list(own.get(key))
            if ways:
                break
        ways = ways or common
        sets = _set_ways(own) or common_sets
        text = ""
        if ways:
            names = "/".join(f"sec{i}" for i in range(len(ways)))
            text = f"{names} = {'/'.join(str(w) for w in ways)} ways"
        elif sets:
            text = sets
        if text:
            if enabled == "FALSE":
                text += " (sector cache off)"
            result[cmg] = text
    return result


def l1_sector_ways(sector_config: Mapping[str, Any]) -> str:
    for key in _L1_WAY_KEYS:
        ways = _int_list(sector_config.get(key))
        if ways:
            return "/".join(str(w) for w in ways)
    return ""


FLIB_SHORT = {
    "FLIB_SCCR_CNTL": "SCCR",
    "FLIB_L1_SCCR_CNTL": "L1 SCCR",
    "FLIB_L2_SECTOR_NWAYS_INIT": "L2 ways",
    "FLIB_L1_SECTOR_NWAYS_INIT": "L1 ways",
    "l1_max_ways": "L1 ways",
    "l2_set0_max_ways": "L2 set0 ways",
    "l2_set1_max_ways": "L2 set1 ways",
    "l2_sector_ways": "L2 ways",
    "l1_sector_ways": "L1 ways",
}
SECTOR_SKIP = frozenset({"cmgs", "l2_set_of_threads"})


def short_sector_config(sector_config: Mapping[str, Any]) -> str:
    """The sector cache's state in a word or two, for a narrow header: ``preset on``,
    ``SCCR=TRUE``, ``on``/``off``; else the whole description."""
    if "preset" in sector_config:
        return f"preset {sector_config['preset']}"
    if "FLIB_SCCR_CNTL" in sector_config:
        return f"SCCR={sector_config['FLIB_SCCR_CNTL']}"
    enabled = sector_config.get("enabled")
    if isinstance(enabled, bool):
        return "on" if enabled else "off"
    return describe_sector_config(sector_config)


def describe_sector_config(sector_config: Mapping[str, Any]) -> str:
    """One short line: ``SCCR=TRUE L1 SCCR=TRUE L2 ways=10,4`` or the simulator's settings."""
    if not sector_config:
        return "unknown"
    parts: list[str] = []
    for key, value in sector_config.items():
        if key in SECTOR_SKIP or isinstance(value, Mapping):
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        parts.append(f"{FLIB_SHORT.get(str(key), key)}={value}")
    return " ".join(parts) if parts else "per CMG"


CMDLINE_MAX = 40


def describe_target(
    target: Mapping[str, Any], live_threads: int | None = None, *, short: bool = False
) -> str:
    """``pid 4242 ./stream -n 48 (48 threads, cpus 12-59, pid)``; ``short``: ``pid 4242 stream
    (48 threads)``, for a narrow header (the command's program alone, no CPUs or mode).

    ``live_threads`` (the threads in the latest frame) wins over the header's count, which was
    taken before a launched command had started its threads.
    """
    bits: list[str] = []
    pid = target.get("pid")
    if pid is not None:
        bits.append(f"pid {pid}")
    cmdline = target.get("cmdline")
    if isinstance(cmdline, (list, tuple)):
        cmdline = " ".join(str(c) for c in cmdline)
    if cmdline:
        text = " ".join(str(cmdline).split())  # a newline in `python -c '...'` broke the header in two
        if short:
            text = text.split(" ")[0].rpartition("/")[2]
        bits.append(text if len(text) <= CMDLINE_MAX else text[: CMDLINE_MAX - 1] + "…")
    extra: list[str] = []
    threads = live_threads if live_threads else target.get("threads")
    if threads is not None:
        count = len(threads) if isinstance(threads, (list, tuple)) else threads
        extra.append(f"{count} thread" + ("" if count == 1 else "s"))
    cpus = target.get("cpus")
    if cpus and (not short or not bits):
        extra.append(f"cpus {_compact_cpus(cpus)}")
    mode = target.get("mode")
    if mode and not short:
        extra.append(str(mode))
    if not bits and target.get("kind"):
        bits.append(str(target["kind"]))
    text = " ".join(bits) if bits else "—"
    if extra:
        text += f" ({', '.join(extra)})"
    return text


def _compact_cpus(cpus: Any) -> str:
    if isinstance(cpus, str):
        return cpus
    values = _cpu_list(cpus)
    return format_cpu_list(values) if values else str(cpus)


def proxy_words(header: Header) -> str:
    """A ``--proxy`` session's stand-ins as its header says them (``proxy 1/CMG: cpus 0,12,24,36``),
    else empty."""
    return header.proxy.described if header.proxy is not None else ""


def describe_source(source: Mapping[str, Any]) -> str:
    """``sim scenario-a`` / ``perf`` / ``replay run.jsonl.gz``: kind plus its most telling detail."""
    kind = str(source.get("kind", "?"))
    for key in ("scenario", "kernel", "workload", "path", "file", "dir", "name"):
        value = source.get(key)
        if isinstance(value, Mapping):
            value = value.get("name") or value.get("path")
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value):
            return f"{kind} {value}"
    return kind
