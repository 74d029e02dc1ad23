"""OpenMetrics names for a profile's metrics: ``sectormon_<metric>_<unit>`` in base units.

OpenMetrics asks for a unit suffix in base units (seconds, joules, watts, ratio), so a metric in
nJ is exported in joules (scaled by 1e-9), and a name already ending in its unit symbol does not
repeat it (``power_total_W`` is ``sectormon_power_total_watts``). Names are lower case, as
Prometheus names are by convention.

The families sectormon serves itself (:data:`BUILTIN`) are reserved: a profile metric named
``overhead``, ``info`` or ``frames`` would export a second family of one of their names, which is
invalid OpenMetrics (a strict parser rejects the whole scrape: "Clashing name") and mixes the two
families' series, so such a metric is refused with one line before the endpoint starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sectormon.errors import UsageError

PREFIX = "sectormon"

UNITS: Mapping[str, tuple[str, float]] = {
    # profile unit -> (OpenMetrics unit suffix, factor from the profile's unit to it)
    "ratio": ("ratio", 1.0),
    "%": ("ratio", 0.01),
    "W": ("watts", 1.0),
    "nJ": ("joules", 1e-9),
    "J": ("joules", 1.0),
    "nJ/inst": ("joules_per_instruction", 1e-9),
    "s": ("seconds", 1.0),
    "ns": ("seconds", 1e-9),
    "1/s": ("per_second", 1.0),
    "inst/cycle": ("instructions_per_cycle", 1.0),
    "1/cycle": ("per_cycle", 1.0),
    "cycles": ("cycles", 1.0),
    "requests": ("requests", 1.0),
    "cores": ("cores", 1.0),
    "bytes": ("bytes", 1.0),
    "B": ("bytes", 1.0),
    "count": ("", 1.0),  # a number of things in the interval: no unit to add
    "": ("", 1.0),
}

_NOT_NAME = re.compile(r"[^a-z0-9_]+")

INFO = PREFIX  # an info family: its sample is sectormon_info
FRAMES = f"{PREFIX}_frames"
FRAME_TIME = f"{PREFIX}_frame_time_seconds"
FRAME_INTERVAL = f"{PREFIX}_frame_interval_seconds"
OVERHEAD = f"{PREFIX}_overhead_ratio"
ACTIVE_GROUP = f"{PREFIX}_active_group"
GROUP_COVERAGE = f"{PREFIX}_group_coverage_ratio"
THREAD_COVERAGE = f"{PREFIX}_thread_coverage_ratio"
COVERAGE = f"{PREFIX}_coverage_ratio"
EVENTS = f"{PREFIX}_events"
PROXY = f"{PREFIX}_proxy_estimate"
PROXY_ERROR = f"{PREFIX}_proxy_error_ratio"
REGION_CALLS = f"{PREFIX}_region_calls"
REGION_SECONDS = f"{PREFIX}_region_seconds"

BUILTIN: Mapping[str, str] = {
    # the families every scrape may hold besides the profile's metrics -> their OpenMetrics type
    INFO: "info",
    FRAMES: "counter",
    FRAME_TIME: "gauge",
    FRAME_INTERVAL: "gauge",
    OVERHEAD: "gauge",
    ACTIVE_GROUP: "stateset",
    GROUP_COVERAGE: "gauge",
    THREAD_COVERAGE: "gauge",
    COVERAGE: "gauge",
    EVENTS: "counter",
    PROXY: "gauge",
    PROXY_ERROR: "gauge",
    REGION_CALLS: "counter",
    REGION_SECONDS: "counter",
}

_TYPE_SUFFIXES: Mapping[str, tuple[str, ...]] = {
    # the names a family of each type takes in a scrape (OpenMetrics and the 0.0.4 text format)
    "counter": ("", "_total", "_created"),
    "info": ("", "_info"),
}


def reserved_names() -> frozenset[str]:
    """Every name the built-in families take in a scrape: a profile family must use none."""
    return frozenset(
        family + suffix for family, kind in BUILTIN.items() for suffix in _TYPE_SUFFIXES.get(kind, ("",))
    )


@dataclass(frozen=True, slots=True)
class ExportedMetric:
    """How one profile metric appears in a scrape."""

    metric: str  # the profile's name, as in the JSON frame
    family: str  # the family name without its unit suffix (prometheus_client adds it)
    unit: str  # the OpenMetrics unit ("" for none)
    scale: float  # the frame's value times this is the exported value
    help: str

    @property
    def name(self) -> str:
        """The series name a query uses: the family with its unit suffix."""
        return f"{self.family}_{self.unit}" if self.unit else self.family


def openmetrics_unit(unit: str) -> tuple[str, float]:
    """The OpenMetrics unit suffix and scale for a profile unit. An unknown unit is spelled out
    (``flop/byte`` is ``flop_per_byte``) rather than dropped, so the name still says it."""
    known = UNITS.get(unit)
    if known is not None:
        return known
    return _NOT_NAME.sub("_", unit.lower().replace("/", "_per_")).strip("_"), 1.0


def _family(metric: str, unit: str, om_unit: str) -> str:
    name = metric
    for suffix in (unit, om_unit):  # power_total_W, SCE_usage_ratio: the unit is added back once
        if suffix and name.lower().endswith("_" + suffix.lower()):
            name = name[: -len(suffix) - 1]
            break
    return f"{PREFIX}_{_NOT_NAME.sub('_', name.lower()).strip('_')}"


def exported_metrics(metrics: Iterable[Mapping[str, object]]) -> tuple[ExportedMetric, ...]:
    """The profile's metrics (as in the header's ``profile.metrics``) as OpenMetrics families.

    Two metrics that would get one name are refused: their series would be mixed up. So is a
    metric that would take the name of a built-in family (:data:`BUILTIN`), and a metric named
    twice (a crafted header's list; its two families would share the ``metric`` label of the
    coverage family, one series twice).
    """
    out: list[ExportedMetric] = []
    seen: dict[str, str] = {}
    named: set[str] = set()
    reserved = reserved_names()
    for entry in metrics:
        name = str(entry.get("name", ""))
        if name in named:
            raise UsageError(
                f"profile metric {name} is listed twice; name each metric once to serve --openmetrics"
            )
        named.add(name)
        unit = str(entry.get("unit", "") or "")
        om_unit, scale = openmetrics_unit(unit)
        description = str(entry.get("description", "") or name)
        exported = ExportedMetric(
            metric=name,
            family=_family(name, unit, om_unit),
            unit=om_unit,
            scale=scale,
            help=f"{description} ({name}, {unit or 'no unit'} in the profile), over the last interval",
        )
        if exported.name in reserved:
            raise UsageError(
                f"profile metric {name} exports as {exported.name}, a name sectormon's own series "
                "use; rename the metric in the profile to serve --openmetrics"
            )
        other = seen.get(exported.name)
        if other is not None:
            raise UsageError(
                f"profile metrics {other} and {name} both export as {exported.name}; "
                "rename one of them in the profile to serve --openmetrics"
            )
        seen[exported.name] = name
        out.append(exported)
    return tuple(out)
