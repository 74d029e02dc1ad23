"""The PMU document's fapp workflow as test data: results_baseline/ and results_sector/ with the
section-6.3 event sets SC1 .. SC5 exported as section 6.4 does (``sc<i>.csv``, ``sc<i>.xml`` and
``sc<i>.txt``), filled from the simulator's scenario A with the sector cache off and on.

The simulator's summary gives each event's count per thread and per CMG (``sectormon sim
--summary``); every set is taken from that one run, as if the five fapp runs had repeated
exactly. The XML follows fapp's ``<cpupa>`` groups of ``<event name="0x0011">N</event>``
elements, one per thread (docs/fapp.md says which nesting the reader takes).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sectormon.cli import main
from sectormon.fapp.names import event_name, is_cmg_scoped

SETS: dict[str, tuple[int, ...]] = {
    "sc1": (0x0011, 0x0008, 0x0004, 0x0003, 0x0200, 0x0015, 0x0184, 0x0180),
    "sc2": (0x0011, 0x0016, 0x0017, 0x0300, 0x0018, 0x0308, 0x0309, 0x0182),
    "sc3": (0x0011, 0x0240, 0x0241, 0x0250, 0x0252, 0x02A0, 0x02A1, 0x0260),
    "sc4": (0x0011, 0x0202, 0x0049, 0x0302, 0x0059, 0x0325, 0x0326, 0x0208),
    "sc5": (0x0011, 0x0008, 0x01E0, 0x03E0, 0x03E8, 0x0023, 0x0024, 0x0261),
}
"""Section 6.3's ``-Hevent_raw`` lists, in order."""
CNTFRQ_HZ = 100_000_000
REGION = "sector_kernel"
CSV_HEADER = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR"


def simulate(sector_cache: str) -> dict[str, Any]:
    """``sectormon sim --summary`` of scenario A, one thread, the sector cache ``on`` or ``off``."""
    out = io.StringIO()
    argv = ["sim", "--summary", "--kernel", "scenario-a", "--threads", "1", "--sector-cache", sector_cache]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    summary: dict[str, Any] = json.loads(out.getvalue())
    return summary


Row = tuple[int, int, int, dict[int, int]]  # thread, CNTVCT, PMCCNTR, counts by code


def rows_of(summary: Mapping[str, Any], codes: Sequence[int]) -> list[Row]:
    """One row per simulated thread: its per-PE counts, and its CMG's count for CMG-wide events
    (each thread's counter sees the whole CMG)."""
    ticks = round(summary["seconds"] * CNTFRQ_HZ)
    rows: list[Row] = []
    for tid, thread in sorted(summary["threads"].items(), key=lambda kv: int(kv[0])):
        cmg = summary["cmgs"][str(thread["cmg"])]["counts"]
        counts = {
            code: int((cmg if is_cmg_scoped(code) else thread["counts"]).get(event_name(code), 0))
            for code in codes
        }
        rows.append((int(tid), ticks, int(thread["counts"]["CPU_CYCLES"]), counts))
    return rows


def csv_text(codes: Sequence[int], rows: Sequence[Row]) -> str:
    header = CSV_HEADER + "".join(f",0x{code:04x}" for code in codes)
    lines = [header]
    for thread, cntvct, pmccntr, counts in rows:
        values = ",".join(str(counts[code]) for code in codes)
        lines.append(f"FAPP-cpupa,Thread,0,0,{thread},{REGION},1,1,{cntvct},{pmccntr},{values}")
    return "\n".join(lines) + "\n"


def xml_text(codes: Sequence[int], rows: Sequence[Row]) -> str:
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<fapp>", ' <process id="0">']
    out.append(f'  <region name="{REGION}" number="1">')
    for thread, cntvct, pmccntr, counts in rows:
        out += [f'   <thread id="{thread}">', "    <cpupa>"]
        out.append(f'     <event name="CNTVCT">{cntvct}</event>')
        out.append(f'     <event name="PMCCNTR">{pmccntr}</event>')
        out += [f'     <event name="0x{code:04x}">{counts[code]}</event>' for code in codes]
        out += ["    </cpupa>", "   </thread>"]
    out += ["  </region>", " </process>", "</fapp>"]
    return "\n".join(out) + "\n"


def write_results(
    directory: Path, summary: Mapping[str, Any], formats: Sequence[str] = ("csv", "xml")
) -> Path:
    """One ``results_<config>`` folder: every set in every format of ``formats``, plus the text export."""
    directory.mkdir(parents=True)
    for name, codes in SETS.items():
        rows = rows_of(summary, codes)
        if "csv" in formats:
            (directory / f"{name}.csv").write_text(csv_text(codes, rows))
        if "xml" in formats:
            (directory / f"{name}.xml").write_text(xml_text(codes, rows))
        (directory / f"{name}.txt").write_text(f"fapppx text export of {name} (for people, not read)\n")
    return directory
