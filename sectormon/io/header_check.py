"""The one check of a recording's header, made when the reader reads it: every field a reader
uses has the type it expects, or the error names the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.io.jsonl import MAX_SECONDS, BadRecord, finite_float

MIN_INTERVAL = 1e-9
"""The shortest frame interval a header may give (s): below it, stream times cannot be told apart."""

MAX_WALL_T0 = 1e11
"""The latest wall-clock start (Unix seconds, year 5138) a header may give: beyond it, aligning
two nodes by their starts loses the microseconds between their slices."""

TEXT_FIELDS = ("sectormon", "created", "host", "kernel", "machine", "python", "cpu")
OBJECT_FIELDS = ("topology", "source", "target", "sector_config", "groups", "probe")


def check_header(header: Mapping[str, Any]) -> None:
    """Raise :class:`BadRecord` naming the first field of ``header`` that no reader can use."""
    for key in TEXT_FIELDS:
        value = header.get(key)
        if value is not None and type(value) is not str:
            raise _bad(key, "a string", value)
    for key in OBJECT_FIELDS:
        if key in header and type(header[key]) is not dict:
            raise _bad(key, "an object", header[key])
    profile = header.get("profile")
    if "profile" in header and (type(profile) is not dict or not profile):
        raise _bad("profile", "the recorded profile (a non-empty object)", profile)
    skipped = header.get("skipped_groups", [])
    if type(skipped) is not list or not all(type(g) is str for g in skipped):
        raise _bad("skipped_groups", "a list of group names", skipped)
    unavailable = header.get("unavailable", {})
    if type(unavailable) is not dict or not all(type(v) is str for v in unavailable.values()):
        raise _bad("unavailable", "an object of event -> reason", unavailable)
    wall = header.get("wall_t0")
    if wall is not None:
        number = finite_float(wall)
        if number is None or not 0.0 <= number <= MAX_WALL_T0:
            raise _bad("wall_t0", f"null or Unix seconds from 0 to {MAX_WALL_T0:g}", wall)
    started = header.get("recording_started")
    if started is not None:
        _seconds("recording_started", started, low=0.0)
    options = header.get("options", {})
    if type(options) is not dict:
        raise _bad("options", "an object (interval, timeslice, recent_seconds, ...)", options)
    _check_options(options)


def _check_options(options: Mapping[str, Any]) -> None:
    for key in ("interval", "timeslice", "recent_seconds"):
        value = options.get(key)
        if value is not None or (key in options and key != "timeslice"):
            _seconds(f"options.{key}", value, low=MIN_INTERVAL)
    for key in ("duration", "baseline_after"):
        if options.get(key) is not None:
            _seconds(f"options.{key}", options[key], low=0.0)
    count = options.get("count")
    if count is not None and (type(count) is not int or count < 0):
        raise _bad("options.count", "null or a number of frames", count)


def _seconds(key: str, value: Any, *, low: float) -> None:
    """``value`` must be a number of seconds from ``low`` to :data:`MAX_SECONDS`."""
    number = finite_float(value)
    if number is None or not low <= number <= MAX_SECONDS:
        raise _bad(key, f"a number of seconds from {low:g} to {MAX_SECONDS:g}", value)


def _bad(key: str, expected: str, value: Any) -> BadRecord:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return BadRecord(f"header field {key!r} must be {expected}, got {text}")
