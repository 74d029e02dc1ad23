"""``--openmetrics [HOST:]PORT``, ``--openmetrics-threads`` and ``--headless``: the options of the
commands that run a session (the live monitor, ``sim``, ``replay``) and the exporter they make."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sectormon.commands.options.numbers import whole
from sectormon.errors import UsageError
from sectormon.export.listen import DEFAULT_BIND, parse_listen
from sectormon.export.scopes import DEFAULT_PROCS
from sectormon.files.text import print_message

if TYPE_CHECKING:
    from sectormon.export.server import OpenMetricsExporter

OPENMETRICS_PROCS = whole(0, 100_000, "processes")


def add_openmetrics_options(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--openmetrics",
        metavar="[HOST:]PORT",
        help=f"serve the newest frame for Prometheus at http://HOST:PORT/metrics (HOST default "
        f"{DEFAULT_BIND}: other addresses only when given; PORT 0 picks a free one)",
    )
    parser.add_argument(
        "--openmetrics-threads",
        action="store_true",
        help="also export per-thread series (one set per thread: many series on a busy node)",
    )
    parser.add_argument(
        "--openmetrics-procs",
        metavar="N",
        type=OPENMETRICS_PROCS.parser("--openmetrics-procs"),
        default=None,
        help=OPENMETRICS_PROCS.help(
            f"export at most N processes (pid, comm and rank labels; ranked ones first, by rank; "
            f"default {DEFAULT_PROCS}, 0: none)"
        ),
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        help="no TUI and nothing on stdout: serve --openmetrics and/or --record until stopped",
    )


def check_output_mode(args: argparse.Namespace, *, record: str | None, can_record: bool = True) -> None:
    """``--headless`` and ``--openmetrics-threads`` need what they act on: say so instead of
    ignoring them. ``can_record``: the command has ``--record`` (a replay has not). A bad
    ``--openmetrics`` address is said here too, with the other option errors, before anything
    starts."""
    if args.openmetrics:
        parse_listen(args.openmetrics)
    for option, given in (
        ("--openmetrics-threads", args.openmetrics_threads),
        ("--openmetrics-procs", args.openmetrics_procs is not None),
    ):
        if given and not args.openmetrics:
            raise UsageError(f"{option} adds series to --openmetrics; give --openmetrics [HOST:]PORT too")
    if args.headless:
        if args.json:
            raise UsageError(
                "--headless writes nothing to stdout and --json streams frames there; choose one"
            )
        if not args.openmetrics and not record:
            needed = "--openmetrics [HOST:]PORT" + (" and/or --record FILE" if can_record else "")
            raise UsageError(f"--headless shows nothing by itself: add {needed}")


def open_exporter(args: argparse.Namespace, *, source: str | None = None) -> OpenMetricsExporter | None:
    """The exporter ``--openmetrics`` asks for, its port bound (None without the option).

    Call it before the session starts anything; then ``start(header)`` it, subscribe its
    ``publish`` and ``close`` it at the end. ``source`` overrides the header's source kind in the
    ``source`` label (a replay passes ``replay``).
    """
    if not args.openmetrics:
        return None
    # Imported only when asked for: prometheus_client and the HTTP server are most of what the
    # other commands would load before they start (benchmarks/bench_start.py).
    from sectormon.export.server import OpenMetricsExporter

    host, port = parse_listen(args.openmetrics)
    procs = DEFAULT_PROCS if args.openmetrics_procs is None else int(args.openmetrics_procs)
    exporter = OpenMetricsExporter(
        host=host, port=port, threads=args.openmetrics_threads, source=source, procs=procs
    )
    print_message(f"OpenMetrics at {exporter.url}")
    return exporter
