"""Small hand-made headers and frames for the exporter tests (values chosen, not measured)."""

from __future__ import annotations

from typing import Any

from sectormon.data.frames import Frame, ScopeStats, WindowStats
from sectormon.data.header import Header
from sectormon.io.header_codec import header_from_json

METRICS = [
    {"name": "IPC", "unit": "inst/cycle", "description": "Instructions per cycle"},
    {"name": "L1D_miss_rate", "unit": "ratio", "description": "L1D refills per access"},
    {"name": "energy_per_inst", "unit": "nJ/inst", "description": "Energy per instruction"},
    {"name": "power_total_W", "unit": "W", "description": "Power"},
]


def header(host: str = "node1", sector: str = "TRUE", metrics: list[dict[str, Any]] | None = None) -> Header:
    return header_from_json(
        {
            "schema": "sectormon/header/1",
            "sectormon": "0.1.0",
            "host": host,
            "cpu": "test cpu",
            "kernel": "6.1",
            "topology": {"cmgs": {"0": [12, 13], "1": [24, 25]}},
            "source": {"kind": "perf"},
            "sector_config": {"FLIB_SCCR_CNTL": sector},
            "profile": {"name": "a64fx", "metrics": METRICS if metrics is None else metrics},
            "groups": {"SC1": {}, "SC2": {}},
            "options": {"interval": 1.0},
        }
    )


def scope(ipc: float | None, cycles: float, *, energy: float | None = 0.5) -> ScopeStats:
    return ScopeStats(
        counts={"CPU_CYCLES": cycles, "INST_RETIRED": cycles * (ipc or 0.0)},
        rates={},
        metrics={"IPC": ipc, "L1D_miss_rate": 0.25, "energy_per_inst": energy, "power_total_W": None},
        coverage={"CPU_CYCLES": 1.0, "IPC": 0.5, "L1D_miss_rate": 0.2, "energy_per_inst": 0.2},
    )


def frame(t: float, cycles: float = 100.0, *, final: bool = False) -> Frame:
    empty = WindowStats(seconds=t, total=scope(None, 0.0), cmgs={}, cores={})
    return Frame(
        t=t,
        interval=1.0,
        overhead=0.01,
        total=scope(2.0, 2 * cycles),
        cmgs={"0": scope(1.5, cycles), "1": scope(2.5, cycles)},
        cores={"12": scope(1.5, cycles, energy=None), "24": scope(2.5, cycles, energy=None)},
        threads={"4242": scope(1.5, cycles)},
        recent=empty,
        run=empty,
        groups={"SC1": 0.5, "SC2": 0.5},
        active_group="SC2",
        final=final,
    )
