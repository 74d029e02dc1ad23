"""The ctypes perf_event_open wrapper (knows nothing of A64FX: every CPU fact lives in profiles/).

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

from sectormon.perf.errors import (
    BadEventSpec,
    CounterBusy,
    EventUnsupported,
    GroupTooLarge,
    InvalidAttribute,
    PerfError,
    PermissionDenied,
    TargetGone,
    TooManyOpenFiles,
)
from sectormon.perf.events import EventSpec, parse_event
from sectormon.perf.group import PerfGroup, parse_group_read
from sectormon.perf.probe import probe_events

__all__ = [
    "BadEventSpec",
    "CounterBusy",
    "EventSpec",
    "EventUnsupported",
    "GroupTooLarge",
    "InvalidAttribute",
    "PerfError",
    "PerfGroup",
    "PermissionDenied",
    "TargetGone",
    "TooManyOpenFiles",
    "parse_event",
    "parse_group_read",
    "probe_events",
]
