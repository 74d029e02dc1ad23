"""The session's header, built once from its typed options: shared by the JSON stream and the recording.

What the source says of itself (:meth:`Source.describe`: target, sector configuration, its own
parameters) is split into the header's parts here; everything else comes from the typed options,
the rotation plan and the probe. The result is a :class:`~sectormon.data.header.Header`;
:mod:`sectormon.io.header_codec` writes it.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import sys
import time
from collections.abc import Mapping
from typing import Any

from sectormon import __version__
from sectormon.data.frames import HEADER_SCHEMA
from sectormon.data.header import FIELD_ORDER, Header, HostFacts, RunOptions, SourceInfo, TargetInfo
from sectormon.data.hotspots import HotspotSettings
from sectormon.host.facts import mux_intervals
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.model import Profile
from sectormon.rotation.plan import RotationPlan
from sectormon.session.options import SessionOptions
from sectormon.sources.base import Source

HOST_ENV = "SECTORMON_HOST"
"""Names the host in the header (and the OpenMetrics ``host`` label) instead of the hostname:
simulated nodes, or a node known to the job by another name."""


def host_facts() -> HostFacts:
    """Host facts for the header (what perf stat prints above its table): the kernel's uname and
    the interpreter's version as :mod:`platform` gives them, read without it (its import and
    version parsing would be part of every start: benchmarks/bench_start.py)."""
    uname = os.uname()
    return HostFacts(
        name=os.environ.get(HOST_ENV) or socket.gethostname(),
        kernel=uname.release,
        machine=uname.machine,
        python=sys.version.split()[0],
    )


def rotation_header(options: SessionOptions, *, multiplexed: bool) -> dict[str, Any]:
    """The header's ``rotation``: the mode the session starts with, its timeslice and why, the
    budget, and (``multiplexed``: a source the kernel's multiplexer serves) the kernel's own
    rotation period per PMU (read, never written)."""
    assert options.rotation is not None
    return {
        **options.rotation.to_json(),
        "max_overhead": options.max_overhead,
        "switch_to_kernel": options.may_switch,
        "mux_interval_ms": mux_intervals() if multiplexed else {},
    }


def build_header(
    *,
    source: Source,
    profile: Profile,
    plan: RotationPlan,
    options: SessionOptions,
    probe: Mapping[str, ProbeResult] | None = None,
    hotspots: HotspotSettings | None = None,
) -> Header:
    """The header of a live session (``hotspots``: what it samples, if it does).

    ``wall_t0`` is the Unix time of stream time 0 (``None`` on the simulator, whose seconds are
    simulated): merged nodes of a job are aligned by it (``created`` has whole seconds only).
    """
    described = source.describe()
    absent = {"proxy", "recording_started"}
    if plan.always is None:
        absent.add("always_on")
    if options.rotation is None:
        absent.add("rotation")
    if hotspots is None:
        absent.add("hotspots")
    return Header(
        schema=HEADER_SCHEMA,
        keys=tuple(key for key in FIELD_ORDER if key not in absent),
        version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        wall_t0=None if described.get("simulated") else time.time() - source.now(),
        host=host_facts(),
        cpu=source.cpu_description(),
        topology=source.topology_json(),
        source=SourceInfo.of(
            {
                "kind": source.kind,
                **{k: v for k, v in described.items() if k not in ("target", "sector_config", "source")},
            }
        ),
        target=TargetInfo.of(described.get("target", {})),
        sector_config=described.get("sector_config", {}),
        profile=profile_to_dict(profile),
        groups={
            g.name: {"pe": [e.name for e in g.pe_events], "cmg": [e.name for e in g.cmg_events]}
            for g in plan.groups
        },
        skipped_groups=tuple(plan.skipped_groups),
        always_on=(
            {"pe": [e.name for e in plan.always.pe_events], "cmg": [e.name for e in plan.always.cmg_events]}
            if plan.always is not None
            else None
        ),
        unavailable=dict(plan.dropped),
        rotation=(
            rotation_header(options, multiplexed=source.capabilities.multiplexes)
            if options.rotation is not None
            else None
        ),
        probe={name: {"state": r.state, "reason": r.reason} for name, r in (probe or {}).items()},
        options=RunOptions.of(
            {
                "interval": options.interval,
                "timeslice": options.timeslice,
                "recent_seconds": options.recent_seconds,
                "count": options.count,
                "duration": options.duration,
                "baseline_after": options.baseline_after,
            }
        ),
        hotspots=hotspots,
    )
