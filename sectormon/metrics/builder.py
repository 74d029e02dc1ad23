"""The engine a session's header describes, built the same way for a live run and its replay.

A recording keeps the raw readings and the header, never metrics: a replay rebuilds the engine
the live session ran from the header alone (recent window, unavailable events, start, rotation,
how counts are scaled, ``--proxy``), so both give the same frames with today's formulas.
"""

from __future__ import annotations

from sectormon.data.frames import FrameRotation
from sectormon.data.header import Header
from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.regions import cmg_of_topology
from sectormon.profiles.model import Profile


def build_engine(profile: Profile, header: Header) -> MetricsEngine:
    """The engine a header describes (live and replay must build it the same way)."""
    return MetricsEngine(
        profile,
        recent_seconds=header.options.recent_window,
        unavailable=dict(header.unavailable),
        start=header.stream_start,
        rotation=FrameRotation.from_json(header.rotation),
        own_time=_scales_by_own_time(header),
        # A launched command is held before exec until its counters are on: it starts at 0 s of
        # CPU with the session (a recording started later does not know the target's CPU then).
        target_cpu_at_start=0.0 if _launched_from_start(header) else None,
        proxy=header.proxy,
        cmg_of=cmg_of_topology(header.topology),
    )


def _scales_by_own_time(header: Header) -> bool:
    """Whether each unit's rotated counts are scaled by its own ``time_enabled/time_running``.

    Recordings that carry ``rotation`` in their header were made by a sampler that records it,
    and are read that way. Older recordings replay as they were first reported, with each reading
    standing for its whole slice, so a figure quoted from one does not move on a later replay.
    fapp's event sets are separate runs of one region, each row on its own clock: never own time.
    """
    return header.records_rotation and not header.source.separate_runs


def _launched_from_start(header: Header) -> bool:
    return header.target.mode == "command" and not header.recording_started
