"""The header's one codec: :class:`~sectormon.data.header.Header` to JSON and back, with its checks.

Every reader of a header (the engine's options, the replay's frame clock, compare's facts, the
TUI's header bar) takes its fields as given, so a damaged header is refused here, when the file
is opened, once, with the field it names, instead of surfacing as an ``AttributeError`` or an
``OverflowError`` somewhere downstream. Fields a header may lack (an imported fapp measurement has
no host) are checked only when present; fields this sectormon does not know are kept as written
(a newer writer may add some), and the fields are written back in the order they were read, so a
replay prints the header a live run printed, byte for byte.

Headers of older format versions are migrated (:mod:`sectormon.io.migrations`) before they come
here. What older writers left out stays absent (the header is written back as it was read); what
its absence means is said once, by the typed record (:attr:`RunOptions.frame_interval
<sectormon.data.header.RunOptions.frame_interval>`, :attr:`Header.records_rotation
<sectormon.data.header.Header.records_rotation>`, ...), never by each reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sectormon.data.header import EMPTY, HOST_KEYS, Header, HostFacts, RunOptions, SourceInfo, TargetInfo
from sectormon.data.hotspots import HEADER_KEY as HOTSPOTS_KEY
from sectormon.data.hotspots import HotspotSettings
from sectormon.data.proxy import PROXY_KEY, ProxySetting
from sectormon.io.jsonl import MAX_SECONDS, BadRecord, finite_float

MIN_INTERVAL = 1e-9
"""The shortest frame interval a header may give (s): below it, stream times cannot be told apart."""

MAX_WALL_T0 = 1e11
"""The latest wall-clock start (Unix seconds, year 5138) a header may give: beyond it, aligning
two nodes by their starts loses the microseconds between their slices."""

TEXT_FIELDS = ("sectormon", "created", "host", "kernel", "machine", "python", "cpu")
OBJECT_FIELDS = ("topology", "source", "target", "sector_config", "groups", "probe")


def header_from_json(rec: Mapping[str, Any]) -> Header:
    """The header ``rec`` holds; :class:`BadRecord` naming the first field no reader can use."""
    check_header(rec)
    schema = rec.get("schema")
    return Header(
        schema=schema if isinstance(schema, str) else "",
        keys=tuple(rec),
        version=rec.get("sectormon"),
        created=rec.get("created"),
        wall_t0=rec.get("wall_t0"),
        host=HostFacts(*(rec.get(k) for k in HOST_KEYS)),
        cpu=rec.get("cpu"),
        topology=rec.get("topology", EMPTY),
        source=SourceInfo.of(rec.get("source", EMPTY)),
        target=TargetInfo.of(rec.get("target", EMPTY)),
        sector_config=rec.get("sector_config", EMPTY),
        profile=rec.get("profile", EMPTY),
        groups=rec.get("groups", EMPTY),
        skipped_groups=tuple(rec.get("skipped_groups", ())),
        always_on=rec.get("always_on"),
        unavailable=rec.get("unavailable", EMPTY),
        rotation=rec.get("rotation"),
        probe=rec.get("probe", EMPTY),
        options=RunOptions.of(rec.get("options", EMPTY)),
        hotspots=_hotspots(rec.get(HOTSPOTS_KEY)),
        proxy=_proxy(rec.get(PROXY_KEY)),
        recording_started=rec.get("recording_started"),
        extra={k: v for k, v in rec.items() if k not in _WRITERS},
    )


def header_to_json(header: Header) -> dict[str, Any]:
    """The header as a JSON object: its fields in :attr:`Header.keys` order, as they were read."""
    return {key: _WRITERS[key](header) if key in _WRITERS else header.extra[key] for key in header.keys}


_WRITERS: dict[str, Callable[[Header], Any]] = {
    "schema": lambda h: h.schema,
    "sectormon": lambda h: h.version,
    "created": lambda h: h.created,
    "wall_t0": lambda h: h.wall_t0,
    "host": lambda h: h.host.name,
    "kernel": lambda h: h.host.kernel,
    "machine": lambda h: h.host.machine,
    "python": lambda h: h.host.python,
    "cpu": lambda h: h.cpu,
    "topology": lambda h: h.topology,
    "source": lambda h: h.source.fields,
    "target": lambda h: h.target.fields,
    "sector_config": lambda h: h.sector_config,
    "profile": lambda h: h.profile,
    "groups": lambda h: h.groups,
    "skipped_groups": lambda h: list(h.skipped_groups),
    "always_on": lambda h: h.always_on,
    "unavailable": lambda h: h.unavailable,
    "rotation": lambda h: h.rotation,
    "probe": lambda h: h.probe,
    "options": lambda h: h.options.fields,
    HOTSPOTS_KEY: lambda h: None if h.hotspots is None else h.hotspots.to_json(),
    PROXY_KEY: lambda h: None if h.proxy is None else h.proxy.to_json(),
    "recording_started": lambda h: h.recording_started,
}
"""Each field :class:`Header` has a typed place for, written from there; any other is in ``extra``."""


def _hotspots(data: object) -> HotspotSettings | None:
    """A sampling session's settings (``None``: the session did not sample)."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise BadRecord(f"header {HOTSPOTS_KEY!r} must be an object")
    try:
        return HotspotSettings.from_json(data)
    except ValueError as exc:
        raise BadRecord(f"header {exc}") from None


def _proxy(data: object) -> ProxySetting | None:
    """A ``--proxy`` session's setting (``None``: no proxy); a malformed one is said, not guessed."""
    if data is None:
        return None
    try:
        return ProxySetting.from_json(data)
    except ValueError as exc:
        raise BadRecord(str(exc)) from None


def check_header(rec: Mapping[str, Any]) -> None:
    """Raise :class:`BadRecord` naming the first field of ``rec`` that no reader can use."""
    for key in TEXT_FIELDS:
        value = rec.get(key)
        if value is not None and type(value) is not str:
            raise _bad(key, "a string", value)
    for key in OBJECT_FIELDS:
        if key in rec and type(rec[key]) is not dict:
            raise _bad(key, "an object", rec[key])
    profile = rec.get("profile")
    if "profile" in rec and (type(profile) is not dict or not profile):
        raise _bad("profile", "the recorded profile (a non-empty object)", profile)
    skipped = rec.get("skipped_groups", [])
    if type(skipped) is not list or not all(type(g) is str for g in skipped):
        raise _bad("skipped_groups", "a list of group names", skipped)
    unavailable = rec.get("unavailable", {})
    if type(unavailable) is not dict or not all(type(v) is str for v in unavailable.values()):
        raise _bad("unavailable", "an object of event -> reason", unavailable)
    wall = rec.get("wall_t0")
    if wall is not None:
        number = finite_float(wall)
        if number is None or not 0.0 <= number <= MAX_WALL_T0:
            raise _bad("wall_t0", f"null or Unix seconds from 0 to {MAX_WALL_T0:g}", wall)
    started = rec.get("recording_started")
    if started is not None:
        _seconds("recording_started", started, low=0.0)
    options = rec.get("options", {})
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
