"""Where the OpenMetrics endpoint listens: ``[HOST:]PORT``, loopback unless an address is given."""

from __future__ import annotations

from sectormon.errors import UsageError

DEFAULT_BIND = "127.0.0.1"
METRICS_PATH = "/metrics"


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
