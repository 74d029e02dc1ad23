"""The engine a session's header describes, built the same way for a live run and its replay.

A recording keeps the raw readings and the header, never metrics: a replay rebuilds the engine
the live session ran from the header alone (recent window, unavailable events, start, rotation,
how counts are scaled, ``--proxy``), so both give the same frames with today's formulas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.data.frames import FrameRotation
from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.proxy import ProxySetting
from sectormon.profiles.model import Profile

FAPP_KIND = "fapp"
"""The header's ``source.kind`` of a recording imported from fapp (``sectormon import fapp``)."""


def build_engine(profile: Profile, header: Mapping[str, Any]) -> MetricsEngine:
    """The engine a header describes (live and replay must build it the same way)."""
    options = header.get("options", {})
    return MetricsEngine(
        profile,
        recent_seconds=float(options.get("recent_seconds", 10.0)),
        unavailable=dict(header.get("unavailable", {})),
        start=float(header.get("recording_started", 0.0) or 0.0),
        rotation=FrameRotation.from_json(header.get("rotation")),
        own_time=_scales_by_own_time(header),
        # A launched command is held before exec until its counters are on: it starts at 0 s of
        # CPU with the session (a recording started later does not know the target's CPU then).
        target_cpu_at_start=0.0 if _launched_from_start(header) else None,
        proxy=ProxySetting.from_header(header),
    )


def _scales_by_own_time(header: Mapping[str, Any]) -> bool:
    """Whether each unit's rotated counts are scaled by its own ``time_enabled/time_running``.

    Recordings that carry ``rotation`` in their header were made by a sampler that records it,
    and are read that way. Older recordings replay as they were first reported, with each reading
    standing for its whole slice, so a figure quoted from one does not move on a later replay.
    fapp's event sets are separate runs of one region, each row on its own clock: never own time.
    """
    return "rotation" in header and _mapping(header.get("source")).get("kind") != FAPP_KIND


def _launched_from_start(header: Mapping[str, Any]) -> bool:
    return _mapping(header.get("target")).get("mode") == "command" and not header.get("recording_started")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
