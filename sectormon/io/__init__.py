"""sectormon.io: the on-disk and on-the-wire formats (recording writer and reader, JSON Lines).

The recording format (version 2: readings as rows) is documented in the README ("Recordings") and
:mod:`sectormon.io.jsonl`; ``open_recording(path)`` streams its slices and marks. The JSON stream
writer of the live monitor lives in :mod:`sectormon.io.stream`.
"""

from __future__ import annotations

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
