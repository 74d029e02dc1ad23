"""The TUI fixture's 48-core A64FX session (53 scopes, 25 metrics) as the exporter sees it."""

from __future__ import annotations

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.io.header_codec import header_from_json
from tests.ui.frames_fixture import a64fx_frames, a64fx_header


def header() -> Header:
    """The fixture's header with its metrics as a recording's header lists them."""
    out = a64fx_header()
    metrics = out["profile"]["metrics"]
    out["profile"] = {**out["profile"], "metrics": [{"name": name, **info} for name, info in metrics.items()]}
    return header_from_json(out)


def frames() -> list[Frame]:
    """Three frames: the sector cache off for two, then on."""
    return a64fx_frames(3, sector_from=2)
