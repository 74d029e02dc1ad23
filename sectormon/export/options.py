"""``--openmetrics [HOST:]PORT`` and ``--openmetrics-threads``: the options and the exporter they make.

The commands that run a session (the live monitor, ``sim``, ``replay``) add these options with
:func:`add_openmetrics_options` and, once the session's header is known, call
:func:`open_exporter` and subscribe what it returns.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol

from sectormon.errors import UsageError

DEFAULT_BIND = "127.0.0.1"
METRICS_PATH = "/metrics"

if TYPE_CHECKING:
    from sectormon.export.server import OpenMetricsExporter


class _Adder(Protocol):
    def add_argument(self, *args: Any, **kwargs: Any) -> Any: ...


def add_openmetrics_options(parser: _Adder) -> None:
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
        "--headless",
        action="store_true",
        help="no TUI and nothing on stdout: serve --openmetrics and/or --record until stopped",
    )


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` as (host, port); a bad value is a UsageError."""
    host, port_text = DEFAULT_BIND, text.strip()
    if port_text.startswith("["):
        inside, sep, rest = port_text[1:].partition("]")
        if not sep or not rest.startswith(":") or not inside:
            raise UsageError(
                f"--openmetrics {text}: write an IPv6 address as [ADDRESS]:PORT, e.g. [::1]:9464"
            )
        host, port_text = inside, rest[1:]
    elif ":" in port_text:
        host, _, port_text = port_text.rpartition(":")
        if not host or ":" in host:
            raise UsageError(f"--openmetrics {text}: give PORT or HOST:PORT, e.g. 9464 or 0.0.0.0:9464")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise UsageError(f"--openmetrics {text}: the port must be a number from 0 to 65535, e.g. 9464")
    return host, int(port_text)


def check_output_mode(args: Any, *, can_record: bool = True) -> None:
    """``--headless`` and ``--openmetrics-threads`` need what they act on: say so instead of
    ignoring them. ``can_record``: the command has ``--record`` (a replay has not)."""
    if getattr(args, "openmetrics_threads", False) and not getattr(args, "openmetrics", None):
        raise UsageError(
            "--openmetrics-threads adds series to --openmetrics; give --openmetrics [HOST:]PORT too"
        )
    if getattr(args, "headless", False):
        if getattr(args, "json", False):
            raise UsageError(
                "--headless writes nothing to stdout and --json streams frames there; choose one"
            )
        if not getattr(args, "openmetrics", None) and not getattr(args, "record", None):
            needed = (
                "--openmetrics [HOST:]PORT and/or --record FILE"
                if can_record
                else "--openmetrics [HOST:]PORT"
            )
            raise UsageError(f"--headless shows nothing by itself: add {needed}")


def open_exporter(args: Any, *, source: str | None = None) -> OpenMetricsExporter | None:
    """The exporter ``--openmetrics`` asks for, its port bound (None without the option).

    Call it before the session starts anything; then ``start(header)`` it, subscribe its
    ``publish`` and ``close`` it at the end. ``source`` overrides the header's source kind in the
    ``source`` label (a replay passes ``replay``).
    """
    listen = getattr(args, "openmetrics", None)
    if not listen:
        return None
    from sectormon.export.server import OpenMetricsExporter

    host, port = parse_listen(listen)
    exporter = OpenMetricsExporter(
        host=host, port=port, threads=bool(getattr(args, "openmetrics_threads", False)), source=source
    )
    print(f"sectormon: OpenMetrics at {exporter.url}", file=sys.stderr, flush=True)
    return exporter
