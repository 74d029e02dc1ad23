"""The session header as typed records: what a session counts, on what, and how it was set up.

Every front end starts from the header: the engine takes its options, unavailable events, rotation
and proxy setting from it, the TUI and the exporter describe the session by it, compare and job
replays align runs with it. It is built once by the session (:mod:`sectormon.session.header`) or
read from a recording, and written and read only by :mod:`sectormon.io.header_codec`.

The header is also a document other writers produce: older sectormon versions, fapp imports,
newer versions with fields this one does not know. What a reader prints of it (the stream header
of a replay) must be what was written, byte for byte. So :class:`Header` keeps the order of its
fields as written (:attr:`Header.keys`) and the fields it does not know (:attr:`Header.extra`),
and the parts that are open documents (the source's description, the target, the options) keep
their JSON object beside the typed fields read from it. The codec makes both from one object, so
they cannot disagree; nothing here is changed in place (``dataclasses.replace`` and the ``with_``
methods make a new header).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sectormon.data.hotspots import HotspotSettings
from sectormon.data.proxy import ProxySetting

JsonObject = Mapping[str, Any]
"""A JSON object read from or written to a header, treated as read-only."""

EMPTY: JsonObject = MappingProxyType({})


def json_object(value: object) -> JsonObject:
    """``value`` if it is a JSON object, else an empty one: for reading into the open documents
    a header carries (the profile, the sector configuration), whose inner shape no one checks."""
    return value if isinstance(value, Mapping) else EMPTY


@dataclass(frozen=True)
class HostFacts:
    """What ``perf stat`` prints above its table: the host's name, kernel, machine and Python
    (``None`` each when the header has none: a fapp import names no host). In the header's JSON
    they are four top-level fields, ``host`` (the name), ``kernel``, ``machine``, ``python``."""

    name: str | None = None
    kernel: str | None = None
    machine: str | None = None
    python: str | None = None


HOST_KEYS = ("host", "kernel", "machine", "python")
"""The header's fields of :class:`HostFacts`, in its order."""


@dataclass(frozen=True)
class SourceInfo:
    """The header's ``source``: its kind (``perf``, ``sim``, ``fapp``) and what it says of itself
    (``fields``: the whole object as written, kind included)."""

    kind: str | None = None
    simulated: bool = False
    """Stream seconds are simulated seconds (no wall clock behind them)."""
    fields: JsonObject = field(default_factory=dict)

    @property
    def modelled(self) -> bool:
        """The counts come from the simulated A64FX's cache model, not from a PMU."""
        return self.kind == "sim"

    @property
    def separate_runs(self) -> bool:
        """Each event set was counted in a run of its own, on its own clock (fapp's imported event
        sets: the one source whose readings are not slices of one session)."""
        return self.kind == "fapp"

    @classmethod
    def of(cls, fields: JsonObject) -> SourceInfo:
        kind = fields.get("kind")
        return cls(kind if isinstance(kind, str) else None, fields.get("simulated") is True, fields)


@dataclass(frozen=True)
class TargetInfo:
    """The header's ``target``: what is counted (``mode``: ``command``, ``pid``, ``cpus``, ...)
    and its facts (``fields``: the whole object as written)."""

    mode: str | None = None
    fields: JsonObject = field(default_factory=dict)

    @classmethod
    def of(cls, fields: JsonObject) -> TargetInfo:
        mode = fields.get("mode")
        return cls(mode if isinstance(mode, str) else None, fields)


DEFAULT_INTERVAL = 1.0
DEFAULT_RECENT_SECONDS = 10.0


@dataclass(frozen=True)
class RunOptions:
    """The header's ``options``: the session's timing (seconds) and its stopping rules.

    A field the header leaves out is ``None`` (older recordings); ``fields`` is the object as written.
    """

    interval: float | None = None
    timeslice: float | None = None
    recent_seconds: float | None = None
    count: int | None = None
    duration: float | None = None
    baseline_after: float | None = None
    fields: JsonObject = field(default_factory=dict)

    @property
    def frame_interval(self) -> float:
        """Seconds per frame: the session's ``--interval``, 1 s in headers that name none (the
        first recordings, made before the option was recorded)."""
        return float(self.interval if self.interval is not None else DEFAULT_INTERVAL)

    @property
    def recent_window(self) -> float:
        """Seconds of the rolling window, 10 s in headers that name none (likewise)."""
        return float(self.recent_seconds if self.recent_seconds is not None else DEFAULT_RECENT_SECONDS)

    @classmethod
    def of(cls, fields: JsonObject) -> RunOptions:
        """The options ``fields`` hold, their types checked by the caller (the codec does)."""
        get = fields.get
        return cls(
            get("interval"),
            get("timeslice"),
            get("recent_seconds"),
            get("count"),
            get("duration"),
            get("baseline_after"),
            fields,
        )


FIELD_ORDER = (
    "schema",
    "sectormon",
    "created",
    "wall_t0",
    "host",
    "kernel",
    "machine",
    "python",
    "cpu",
    "topology",
    "source",
    "target",
    "sector_config",
    "profile",
    "groups",
    "skipped_groups",
    "always_on",
    "unavailable",
    "rotation",
    "probe",
    "options",
    "hotspots",
    "proxy",
    "recording_started",
)
"""The header's fields in the order this sectormon writes them (a recording adds
``recording_started`` last)."""


@dataclass(frozen=True)
class Header:
    """One session's header record (the JSON stream's first record, a recording's first line).

    ``keys`` are the header's fields in the order written: what :func:`to_json
    <sectormon.io.header_codec.header_to_json>` writes, each from its typed field here (or from
    ``extra`` for a field this sectormon does not know). A field not in ``keys`` is absent.
    """

    schema: str
    keys: tuple[str, ...]
    version: str | None = None
    """The sectormon version that wrote it (the ``sectormon`` field)."""
    created: str | None = None
    wall_t0: float | None = None
    """The Unix time of stream time 0 (``None`` on the simulator): merged nodes align by it."""
    host: HostFacts = field(default_factory=HostFacts)
    cpu: str | None = None
    topology: JsonObject = field(default_factory=dict)
    source: SourceInfo = field(default_factory=SourceInfo)
    target: TargetInfo = field(default_factory=TargetInfo)
    sector_config: JsonObject = field(default_factory=dict)
    profile: JsonObject = field(default_factory=dict)
    """The recorded profile (:func:`sectormon.profiles.codec.profile_from_dict` builds it)."""
    groups: JsonObject = field(default_factory=dict)
    """Group name -> ``{"pe": [...], "cmg": [...]}``, in rotation order."""
    skipped_groups: tuple[str, ...] = ()
    always_on: object = None
    """The events every unit counts all the time (``{"pe": [...], "cmg": [...]}``), as written."""
    unavailable: Mapping[str, str] = field(default_factory=dict)
    """Event -> why it could not be counted."""
    rotation: object = None
    """The rotation the session started with, as written (this sectormon writes an object; it is
    absent from recordings older than own-time scaling, which :attr:`keys` tells)."""
    probe: JsonObject = field(default_factory=dict)
    options: RunOptions = field(default_factory=RunOptions)
    hotspots: HotspotSettings | None = None
    """A sampling session's settings (``--sample``)."""
    proxy: ProxySetting | None = None
    """A ``--proxy`` session's stand-ins."""
    recording_started: float | None = None
    """The stream time the recording started at (recordings only)."""
    extra: JsonObject = field(default_factory=dict)
    """Fields this sectormon does not know, kept as written."""

    @property
    def records_rotation(self) -> bool:
        """Whether the sampler that made it records its rotation (and scales each unit's counts
        by its own time); readings of older recordings stand for their whole slice."""
        return "rotation" in self.keys

    @property
    def stream_start(self) -> float:
        """The stream time the recording starts at (0 for a live session's header)."""
        return float(self.recording_started or 0.0)

    @property
    def group_names(self) -> tuple[str, ...]:
        return tuple(str(g) for g in self.groups)

    def with_fields(self, **changes: Any) -> Header:
        """This header with ``changes`` (typed fields); a field it did not have is added last."""
        keys = self.keys + tuple(k for k in _json_keys(changes) if k not in self.keys)
        return dataclasses.replace(self, keys=keys, **changes)

    def without_recording_start(self) -> Header:
        """This header as the live session wrote it, before a recording added its start."""
        keys = tuple(k for k in self.keys if k != "recording_started")
        return dataclasses.replace(self, keys=keys, recording_started=None)


_KEY_OF = {"version": "sectormon"}
"""The JSON field of a typed field, where their names differ (``host`` is four fields)."""


def _json_keys(changes: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for name, value in changes.items():
        if name == "host":
            present = (value.name, value.kernel, value.machine, value.python)
            keys += [k for k, v in zip(HOST_KEYS, present, strict=True) if v is not None]
        elif name == "extra":
            keys += list(value)
        elif name != "keys":
            keys.append(_KEY_OF.get(name, name))
    return keys
