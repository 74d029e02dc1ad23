"""The endpoint: GET (and HEAD) /metrics only, loopback by default, other paths and methods refused
untouched, a client that resets mid-response neither logged nor harmful."""

from __future__ import annotations

import gzip
import http.client
import socket
import struct
from collections.abc import Iterator

import pytest

from sectormon.errors import UsageError
from sectormon.export.listen import parse_listen
from sectormon.export.server import OpenMetricsExporter
from tests.export.frames import frame, header


@pytest.fixture(scope="module")
def exporter() -> Iterator[OpenMetricsExporter]:
    served = OpenMetricsExporter(port=0)
    served.start(header())
    served.publish(frame(1.0))
    yield served
    served.close()


def request(
    exporter: OpenMetricsExporter, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    host, port = exporter.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_binds_to_loopback_by_default(exporter: OpenMetricsExporter) -> None:
    assert exporter.address[0] == "127.0.0.1"
    assert parse_listen("9464") == ("127.0.0.1", 9464)


def test_get_metrics_serves_openmetrics_to_prometheus(exporter: OpenMetricsExporter) -> None:
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, headers, body = request(exporter, "GET", "/metrics", {"Accept": accept})
    assert status == 200
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    text = body.decode()
    assert text.endswith("# EOF\n")
    assert 'sectormon_ipc_instructions_per_cycle{cmg="",core="",host="node1"' in text


def test_plain_text_and_gzip(exporter: OpenMetricsExporter) -> None:
    status, headers, body = request(exporter, "GET", "/metrics?name[]=x", {"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert headers["Content-Encoding"] == "gzip"
    assert b"sectormon_frame_time_seconds" in gzip.decompress(body)


@pytest.mark.parametrize(
    "path", ["/", "/metrics/", "/metricsx", "/../metrics", "/debug", "/metrics#x", "/METRICS"]
)
def test_other_paths_are_not_found_and_render_nothing(exporter: OpenMetricsExporter, path: str) -> None:
    assert exporter.collector is not None
    before = exporter.collector.scrapes
    status, _, body = request(exporter, "GET", path)
    assert status == 404
    assert b"sectormon_" not in body
    assert exporter.collector.scrapes == before


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"])
def test_other_methods_are_not_allowed_and_render_nothing(exporter: OpenMetricsExporter, method: str) -> None:
    assert exporter.collector is not None
    before = exporter.collector.scrapes
    for path in ("/metrics", "/other"):
        status, headers, body = request(exporter, method, path)
        assert status == 405
        assert headers["Allow"] == "GET, HEAD"
        assert body == b""
    assert exporter.collector.scrapes == before
    # and the endpoint still serves the same frame afterwards
    status, _, body = request(exporter, "GET", "/metrics")
    assert status == 200
    assert exporter.collector.scrapes == before + 1
    assert b"sectormon_frames_total 1.0" in body


def test_head_answers_200_like_get_without_a_body(exporter: OpenMetricsExporter) -> None:
    """A probe's HEAD /metrics got 405 while GET got 200."""
    status, headers, body = request(exporter, "HEAD", "/metrics")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) > 0
    assert headers["Content-Type"].startswith("text/plain")
    assert request(exporter, "HEAD", "/other")[0] == 404


def _reset_mid_response(address: tuple[str, int]) -> None:
    """Send a scrape, then close with SO_LINGER 0: the server sees a reset while it answers."""
    with socket.create_connection(address, timeout=10) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n")


@pytest.mark.slow
def test_clients_that_reset_mid_response_leave_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """200 resets printed socketserver's 'Exception occurred during processing of request'
    traceback for each reset the server saw while answering."""
    served = OpenMetricsExporter(port=0)
    served.start(header())
    served.publish(frame(1.0))
    try:
        for _ in range(200):
            _reset_mid_response(served.address)
        status, _, body = request(served, "GET", "/metrics")  # served after every reset's handler ran
        assert status == 200 and b"sectormon_frames_total 1.0" in body
    finally:
        served.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err


def test_a_taken_port_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=rf"--openmetrics 127.0.0.1:{port}: cannot listen there"):
            OpenMetricsExporter(port=port)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9464", ("127.0.0.1", 9464)),
        ("0.0.0.0:9464", ("0.0.0.0", 9464)),
        ("node1:0", ("node1", 0)),
        ("[::1]:9464", ("::1", 9464)),
    ],
)
def test_parse_listen(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["", "x", "70000", "host:", ":9464", "::1:9464", "[::1]9464", "-1"])
def test_parse_listen_refuses_bad_values(text: str) -> None:
    with pytest.raises(UsageError, match="--openmetrics"):
        parse_listen(text)


def test_close_is_idempotent_and_frees_the_port() -> None:
    served = OpenMetricsExporter(port=0)
    served.start(header())
    port = served.address[1]
    served.close()
    served.close()
    again = OpenMetricsExporter(port=port)
    again.close()
