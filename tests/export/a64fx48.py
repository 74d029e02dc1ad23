"""The TUI fixture's 48-core A64FX session (53 scopes, 25 metrics) as the exporter sees it."""

from __future__ import annotations

from typing import Any

from sectormon.data.frames import Frame
from tests.ui.frames_fixture import a64fx_frames, a64fx_header


def header() -> dict[str, Any]:
    """The fixture's header with its metrics as a recording's header lists them."""
    out = a64fx_header()
    metrics = out["profile"]["metrics"]
    out["profile"] = {**out["profile"], "metrics": [{"name": name, **info} for name, info in metrics.items()]}
    return out


def frames() -> list[Frame]:
    """Three frames: the sector cache off for two, then on."""
    return a64fx_frames(3, sector_from=2)
