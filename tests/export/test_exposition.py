"""The endpoint's own writer against prometheus_client's encoders: the same bytes, any input."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from sectormon.export.collector import FrameCollector
from sectormon.export.exposition import Family, Format, SeriesBook, choose, render, sample_lines
from sectormon.export.values import go_float
from tests.export import a64fx48
from tests.export.frames import frame, header

ACCEPTS = [
    "",  # curl, PCP's pmdaopenmetrics: the 0.0.4 text format
    "*/*",
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",  # Prometheus 2
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
    "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3",  # Prometheus 3
    "application/openmetrics-text;version=2.0.0",
    "application/openmetrics-text",
    "text/plain;version=1.0.0;escaping=underscores",
    "application/openmetrics-text;version=1.0.0;escaping=dots",  # prometheus_client's own encoder
    "text/plain;version=1.0.0;escaping=values",
]


def served(collector: FrameCollector, registry: CollectorRegistry, accept: str) -> tuple[bytes, bytes]:
    """What the endpoint serves for ``accept``, and prometheus_client's encoder on the same families."""
    choice = choose(accept)
    reference = choice.encoder(registry)
    if choice.format is None:
        return reference, reference
    return collector.scrape().body(choice.format), reference


def registered(collector: FrameCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


@pytest.mark.parametrize("accept", ACCEPTS)
def test_the_48_core_frames_are_prometheus_clients_bytes(accept: str) -> None:
    collector = FrameCollector(a64fx48.header())
    registry = registered(collector)
    frames = a64fx48.frames()
    for count in range(len(frames) + 1):
        if count:
            collector.publish(frames[count - 1])
        ours, reference = served(collector, registry, accept)
        assert ours == reference, (accept, count)


@pytest.mark.parametrize("accept", ACCEPTS)
def test_threads_a_seek_back_and_odd_values_are_prometheus_clients_bytes(accept: str) -> None:
    collector = FrameCollector(header(), threads=True, source="replay")
    registry = registered(collector)
    odd = frame(2.0, cycles=1e300)
    odd.total.coverage["IPC"] = math.nan
    odd.cmgs["0"].metrics["IPC"] = -2.5e7
    odd.cores["12"].coverage["L1D_miss_rate"] = math.inf
    for published in (frame(1.0), odd, frame(0.5, cycles=1.5e6)):
        collector.publish(published)
        ours, reference = served(collector, registry, accept)
        assert ours == reference


def test_only_name_keeping_escapings_are_written_here() -> None:
    assert choose("").format is Format.TEXT
    assert choose("text/plain;version=1.0.0;escaping=allow-utf-8").format is Format.TEXT
    assert choose("application/openmetrics-text;version=1.0.0").format is Format.OPENMETRICS
    assert choose("application/openmetrics-text;version=1.0.0;escaping=dots").format is None
    assert choose("application/openmetrics-text;version=1.0.0;escaping=values").format is None
    for accept in ACCEPTS:
        assert choose(accept).content_type == choose_encoder(accept)[1]


def test_a_frame_is_written_once_however_many_scrape_it() -> None:
    collector = FrameCollector(a64fx48.header())
    frames = a64fx48.frames()
    collector.publish(frames[0])
    first = collector.scrape()
    body = first.body(Format.OPENMETRICS, gzipped=True)
    again = collector.scrape()
    assert again is first
    assert again.body(Format.OPENMETRICS, gzipped=True) is body
    assert collector.scrapes == 2
    collector.publish(frames[1])
    assert collector.scrape() is not first


@given(st.floats())
def test_go_float_is_prometheus_clients(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


label_values = st.text(st.characters(codec="utf-8"), max_size=12)


class OneFamily:
    """A prometheus_client collector of one family, to compare the encoders with :func:`render`."""

    def __init__(self, family: Family, book: SeriesBook) -> None:
        self.family = family
        self.book = book

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.family.name, self.family.help, self.family.kind, self.family.unit)
        for line, value in self.family.samples:
            metric.add_sample(self.family.sample_name, self.book.labels(line), value)
        yield metric


@given(
    kind=st.sampled_from(["gauge", "counter", "info", "stateset"]),
    unit=st.sampled_from(["", "ratio"]),
    help_text=st.text(max_size=20),
    rows=st.lists(st.tuples(label_values, label_values, st.floats()), max_size=4),
)
def test_label_values_and_help_are_escaped_as_prometheus_client_does(
    kind: str, unit: str, help_text: str, rows: list[tuple[str, str, float]]
) -> None:
    name = f"sectormon_x_{unit}" if unit and kind in ("gauge", "counter") else "sectormon_x"
    family = Family(name, kind, help_text, unit if kind in ("gauge", "counter") else "")
    book = SeriesBook()
    for host, event, value in rows:
        family.samples.append((book.line(family.sample_name, {"host": host}, ("event", event)), value))
    registry = registered(OneFamily(family, book))
    for accept in ("", "application/openmetrics-text;version=1.0.0"):
        choice = choose(accept)
        assert choice.format is not None
        assert render([family], [sample_lines(family)], choice.format) == choice.encoder(registry)
