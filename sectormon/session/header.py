"""The header record a session starts with: shared by the JSON stream and the recording."""

from __future__ import annotations

import datetime as _dt
import platform
import socket
from collections.abc import Mapping
from typing import Any

from sectormon import __version__
from sectormon.frames import HEADER_SCHEMA
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.loader import profile_to_dict
from sectormon.profiles.model import Profile
from sectormon.schedule import RotationPlan
from sectormon.session.options import SessionOptions
from sectormon.sources.base import Source


def host_facts() -> dict[str, Any]:
    """Host facts for the header (what perf stat prints above its table)."""
    uname = platform.uname()
    return {
        "host": socket.gethostname(),
        "kernel": uname.release,
        "machine": uname.machine,
        "python": platform.python_version(),
    }


def build_header(
    *,
    source: Source,
    profile: Profile,
    plan: RotationPlan,
    options: SessionOptions,
    probe: Mapping[str, ProbeResult] | None = None,
) -> dict[str, Any]:
    """The header record shared by the JSON stream and the recording."""
    described = source.describe()
    return {
        "schema": HEADER_SCHEMA,
        "sectormon": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **host_facts(),
        "cpu": source.cpu_description(),
        "topology": source.topology_json(),
        "source": {
            "kind": source.kind,
            **{k: v for k, v in described.items() if k not in ("target", "sector_config", "source")},
        },
        "target": described.get("target", {}),
        "sector_config": described.get("sector_config", {}),
        "profile": profile_to_dict(profile),
        "groups": {
            g.name: {"pe": [e.name for e in g.pe_events], "cmg": [e.name for e in g.cmg_events]}
            for g in plan.groups
        },
        "skipped_groups": list(plan.skipped_groups),
        "unavailable": dict(plan.dropped),
        "probe": {name: {"state": r.state, "reason": r.reason} for name, r in (probe or {}).items()},
        "options": {
            "interval": options.interval,
            "timeslice": options.timeslice,
            "recent_seconds": options.recent_seconds,
            "count": options.count,
            "duration": options.duration,
            "baseline_after": options.baseline_after,
        },
    }

