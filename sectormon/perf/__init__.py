"""The ctypes perf_event_open wrapper (knows nothing of A64FX: every CPU fact lives in profiles/).

- :mod:`~sectormon.perf.abi`: ``struct perf_event_attr`` and the ABI constants.
- :mod:`~sectormon.perf.syscall`: the libc binding and the checked-call path.
- :mod:`~sectormon.perf.errors`: typed failures with actionable messages.
- :mod:`~sectormon.perf.events`: event spec strings -> attr fields.
- :mod:`~sectormon.perf.group`: a group of counters on one thread or CPU.
- :mod:`~sectormon.perf.probe`: does each event open and count on this host?
- :mod:`~sectormon.perf.sampling`: a sampling event with its ring buffer (:mod:`.ring`) and the
  parser of the records it writes (:mod:`.records`).
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
