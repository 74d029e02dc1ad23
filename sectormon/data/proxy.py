"""What ``--proxy N`` set, as the header records it: per CMG, N units stand in for all of them.

The record only; choosing the stand-ins is :mod:`sectormon.rotation.stand_ins`, scaling their
counts :mod:`sectormon.metrics.proxy`. It lives here because the header carries it and the
engine, the UI and the exporter read it from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROXY_KEY = "proxy"
"""The header's field with the proxy setting (absent: every unit counts every group)."""

TASK_TIME = "task-time"
"""Scale by the task time of every unit (each unit reads an always-on group, whose
``time_enabled`` is its time on a CPU): a CMG's estimate is the stand-ins' count times the CMG's
task time over the stand-ins'."""

UNITS = "units"
"""Scale by presence (no per-PE group is read on the other units: the simulator's cores, always
there, or a live source where task-clock cannot be opened): the stand-ins' count times the seconds
all of the CMG's units were present over the stand-ins' (units in the CMG / stand-ins when they all
live throughout)."""

REFERENCES = (TASK_TIME, UNITS)


@dataclass(frozen=True, slots=True)
class ProxySetting:
    """What ``--proxy`` set: stand-ins per CMG, the scaling reference, the proxied events (the
    rotating per-PE events: always-on and CMG-wide events are counted as without a proxy) and
    the units that stood in when the session started."""

    per_cmg: int
    reference: str
    events: tuple[str, ...]
    stand_ins: tuple[str, ...] = ()
    described: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "per_cmg": self.per_cmg,
            "reference": self.reference,
            "events": list(self.events),
            "stand_ins": list(self.stand_ins),
            "described": self.described,
        }

    @classmethod
    def from_json(cls, data: object) -> ProxySetting:
        """The inverse of :meth:`to_json`; ``ValueError`` naming the field that is wrong (a
        malformed setting is said, not guessed)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"header field {PROXY_KEY!r} must be an object, not {data!r}")
        per_cmg = data.get("per_cmg")
        reference = data.get("reference")
        events = data.get("events")
        stand_ins = data.get("stand_ins", [])
        if not isinstance(per_cmg, int) or isinstance(per_cmg, bool) or per_cmg < 1:
            raise ValueError(f"header {PROXY_KEY}.per_cmg must be a whole number >= 1, not {per_cmg!r}")
        if reference not in REFERENCES:
            raise ValueError(f"header {PROXY_KEY}.reference must be one of {REFERENCES}, not {reference!r}")
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise ValueError(f"header {PROXY_KEY}.events must be a list of event names")
        if not isinstance(stand_ins, list) or not all(isinstance(u, str) for u in stand_ins):
            raise ValueError(f"header {PROXY_KEY}.stand_ins must be a list of unit keys")
        described = data.get("described", "")
        return cls(per_cmg, reference, tuple(events), tuple(stand_ins), str(described))
