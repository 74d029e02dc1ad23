"""Reader for fapp ``cpupa`` XML exports (``fapppx -A -Icpupa -txml``): one event set per file.

It relies only on what the PMU document's comparison script and fapp's manual show: counts as
``<event name="0x0011">N</event>`` elements grouped in one element per row, and the thread, process,
region and call a row belongs to found in the elements around it, by name or attribute. Groups
outside any thread are summaries and are skipped, as the CSV reader skips non-thread rows. The input
is untrusted: parsed with defusedxml, every problem a ``DataError`` naming file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from xml.sax import SAXParseException
from xml.sax.handler import ContentHandler
from xml.sax.xmlreader import AttributesImpl, Locator

import defusedxml.sax
from defusedxml import DefusedXmlException

from sectormon.errors import DataError
from sectormon.fapp.model import EventSet, RowKey, ThreadRow, add_row, parse_count

EVENT_TAG = "event"
TIMER = "CNTVCT"
CYCLES = "PMCCNTR"
_CODE_RE = re.compile(r"^0x[0-9a-fA-F]{1,8}$")
_ID_ATTRIBUTES = ("id", "no", "number")
_EXPORT_FIX = "export with 'fapppx -A -Icpupa -txml'"


@dataclass(slots=True)
class _Element:
    tag: str
    attrs: Mapping[str, str]
    line: int
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # event name -> (value, line)


@dataclass(frozen=True, slots=True)
class _Context:
    """Where a group of events belongs, from the elements around it."""

    thread: int | None
    spawn: int
    process: int
    region_name: str
    region_number: int
    call: int


def _number(text: str, what: str, path: str, line: int) -> int:
    return parse_count(text.strip(), what, path, line)


def _context(stack: list[_Element], path: str) -> _Context:
    """The thread, process and region of the innermost element of ``stack`` (module docstring)."""
    found: dict[str, int | str] = {}
    for element in reversed(stack):
        attrs = {k.lower(): v for k, v in element.attrs.items()}
        for key in ("thread", "spawn", "process"):
            if key in found:
                continue
            if element.tag == key:
                ident = next((attrs[a] for a in _ID_ATTRIBUTES if a in attrs), None)
                if ident is not None:
                    found[key] = _number(ident, f"<{key}> {ident!r}", path, element.line)
            elif key in attrs:
                found[key] = _number(attrs[key], f"{key} attribute", path, element.line)
        if "region_name" not in found:
            if element.tag == "region" and "name" in attrs:
                found["region_name"] = attrs["name"].strip()
                number = next((attrs[a] for a in _ID_ATTRIBUTES if a in attrs), None)
                if number is not None and "region_number" not in found:
                    found["region_number"] = _number(number, "region number", path, element.line)
            elif "region" in attrs or "region_name" in attrs:
                found["region_name"] = (attrs.get("region_name") or attrs.get("region") or "").strip()
        if "region_number" not in found and "region_number" in attrs:
            found["region_number"] = _number(
                attrs["region_number"], "region_number attribute", path, element.line
            )
        if "call" not in found and "call" in attrs:
            found["call"] = _number(attrs["call"], "call attribute", path, element.line)
    thread = found.get("thread")
    return _Context(
        thread=thread if isinstance(thread, int) else None,
        spawn=int(found.get("spawn", 0)),
        process=int(found.get("process", 0)),
        region_name=str(found.get("region_name", "")),
        region_number=int(found.get("region_number", 0)),
        call=int(found.get("call", 1)),
    )


@dataclass(frozen=True, slots=True)
class _Group:
    line: int
    context: _Context
    codes: tuple[int, ...]
    counts: Mapping[str, int]


class _Handler(ContentHandler):
    """Collects the groups of ``<event>`` elements with their context; raises DataError on any problem."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.locator: Locator | None = None
        self.stack: list[_Element] = []
        self.groups: list[_Group] = []
        self.text: list[str] | None = None  # inside an <event>: its text so far
        self.last_line = 1  # kept: the locator's parser is gone once parsing ends

    def line(self) -> int:
        line = self.locator.getLineNumber() if self.locator is not None else None
        self.last_line = line or self.last_line
        return self.last_line

    def endDocument(self) -> None:
        self.line()
        self.locator = None

    def setDocumentLocator(self, locator: Locator) -> None:
        self.locator = locator

    def startElement(self, name: str, attrs: AttributesImpl) -> None:
        if self.text is not None:
            raise DataError(
                self.path, self.line(), f"<{name}> inside an <{EVENT_TAG}>", "an event holds a count only"
            )
        tag = name.rpartition(":")[2].lower()
        self.stack.append(_Element(tag, dict(attrs.items()), self.line()))
        if tag == EVENT_TAG:
            self.text = []

    def characters(self, content: str) -> None:
        if self.text is not None:
            self.text.append(content)

    def endElement(self, name: str) -> None:
        element = self.stack.pop()
        if element.tag == EVENT_TAG:
            text, self.text = "".join(self.text or ()), None
            self._event(element, text)
        elif element.counts:
            self._group(element)

    def _event(self, element: _Element, text: str) -> None:
        name = next((v for k, v in element.attrs.items() if k.lower() == "name"), None)
        if name is None:
            raise DataError(self.path, element.line, f"<{EVENT_TAG}> without a name attribute", _EXPORT_FIX)
        name = name.strip()
        if name.upper() in (TIMER, CYCLES):
            name = name.upper()
        elif _CODE_RE.match(name):
            name = f"0x{int(name, 16):04x}"
        else:
            raise DataError(
                self.path,
                element.line,
                f"event name {name!r} is neither {TIMER}, {CYCLES} nor a hex event code like 0x0011",
                _EXPORT_FIX,
            )
        if not self.stack:
            raise DataError(self.path, element.line, f"<{EVENT_TAG}> outside any element", _EXPORT_FIX)
        parent = self.stack[-1]
        if name in parent.counts:
            raise DataError(
                self.path,
                element.line,
                f"event {name} appears twice in the group (also on line {parent.counts[name][1]})",
                "an event set lists each event once",
            )
        parent.counts[name] = (_number(text, f"event {name}", self.path, element.line), element.line)

    def _group(self, element: _Element) -> None:
        # CNTVCT and PMCCNTR may be absent: the PMU document's comparison script reads bare
        # <event name="0x0011">N</event> elements (its section 6.6), and such exports have counts only.
        codes = tuple(int(name, 16) for name in element.counts if name not in (TIMER, CYCLES))
        context = _context([*self.stack, element], self.path)
        counts = {name: value for name, (value, _) in element.counts.items()}
        self.groups.append(_Group(element.line, context, codes, counts))


def _rows(groups: list[_Group], path: str) -> tuple[tuple[int, ...], tuple[ThreadRow, ...]]:
    """The thread rows (module docstring: summaries skipped, thread 0 when no group names a thread)."""
    named = [g for g in groups if g.context.thread is not None]
    if named:
        used = named
    else:
        regions: dict[tuple[str, int], int] = {}
        for g in groups:
            key = (g.context.region_name, g.context.region_number)
            if key in regions:
                raise DataError(
                    path,
                    g.line,
                    f"a second group of events for region {key[0]!r} (the first on line {regions[key]}) "
                    "and none names its thread",
                    "put each group in a <thread id=...> element",
                )
            regions[key] = g.line
        used = groups
    codes = used[0].codes
    rows: dict[RowKey, ThreadRow] = {}
    for g in used:
        if g.codes != codes:
            raise DataError(
                path,
                g.line,
                f"events {_names(g.codes)} differ from the group on line {used[0].line} ({_names(codes)})",
                "put each event set in its own file",
            )
        for name in (TIMER, CYCLES):
            if (name in g.counts) != (name in used[0].counts):
                has, lacks = (g.line, used[0].line) if name in g.counts else (used[0].line, g.line)
                raise DataError(
                    path,
                    g.line,
                    f"the group on line {has} has {name}, the one on line {lacks} has none",
                    "every group of a file has the same columns",
                )
        c = g.context
        row = ThreadRow(
            line=g.line,
            spawn=c.spawn,
            process=c.process,
            thread=c.thread if c.thread is not None else 0,
            region_name=c.region_name,
            region_number=c.region_number,
            call=c.call,
            cntvct=g.counts.get(TIMER),
            pmccntr=g.counts.get(CYCLES),
            counts={code: g.counts[f"0x{code:04x}"] for code in g.codes},
        )
        add_row(rows, row, path)
    return codes, tuple(rows.values())


def _names(codes: tuple[int, ...]) -> str:
    return ",".join(f"0x{code:04x}" for code in codes) or "none"


def parse_cpupa_xml(data: bytes, path: str, name: str) -> EventSet:
    """Parse one cpupa XML export."""
    handler = _Handler(path)
    try:
        defusedxml.sax.parseString(data, handler)
    except SAXParseException as exc:
        raise DataError(
            path, exc.getLineNumber(), f"malformed XML ({exc.getMessage()})", _EXPORT_FIX
        ) from None
    except LookupError as exc:  # an XML declaration naming an encoding Python does not know
        raise DataError(path, handler.line(), f"malformed XML ({exc})", "export the XML as UTF-8") from None
    except DefusedXmlException as exc:
        raise DataError(
            path, handler.line(), f"XML with a DTD or entities ({type(exc).__name__})", "fapp's XML has none"
        ) from None
    if not handler.groups:
        raise DataError(path, handler.line(), f"no <{EVENT_TAG} name=...> elements", _EXPORT_FIX)
    codes, rows = _rows(handler.groups, path)
    return EventSet(name, path, codes, rows)
