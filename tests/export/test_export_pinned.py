"""What the endpoint serves for the 48-core fixture, pinned byte for byte.

The digests are of the bodies served before the scrape path was made fast: any change to what a
scraper receives, in either format, fails here.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
from collections.abc import Iterator

import pytest

from sectormon.export.server import OpenMetricsExporter
from tests.export import a64fx48

PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
TEXT = "text/plain; version=0.0.4; charset=utf-8"

# (frames published, Accept) -> (Content-Type, length, sha256 of the body)
PINNED = {
    (0, PROMETHEUS_ACCEPT): (
        OPENMETRICS,
        None,
        "ce0c56a0dc9a84d0086266ba18c0d17aa070428dc985d21973c9b21a360fca77",
    ),
    (0, ""): (TEXT, None, "9a5eea0908d081d23925c2bd4d6360ef8122454467922d6f435a193db3451312"),
    (2, PROMETHEUS_ACCEPT): (
        OPENMETRICS,
        270792,
        "7efb1725c9d3aaeba6fb5d064def36f7eb483889f15481e82a4469ade3dffdd9",
    ),
    (2, ""): (TEXT, 269476, "80633c48ac264b0cb7c075a643944bcaba3f3384a063422fe27a47ca50ae265f"),
    (3, PROMETHEUS_ACCEPT): (
        OPENMETRICS,
        272760,
        "5b3165fd4033cfa66d16ee11400705a5d8bb7bb2aa7173b112e30996f25d4382",
    ),
    (3, ""): (TEXT, 271444, "7d04b14631b3c2af39fbe4804ee4d974fb2309598f87a7dc4867ca8afd975725"),
}


@pytest.fixture
def exporter() -> Iterator[OpenMetricsExporter]:
    served = OpenMetricsExporter(port=0)
    served.start(a64fx48.header())
    yield served
    served.close()


def get(exporter: OpenMetricsExporter, accept: str, *, gzipped: bool = False) -> tuple[str, bytes]:
    host, port = exporter.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Accept": accept} if accept else {}
    if gzipped:
        headers["Accept-Encoding"] = "gzip"
    try:
        connection.request("GET", "/metrics", headers=headers)
        response = connection.getresponse()
        assert response.status == 200
        body = response.read()
        if gzipped:
            assert response.getheader("Content-Encoding") == "gzip"
            body = gzip.decompress(body)
        return response.getheader("Content-Type") or "", body
    finally:
        connection.close()


def test_the_48_core_scrapes_are_the_pinned_bytes(exporter: OpenMetricsExporter) -> None:
    frames = a64fx48.frames()
    published = 0
    for (count, accept), (content_type, length, digest) in PINNED.items():
        while published < count:
            exporter.publish(frames[published])
            published += 1
        for gzipped in (False, True):
            served_type, body = get(exporter, accept, gzipped=gzipped)
            assert served_type == content_type
            if length is not None:
                assert len(body) == length, (count, accept)
            assert hashlib.sha256(body).hexdigest() == digest, (count, accept, gzipped)
