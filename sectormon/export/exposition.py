"""The two text formats a scrape is served in, written from series made once per scope.

prometheus_client's encoders escape every label of every sample on every scrape; a 48-core frame
has about 2,000 samples of eight labels, which makes the encoders the endpoint's main cost. Here a
series' label text is escaped once, when its scope first appears (:class:`SeriesBook`), and a scrape
only formats the values. The output is the encoders' own, byte for byte, for the escapings that
leave legacy names as they are (``underscores``, prometheus_client's default, and
``allow-utf-8``); sectormon's metric and label names are all legacy names
(:mod:`sectormon.export.names`). :func:`choose` falls back to prometheus_client's encoder for any
other escaping. The tests hold both paths to the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from sectormon.export.values import go_floats

Encoder = Callable[[Collector], bytes]

SAMPLE_SUFFIX = {"counter": "_total", "info": "_info"}
"""The suffix a family's samples carry after the family name (both formats)."""

TEXT_TYPE = {"info": "gauge", "stateset": "gauge"}
"""Types the 0.0.4 text format does not have, as it spells them."""

UNDERSCORES = "underscores"
"""The escaping a Content-Type without one means (prometheus_client's default)."""

NAME_KEEPING_ESCAPINGS = (UNDERSCORES, "allow-utf-8")
"""Escapings (the Accept header's ``escaping=``) that write a legacy metric or label name unchanged."""


class Format(Enum):
    """A text format of the exposition."""

    OPENMETRICS = "openmetrics"
    TEXT = "text"


@dataclass(frozen=True, slots=True)
class Choice:
    """What a request's Accept header gets: the Content-Type, and either a :class:`Format` this
    module writes or prometheus_client's encoder for an escaping it does not."""

    content_type: str
    format: Format | None
    encoder: Encoder


def choose(accept: str) -> Choice:
    """prometheus_client's content negotiation, with this module's writer where its output is the
    encoder's own."""
    encoder, content_type = choose_encoder(accept)
    media, *params = (part.strip() for part in content_type.split(";"))
    escaping = UNDERSCORES
    for param in params:
        key, _, value = param.partition("=")
        if key == "escaping":
            escaping = value
    known = {"application/openmetrics-text": Format.OPENMETRICS, "text/plain": Format.TEXT}.get(media)
    writes = known if escaping in NAME_KEEPING_ESCAPINGS else None
    return Choice(content_type, writes, encoder)


def escape_label_value(value: str) -> str:
    """A label value as both formats quote it."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class SeriesBook:
    """Every series written so far, by its sample line up to the value: a series' label text is
    escaped once, and prometheus_client's encoders get its labels back from the line.

    A series' ``labels`` may be shared by every series of a scope (``extra``, the family's own
    label such as ``metric="IPC"``, is kept apart), so the book holds one mapping per scope.
    """

    def __init__(self) -> None:
        self._labels: dict[str, tuple[Mapping[str, str], tuple[str, str] | None]] = {}

    def line(self, sample_name: str, labels: Mapping[str, str], extra: tuple[str, str] | None = None) -> str:
        """The series' line up to its value, labels sorted by name as both formats write them."""
        items = sorted([*labels.items(), *([extra] if extra else [])])
        text = ",".join(f'{name}="{escape_label_value(value)}"' for name, value in items)
        line = f"{sample_name}{{{text}}} " if text else f"{sample_name} "
        self._labels[line] = (labels, extra)
        return line

    def labels(self, line: str) -> dict[str, str]:
        """The labels of the series ``line`` starts, as prometheus_client's samples hold them."""
        labels, extra = self._labels[line]
        return {**labels, **dict([extra] if extra else [])}


@dataclass(slots=True)
class Family:
    """One metric family of a scrape, as prometheus_client's ``Metric`` describes it (``name``
    with the unit suffix, without ``_total``/``_info``), with its samples: a line from a
    :class:`SeriesBook` and a value (a float: an int would be written without its ``.0``)."""

    name: str
    kind: str  # gauge, counter, info or stateset
    help: str
    unit: str = ""
    samples: list[tuple[str, float]] = field(default_factory=list)

    @property
    def sample_name(self) -> str:
        return self.name + SAMPLE_SUFFIX.get(self.kind, "")


def sample_lines(family: Family) -> str:
    """The family's sample lines (the same in both formats): each series' line up to its value,
    the value, a newline, joined once."""
    if not family.samples:
        return ""
    lines, values = zip(*family.samples, strict=True)
    pieces = ["\n"] * (3 * len(lines))
    pieces[0::3] = lines
    pieces[1::3] = go_floats(values)
    return "".join(pieces)


def head(family: Family, fmt: Format) -> str:
    """The family's HELP, TYPE (and UNIT) lines in ``fmt``."""
    if fmt is Format.OPENMETRICS:
        text = escape_label_value(family.help)
        unit = f"# UNIT {family.name} {family.unit}\n" if family.unit else ""
        return f"# HELP {family.name} {text}\n# TYPE {family.name} {family.kind}\n{unit}"
    name = family.sample_name
    text = family.help.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {text}\n# TYPE {name} {TEXT_TYPE.get(family.kind, family.kind)}\n"


def render(families: Iterable[Family], blocks: Iterable[str], fmt: Format) -> bytes:
    """The exposition of ``families`` whose sample lines are ``blocks`` (one per family, from
    :func:`sample_lines`, so two formats of one scrape format the values once)."""
    parts: list[str] = []
    for family, block in zip(families, blocks, strict=True):
        parts.append(head(family, fmt))
        parts.append(block)
    if fmt is Format.OPENMETRICS:
        parts.append("# EOF\n")
    return "".join(parts).encode()
