"""``sectormon fapp DIR``: Fujitsu's CPU PA report and the section-3 sector metrics from fapp CSVs."""

from __future__ import annotations

import argparse
import shutil

from sectormon.commands.options import numbers
from sectormon.commands.options.output import write_stdout
from sectormon.fapp.analysis import Analysis, analyze, is_cpupa_report
from sectormon.fapp.notes import report_notes, section3_notes
from sectormon.fapp.report import CMG_METRICS
from sectormon.fapp.table import render_table
from sectormon.files.text import print_warning
from sectormon.io import strict_json

PLAIN_UNITS = ("", "ratio", "count")
"""Units not repeated after the metric name in the text table."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="DIR",
        help="a fapp measurement folder: pa1.csv .. pa17.csv (or event_raw sets such as sc1.csv ..), "
        "CSV or XML exports, info.json",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"threads": {...}, "cmg_total": {...}, "section3": ..., "split": ...} as JSON',
    )
    parser.add_argument("--region", metavar="NAME", help="the measured region when the CSVs hold several")
    parser.add_argument(
        "--width",
        type=numbers.REPORT_WIDTH.parser("--width"),
        metavar="COLS",
        help=numbers.REPORT_WIDTH.help("wrap the text table to COLS columns (default: terminal, max 160)"),
    )


def run(args: argparse.Namespace) -> int:
    analysis = analyze(args.path, args.region)
    for warning in analysis.measurement.warnings:
        print_warning(warning)
    if args.json:
        data = analysis.to_json()
        data["notes"] = {
            "report": report_notes(analysis).by_metric,
            "section3": section3_notes(analysis).by_metric,
        }
        write_stdout(strict_json.dumps(data) + "\n")
        return 0
    width = args.width or min(160, max(80, shutil.get_terminal_size((160, 24)).columns))
    write_stdout(render(analysis, width))
    return 0


def render(analysis: Analysis, width: int = 160) -> str:
    """The text report: the CPU PA table, then the section-3 table; when the sets are not the
    report's (no report metric has a value, e.g. the PMU document's SC1 .. SC5), the section-3
    table alone and one line in place of the report's."""
    m = analysis.measurement
    report = analysis.report
    freq = f", CPU {report.cpu_frequency_hz / 1e9:.4g} GHz" if report.cpu_frequency_hz else ""
    clock = (
        f"CNTFRQ {m.cntfrq_hz:.0f} Hz"
        if any(event_set.has_time for event_set in m.sets.values())
        else "no CNTVCT (time-based metrics n/a)"
    )
    region = m.info.get("measured_region") or m.info.get("region_name") or ""
    about = (
        f"{m.path}"
        + (f" (region {region})" if region else "")
        + f", {len(report.threads)} threads, {len(m.sets)} event sets, {clock}{freq}"
    )
    s3 = analysis.section3
    s3_columns = [(f"thread {t}", values) for t, values in s3.threads.items()]
    s3_columns.append(("CMG total", s3.cmg_total))
    units = {
        name: unit
        for name, unit in s3.units.items()
        if unit not in PLAIN_UNITS and not name.endswith(f"_{unit}")  # power_core_W is in W already
    }
    s3_notes = section3_notes(analysis)
    section3 = render_table(
        "a64fx profile metrics: PMU document section 3, errata corrections, per-cycle rates "
        "(n/a: events not in these sets, or CMG-wide events per thread)"
        + ("" if is_cpupa_report(report) else f": {about}"),
        [name for name in s3.names if name not in s3_notes.hidden],
        s3_columns,
        width=width,
        units=units,
        split=s3.split,
        marks=s3_notes.marks,
        notes=s3_notes.lines,
    )
    if not is_cpupa_report(report):
        sets = ", ".join(m.sets)
        return section3 + f"\nCPU PA report: no values ({sets} are not its pa1 .. pa17 sets)\n"
    columns = [(f"thread {t}", values) for t, values in report.threads.items()]
    columns.append(("CMG total", report.cmg_total))
    r_notes = report_notes(analysis)
    text = render_table(
        f"CPU PA report: {about}",
        CMG_METRICS,
        columns,
        width=width,
        split=report.split,
        marks=r_notes.marks,
        notes=r_notes.lines,
    )
    return text + "\n" + section3
