"""The ctypes perf_event_open wrapper (knows nothing of A64FX: every CPU fact lives in profiles/).

The package is the one place that talks to the kernel's perf interface: the ABI as ctypes data, the
syscall binding, typed errors, event spec parsing, counter groups, probing, and sampling events with
their ring buffers and record parser. It imports the standard library and ``sectormon.errors`` only,
so every A64FX fact (codes, scopes, errata) stays in the profiles.
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
