"""OpenMetrics names for a profile's metrics: ``sectormon_<metric>_<unit>`` in base units.

OpenMetrics asks for a unit suffix in base units (seconds, joules, watts, ratio), so a metric in
nJ is exported in joules (scaled by 1e-9), and a name already ending in its unit symbol does not
repeat it (``power_total_W`` is ``sectormon_power_total_watts``). Names are lower case, as
Prometheus names are by convention.
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

    Two metrics that would get one name are refused: their series would be mixed up.
    """
    out: list[ExportedMetric] = []
    seen: dict[str, str] = {}
    for entry in metrics:
        name = str(entry.get("name", ""))
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
        other = seen.get(exported.name)
        if other is not None:
            raise UsageError(
                f"profile metrics {other} and {name} both export as {exported.name}; "
                "rename one of them in the profile to serve --openmetrics"
            )
        seen[exported.name] = name
        out.append(exported)
    return tuple(out)
