"""sectormon.io: the on-disk and on-the-wire formats (recording writer and reader, JSON Lines).

The recording format (version 2: readings as rows) is documented in the README ("Recordings") and
:mod:`sectormon.io.jsonl`; ``open_recording(path)`` streams its slices and marks. The JSON stream
writer of the live monitor lives in :mod:`sectormon.io.stream`.

The names below are imported from their modules when first asked for (PEP 562): the live monitor's
JSON stream imports this package with :mod:`.stream`, and needs neither the reader nor the
recording writer at its start (benchmarks/bench_start.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sectormon.io.jsonl import FORMAT_VERSION, MARK_SCHEMA, RECORDING_SCHEMA, SLICE_SCHEMA
    from sectormon.io.migrations import MIGRATIONS
    from sectormon.io.reader import (
        Recording,
        RecordingError,
        RecordingStream,
        ScanResult,
        open_recording,
        read_recording,
        scan_recording,
    )
    from sectormon.io.recording import RecordingWriter

_MODULE_OF = {
    "FORMAT_VERSION": "jsonl",
    "MARK_SCHEMA": "jsonl",
    "RECORDING_SCHEMA": "jsonl",
    "SLICE_SCHEMA": "jsonl",
    "MIGRATIONS": "migrations",
    "Recording": "reader",
    "RecordingError": "reader",
    "RecordingStream": "reader",
    "ScanResult": "reader",
    "open_recording": "reader",
    "read_recording": "reader",
    "scan_recording": "reader",
    "RecordingWriter": "recording",
}

__all__ = [
    "FORMAT_VERSION",
    "MARK_SCHEMA",
    "MIGRATIONS",
    "RECORDING_SCHEMA",
    "SLICE_SCHEMA",
    "Recording",
    "RecordingError",
    "RecordingStream",
    "RecordingWriter",
    "ScanResult",
    "open_recording",
    "read_recording",
    "scan_recording",
]


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value
