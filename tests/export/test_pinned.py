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
from tests.export.frames import frame
from tests.export.frames import header as frames_header
from tests.export.test_procs import _with_procs

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


# Processes (pid, comm, rank on every series once one is counted) and thread coverage, with and
# without threads: (threads, frames published) -> (OpenMetrics, 0.0.4 text) sha256, as served
# before the scrape path was made fast.
PINNED_PROCS = {
    (False, 1): (
        "ca87dd28e21f227e74636e70f24da70db52bd31bc4a16a02f5f71a5e123b3814",
        "5594f6e088cb8fe6ccb32a8e2813943f2999a93d5a673e1ed6d30f2a6ef414f9",
    ),
    (False, 2): (
        "63861f7086583edc95ec75bec235102029b11cc44348c17d80bf05be032709cd",
        "6945c6375b961dfec48e2e4c03d572144f7309e197f9489c16535c94734bf99c",
    ),
    (False, 3): (
        "ce232b8e81a7d30369437a527582ec7861a07b187320a9c40cf4b11971f8b181",
        "293e8826ee15d1d9d317f92ebe9b75c7093d0fa1d7f09bc79a9d6b66208bc62c",
    ),
    (True, 1): (
        "03033b9e79d2493e19141f7b4d3f28e5a5b56b7c691b69f9490c9dc94f9020b4",
        "1739deeafeb53cf97964e9417cd9fa4b5cd938e57439540124a5640900ca40d2",
    ),
    (True, 2): (
        "0166a99408fcd3d8b0b28e07000246e70850bfa4c4d085f4ab97989dc232754c",
        "6d79e9e8c65f19d93dc76170d66a56be0090b9b63fa8baa64aeead2e4a62933e",
    ),
    (True, 3): (
        "e1ca4904b96dba82b6bf259ebaa907f44b63a0f618e0afb430b8190b1510b762",
        "4e658049e8f4c9885278380ac05695c88f470736e03eb47e6b98755910077ca9",
    ),
}


@pytest.mark.parametrize("threads", [False, True])
def test_processes_and_thread_coverage_are_the_pinned_bytes(threads: bool) -> None:
    served = OpenMetricsExporter(port=0, threads=threads, procs=4)
    served.start(frames_header())
    try:
        sequence = (frame(0.5), _with_procs(1.0, extra=10), _with_procs(2.0))
        for count, published in enumerate(sequence, start=1):
            served.publish(published)
            accepts = ("application/openmetrics-text;version=1.0.0", "")
            for accept, digest in zip(accepts, PINNED_PROCS[(threads, count)], strict=True):
                _, body = get(served, accept)
                assert hashlib.sha256(body).hexdigest() == digest, (threads, count, accept)
    finally:
        served.close()
