"""The gzip bodies: one standard gzip member that any reader inflates to exactly the plain body."""

from __future__ import annotations

import gzip
import http.client
import shutil
import subprocess
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.export.collector import FrameCollector
from sectormon.export.exposition import Format
from sectormon.export.scrape import gzip_body
from sectormon.export.server import OpenMetricsExporter
from tests.export import a64fx48

GZIP_MAGIC = b"\x1f\x8b\x08"
"""A gzip member's first bytes: the two magic bytes, then deflate (the only method readers know)."""


def one_member(packed: bytes) -> bytes:
    """The data of ``packed``, asserting it is exactly one whole gzip member (Go's compress/gzip
    would read a second member or trailing bytes as more data, or fail on them)."""
    assert packed[:3] == GZIP_MAGIC
    assert packed[3] == 0  # no flags: no name, comment or extra field for a reader to skip
    inflater = zlib.decompressobj(wbits=31)
    data = inflater.decompress(packed)
    assert inflater.eof
    assert inflater.unused_data == b""
    return data


def scrapes() -> list[tuple[bytes, bytes]]:
    """The 48-core fixture's OpenMetrics and text bodies, plain and gzip, frame by frame."""
    collector = FrameCollector(a64fx48.header())
    out = []
    for frame in a64fx48.frames():
        collector.publish(frame)
        scrape = collector.scrape()
        for fmt in Format:
            out.append((scrape.body(fmt), scrape.body(fmt, gzipped=True)))
    return out


def test_the_48_core_gzip_bodies_inflate_to_the_plain_bodies() -> None:
    for plain, packed in scrapes():
        assert one_member(packed) == plain
        assert gzip.decompress(packed) == plain
        # The exposition repeats its labels line after line: a setting that stops finding the
        # repeats (level 0, Huffman or run-length only) ships a body several times larger.
        assert len(packed) * 10 < len(plain)


def test_gnu_gzip_reads_the_bodies() -> None:
    """A second, independent inflater (GNU gzip, as curl --compressed users have) checks the CRC and size."""
    command = shutil.which("gzip")
    if command is None:
        pytest.skip("the gzip command is not installed (apt-get install gzip)")
    for plain, packed in scrapes()[:2]:
        done = subprocess.run([command, "-dc"], input=packed, capture_output=True, check=True)
        assert done.stdout == plain


@given(st.binary(max_size=4096))
def test_any_bytes_round_trip(plain: bytes) -> None:
    assert one_member(gzip_body(plain)) == plain


def test_prometheus_client_encoder_bodies_are_gzipped_too() -> None:
    """An escaping sectormon does not write itself (prometheus_client's encoder) is gzipped the same way."""
    served = OpenMetricsExporter(port=0)
    served.start(a64fx48.header())
    try:
        served.publish(a64fx48.frames()[0])
        host, port = served.address
        bodies = []
        for encoding in ("identity", "gzip"):
            connection = http.client.HTTPConnection(host, port, timeout=10)
            accept = "application/openmetrics-text;version=1.0.0;escaping=dots"
            connection.request("GET", "/metrics", headers={"Accept": accept, "Accept-Encoding": encoding})
            response = connection.getresponse()
            assert response.status == 200
            bodies.append((response.getheader("Content-Encoding"), response.read()))
            connection.close()
    finally:
        served.close()
    (plain_encoding, plain), (packed_encoding, packed) = bodies
    assert plain_encoding is None
    assert packed_encoding == "gzip"
    assert one_member(packed) == plain
