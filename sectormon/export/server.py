"""The OpenMetrics endpoint: GET (and HEAD) of one path, nothing else.

prometheus_client's own ``start_http_server`` answers every path and method; a per-node service
on a shared cluster should not. This server answers ``GET /metrics`` (a query string is ignored)
with the collector's families in the format the scraper asks for (OpenMetrics for Prometheus,
the 0.0.4 text format otherwise, gzip when accepted), 404 for any other path and 405 for any
other method, without touching the collector. HEAD answers as GET without the body (a
monitoring probe checks the endpoint so). It binds to loopback unless told otherwise. A client
that resets its connection mid-response is its own business: nothing on stderr, the server goes
on (socketserver would print a traceback per reset).
"""

from __future__ import annotations

import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import gzip_accepted
from prometheus_client.registry import CollectorRegistry

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.errors import UsageError
from sectormon.export.collector import FrameCollector
from sectormon.export.exposition import choose
from sectormon.export.listen import DEFAULT_BIND, METRICS_PATH
from sectormon.export.scopes import DEFAULT_PROCS
from sectormon.export.scrape import gzip_body
from sectormon.files.text import print_warning

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may take to send its request: a stalled client does not keep a thread."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT

    def version_string(self) -> str:
        return "sectormon"

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.command not in ("GET", "HEAD"):
            self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return False
        return True

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if self.path.partition("?")[0] != METRICS_PATH:
            self.send_error(HTTPStatus.NOT_FOUND, explain=f"only {METRICS_PATH} is served here")
            return
        choice = choose(self.headers.get("Accept", ""))
        gzipped = gzip_accepted(self.headers.get("Accept-Encoding", ""))
        if choice.format is not None:
            body = self.server.collector.scrape().body(choice.format, gzipped=gzipped)
        else:
            body = choice.encoder(self.server.registry)
            if gzipped:
                body = gzip_body(body)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", choice.content_type)
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        """No line per request: a scrape a second would fill the service's log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # socketserver's 5 makes a burst of connections wait 1 s for a SYN retry
    collector: FrameCollector
    registry: CollectorRegistry

    def handle_error(self, request: Any, _client_address: Any) -> None:
        """A client gone mid-request (reset, closed, timed out) is not the server's fault and is
        not logged; anything else is one line on stderr, and serving goes on."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print_warning(f"OpenMetrics request failed: {exc!r}")


class _Server6(_Server):
    address_family = socket.AF_INET6


class OpenMetricsExporter:
    """A frame subscriber that serves the newest frame. The port is bound when it is made (a
    taken port fails before the session starts anything); :meth:`start` takes the session's header
    and serves; :meth:`publish` is called with each frame from the session's thread; :meth:`close`
    stops serving."""

    def __init__(
        self,
        *,
        host: str = DEFAULT_BIND,
        port: int,
        threads: bool = False,
        source: str | None = None,
        procs: int = DEFAULT_PROCS,
    ) -> None:
        """``threads``, ``source`` and ``procs``: see :class:`FrameCollector`."""
        self._threads = threads
        self._source = source
        self._procs = procs
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
        except OSError as exc:
            raise UsageError(
                f"--openmetrics {where}: cannot listen there ({exc.strerror or exc}); "
                "give a free port (0 picks one) or another address"
            ) from exc
        self._server = server
        self._thread: threading.Thread | None = None
        self.collector: FrameCollector | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The address and port served (the port the system picked for port 0)."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}{METRICS_PATH}"

    def publish(self, frame: Frame) -> None:
        collector = self.collector
        if collector is not None:
            collector.publish(frame)

    def start(self, header: Header) -> None:
        """Serve the session ``header`` describes, in a background thread."""
        if self._thread is not None:
            return
        collector = FrameCollector(header, source=self._source, threads=self._threads, procs=self._procs)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        self._server.registry = registry
        self._server.collector = collector
        self.collector = collector
        thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.5}, name="sectormon-openmetrics"
        )
        thread.daemon = True
        self._thread = thread
        thread.start()

    def close(self) -> None:
        """Stop serving and release the port. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._server.shutdown()
            thread.join(timeout=5.0)
        self._server.server_close()
