"""Event names and scopes for raw A64FX codes found in fapp data.

Names come from the a64fx profile, matched by code, never by name; a code the profile lacks is
named like perf's raw syntax (``r80c0``), and the cycle counter column ``PMCCNTR`` is ``CPU_CYCLES``.
An event is CMG-wide when the profile says so, or when the PMU specification counts it per CMG and
the profile does not define it (fapp data carries many events the sector profile leaves out).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sectormon.errors import SectormonError
from sectormon.profiles.model import EventDef, Profile
from sectormon.profiles.resolve import load_profile

CYCLES_NAME = "CPU_CYCLES"

# CMG-counted codes (Fujitsu A64FX PMU Events v1.3; see a64fx-facts: "Events counted per CMG").
_CMG_CODES = frozenset(
    [0x308, 0x309, 0x314, 0x315, 0x316, 0x330, 0x350, 0x370, 0x396, 0x3E0, 0x3E8, *range(0x318, 0x31F)]
)


@lru_cache(maxsize=4)
def a64fx_profile(variant: str = "") -> Profile | None:
    """The built-in a64fx profile (nJ factors of ``variant``), or ``None`` if it cannot be loaded
    (names then fall back to ``r<code>``)."""
    try:
        return load_profile("a64fx", variant=variant)
    except Exception:  # a broken profile must not stop the reader: raw names then
        return None


def part_variant(info: Mapping[str, Any], cpu_frequency_hz: float | None = None) -> str:
    """The A64FX part of a measurement, which selects the energy factors (nJ per count).

    ``info.json`` ``variant`` (e.g. ``24c-2.6GHz``) wins; else ``cores_per_node`` and the CPU
    frequency (``cpu_frequency_ghz``, else the one measured from pa1) by the topology's own rule.
    ``""`` when unknown: the profile's defaults (the 48-core parts, as Fujitsu's report assumes).
    """
    from sectormon.host.topology import _a64fx_variant  # the one place that maps a part to its variant

    variant = info.get("variant")
    if isinstance(variant, str) and variant:
        return variant
    cores = info.get("cores_per_node")
    if isinstance(cores, bool) or not isinstance(cores, int):
        return ""
    ghz = info.get("cpu_frequency_ghz")
    if isinstance(ghz, bool) or not isinstance(ghz, (int, float)):
        ghz = cpu_frequency_hz / 1e9 if cpu_frequency_hz else None
    return _a64fx_variant(cores, float(ghz) if ghz is not None else None)


def measurement_profile(variant: str = "") -> Profile:
    """The a64fx profile whose metrics and constants the fapp analysis and import use."""
    profile = a64fx_profile(variant)
    if profile is None:
        raise SectormonError("the built-in a64fx profile cannot be loaded (reinstall sectormon)")
    return profile


@lru_cache(maxsize=1)
def _by_code() -> dict[int, EventDef]:
    profile = a64fx_profile()
    if profile is None:
        return {}
    return {e.code: e for e in profile.events.values() if e.code is not None}


def raw_name(code: int) -> str:
    """perf's raw-event spelling, as the profile loader writes specs: ``r80c0``, ``r5``."""
    return f"r{code:x}"


def event_name(code: int) -> str:
    """The profile's name of ``code``, else ``r<code>``."""
    event = _by_code().get(code)
    return event.name if event is not None else raw_name(code)


def is_cmg_scoped(code: int) -> bool:
    event = _by_code().get(code)
    if event is not None:
        return event.scope == "cmg"
    return code in _CMG_CODES


def event_def(code: int) -> EventDef:
    """The profile's event for ``code``, or a raw event definition for it."""
    event = _by_code().get(code)
    if event is not None:
        return event
    return EventDef(
        name=raw_name(code),
        spec=raw_name(code),
        description=f"raw event 0x{code:04x} (from fapp data; not in the a64fx profile)",
        code=code,
        scope="cmg" if code in _CMG_CODES else "pe",
    )
