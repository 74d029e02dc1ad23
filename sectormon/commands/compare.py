"""``sectormon compare BASE OTHER``: a baseline run against a sector-cache run.

Each side is a sectormon recording (replayed to its whole-run window), a recording made by
``sectormon import fapp``, or a fapp cpupa directory; ``--region NAME`` compares one region of
each instead (``sectormon.compare.regions``). Output: aligned tables per scope (default),
``--csv``, ``--markdown`` or ``--json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from sectormon.errors import UsageError
from sectormon.files.text import printable


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "base",
        metavar="BASE",
        help="baseline run: a recording, a job file (sectormon merge), FILE,FILE... (node recordings "
        "of one job) or a fapp directory",
    )
    parser.add_argument("other", metavar="OTHER", help="tuned (sector cache) run: the same kinds as BASE")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object (every metric, null where n/a)")
    fmt.add_argument("--csv", action="store_true", help="CSV, one row per scope and metric")
    fmt.add_argument("--markdown", action="store_true", help="Markdown tables")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also show the metrics with no value on either side (text and Markdown leave them out)",
    )
    parser.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="S",
        help="only these scopes: total, cmg, core, thread, rank (an MPI rank's process), node (a job's), "
        "or one like cmg:0 "
        "(repeatable; default all)",
    )
    parser.add_argument(
        "--labels",
        metavar="A,B",
        help="name the two runs A and B in the report (default: their file or directory names)",
    )
    parser.add_argument("--skip-bad", action="store_true", help="skip malformed recording lines")
    parser.add_argument(
        "--region",
        metavar="NAME[,NAME]",
        help="compare one region, not the whole runs: a recording's or job's marked region (its label, "
        "name or name#N; name alone when one number of it was marked), a fapp directory's measured "
        "region; one for both sides, or BASE,OTHER",
    )


def run(args: argparse.Namespace) -> int:
    from sectormon.commands.options.output import require_stdout, write_stdout
    from sectormon.compare.render import render_csv, render_markdown, render_text
    from sectormon.compare.sides import compare_paths
    from sectormon.files.text import print_warning
    from sectormon.io import strict_json

    require_stdout()  # before both sides are replayed: the report could not be written
    scopes = [s.strip() for item in args.scope for s in item.split(",") if s.strip()]
    labels = _labels(args.labels)
    cmp = compare_paths(args.base, args.other, skip_bad=args.skip_bad, scopes=scopes, region=args.region)
    if labels is not None:
        cmp = dataclasses.replace(
            cmp,
            base=dataclasses.replace(cmp.base, label=labels[0]),
            other=dataclasses.replace(cmp.other, label=labels[1]),
        )
    if args.json:
        write_stdout(strict_json.dumps(cmp.to_json()) + "\n")
    elif args.csv:
        write_stdout(render_csv(cmp))
    elif args.markdown:
        write_stdout(render_markdown(cmp, show_all=args.all))
    else:
        write_stdout(render_text(cmp, show_all=args.all))
    # The text report ends with the warnings: on a terminal they are on screen already.
    shown = not (args.csv or args.markdown) and sys.stdout.isatty()
    if not args.json and not shown:
        for warning in cmp.warnings:
            print_warning(warning)
    return 0


def _labels(text: str | None) -> tuple[str, str] | None:
    """``--labels A,B`` checked: two non-empty names."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UsageError(f"--labels {printable(text)[:60]!r}: give two names, as --labels off,on")
    return parts[0], parts[1]
