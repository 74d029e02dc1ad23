"""``sectormon import fapp DIR -o FILE``: convert fapp cpupa CSVs into a sectormon recording."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from sectormon.errors import UsageError
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.model import TIME_SET
from sectormon.fapp.to_recording import write_recording
from sectormon.files.text import print_message, print_warning

FORMATS = ("fapp",)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", choices=FORMATS, help="what to import: fapp (cpupa CSV folder)")
    parser.add_argument(
        "path",
        metavar="DIR",
        help="the fapp measurement folder (pa1.csv .. pa17.csv or sets like sc1.csv .., CSV or XML; "
        "info.json)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the recording to write (.jsonl, or .jsonl.gz; - for stdout)",
    )
    parser.add_argument("--region", metavar="NAME", help="the measured region when the CSVs hold several")


def run(args: argparse.Namespace) -> int:
    measurement = read_measurement(args.path, args.region)
    for warning in measurement.warnings:
        print_warning(warning)
    if measurement.time_set != TIME_SET:
        print_warning(
            f"{args.path}: no {TIME_SET} set: the recording takes the region's time "
            f"from {measurement.time_set} (fapp's report takes it from {TIME_SET} only); every set "
            "measured the same region, but their times differ a little"
        )
    to_stdout = args.output == "-"  # as in most Unix tools: `-o - | jq ...`
    if to_stdout:
        _check_stdout()
    else:
        refuse_own_input(args.output, measurement.files)
    stream = sys.stdout.buffer if to_stdout else None  # written as it is (`>> log` stays appended)
    conversion = write_recording(measurement, "stdout" if to_stdout else args.output, stream)
    readings = sum(len(s.rows) for s in conversion.slices)
    print_message(
        f"wrote {'the recording to stdout' if to_stdout else args.output}: "
        f"{len(measurement.sets)} event sets, {readings} readings in one "
        f"slice of {conversion.end.t:.6g} s (the mean {measurement.time_set} time)"
    )
    return 0


def refuse_own_input(output: str, inputs: Sequence[str]) -> None:
    """``-o DIR/pa1.csv`` would replace an input with the recording: refused before anything is written."""
    target = os.path.realpath(output)
    for path in inputs:
        same = os.path.realpath(path) == target
        if not same and os.path.exists(output):
            with contextlib.suppress(OSError):
                same = os.path.samefile(path, output)
        if same:
            raise UsageError(f"-o {output} is {path}, which this import reads: write the recording elsewhere")


def _check_stdout() -> None:
    try:
        os.fstat(1)
    except OSError:
        raise UsageError("-o -: stdout is closed (redirect it to a file or a pipe)") from None
