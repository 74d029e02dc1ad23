"""YAML from files users hand us (profiles, themes): safe tags only, with bounds on nesting,
alias expansion, self-reference, integer length, file size and encoding; each refusal is one error
with its line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent, MappingEndEvent, MappingStartEvent
from yaml.nodes import Node

MAX_BYTES = 1 << 20
"""A profile or theme larger than this is not one (the A64FX profile is 13 KB)."""

MAX_DEPTH = 64
"""Nesting levels, aliases expanded (a profile nests four)."""

MAX_NODES = 200_000
"""Nodes of a document with every alias expanded (the A64FX profile has about 1,500)."""

MAX_INT_CHARS = 40
"""Characters of an integer scalar: a u64 has 20 digits, a hexadecimal code far fewer."""

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimitError(yaml.MarkedYAMLError):
    """A document beyond :mod:`sectormon.profiles.safe_yaml`'s bounds; ``problem_mark`` is where."""


class YamlInputError(ValueError):
    """A file that cannot be read as YAML text (too large, not UTF-8)."""


class BoundedSafeConstructor(yaml.constructor.SafeConstructor):
    """The safe constructor, refusing integers longer than :data:`MAX_INT_CHARS`."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(node.value)
        if len(text) > MAX_INT_CHARS:
            raise YamlLimitError(
                None,
                None,
                f"an integer of {len(text)} characters (at most {MAX_INT_CHARS}: no value here is that long)",
                node.start_mark,
            )
        value: int = super().construct_yaml_int(node)
        return value


BoundedSafeConstructor.add_constructor(  # type: ignore[type-var]  # the stubs' bound is too narrow
    "tag:yaml.org,2002:int", BoundedSafeConstructor.construct_yaml_int
)


class BoundedSafeLoader(BoundedSafeConstructor, _Base):
    """``yaml.SafeLoader`` (libyaml's parser when present) with a composer that bounds depth and
    expanded size and refuses self-referencing aliases."""

    def __init__(self, stream: str) -> None:
        _Base.__init__(self, stream)
        self.anchors: dict[str, Node] = {}
        self._frames: list[list[int]] = [[0, 0]]  # per open node: [expanded size, height below]
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)
        self._total = 0

    # PyYAML's own composer, in Python even over libyaml's parser, so the bounds below apply.
    get_single_node = Composer.get_single_node
    compose_document = Composer.compose_document
    compose_scalar_node = Composer.compose_scalar_node
    compose_sequence_node = Composer.compose_sequence_node
    compose_mapping_node = Composer.compose_mapping_node

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        mark: Any = event.start_mark
        if isinstance(event, AliasEvent):
            node: Any = Composer.compose_node(self, parent, index)
            known = self._sizes.get(id(node))
            if known is None:
                raise YamlLimitError(
                    None, None, f"alias *{event.anchor} refers to a node that contains it", mark
                )
            self._add(*known, mark)
            return node
        if len(self._frames) > MAX_DEPTH:
            raise YamlLimitError(None, None, f"nesting deeper than {MAX_DEPTH} levels", mark)
        self._frames.append([1, 0])
        node = Composer.compose_node(self, parent, index)
        size, height = self._frames.pop()
        self._sizes[id(node)] = (size, height + 1)
        self._add(size, height + 1, mark)
        return node

    def _add(self, size: int, height: int, mark: Any) -> None:
        """A child of ``size`` nodes and ``height`` levels joins the node being composed."""
        frame = self._frames[-1]
        frame[0] += size
        frame[1] = max(frame[1], height)
        self._total += size
        if self._total > MAX_NODES:
            raise YamlLimitError(
                None, None, f"the document expands to more than {MAX_NODES} nodes (aliases repeat)", mark
            )
        if len(self._frames) - 1 + height > MAX_DEPTH:
            raise YamlLimitError(
                None, None, f"nesting deeper than {MAX_DEPTH} levels (aliases expanded)", mark
            )


def compose(text: str) -> Node | None:
    """The document's node graph (with lines), within the bounds; ``None`` for an empty one."""
    try:
        node: Node | None = yaml.compose(text, Loader=BoundedSafeLoader)
    except yaml.reader.ReaderError as exc:
        raise _with_line(exc, text) from None
    except yaml.scanner.ScannerError as exc:
        raise _as_limit(exc) from None
    return node


def load(text: str) -> Any:
    """``yaml.safe_load(text)``, within the bounds (the loader is a ``SafeLoader``)."""
    try:
        return yaml.load(text, Loader=BoundedSafeLoader)
    except yaml.reader.ReaderError as exc:
        raise _with_line(exc, text) from None
    except yaml.scanner.ScannerError as exc:
        raise _as_limit(exc) from None


def load_top_level_key(text: str, key: str) -> Any:
    """The value of ``key`` in the document's top-level mapping, within the bounds, composing the
    keys before it and none after (``None``: no such key, or no mapping). A profile's ``match``
    comes before its events: choosing the built-in profile that fits the host reads each one's
    ``match`` this way, and parses only the chosen one (docs/perf-tuning.md, bench_start.py)."""
    loader = BoundedSafeLoader(text)
    try:
        loader.get_event()  # the stream's start
        loader.get_event()  # the document's
        if not loader.check_event(MappingStartEvent):
            return None
        loader.get_event()
        while not loader.check_event(MappingEndEvent):
            name = loader.compose_node(None, None)
            value = loader.compose_node(None, None)
            if isinstance(name, yaml.ScalarNode) and name.value == key:
                return loader.construct_document(value)
        return None
    except yaml.reader.ReaderError as exc:
        raise _with_line(exc, text) from None
    except yaml.scanner.ScannerError as exc:
        raise _as_limit(exc) from None
    finally:
        loader.dispose()


def _as_limit(exc: yaml.scanner.ScannerError) -> yaml.MarkedYAMLError:
    """libyaml's own depth limit (PyYAML 6.0.4 and later stop deep flow nesting in the scanner,
    before the composer counts it) worded as this module's, so the error reads the same on every
    PyYAML; any other scanner error as it is."""
    if exc.problem and "maximum nesting depth" in exc.problem:
        return YamlLimitError(None, None, f"nesting deeper than {MAX_DEPTH} levels", exc.problem_mark)
    return exc


def _with_line(exc: yaml.reader.ReaderError, text: str) -> yaml.MarkedYAMLError:
    """A character YAML does not allow (a control character) as an error with its line: the
    reader's own names only a position, over two lines."""
    line = text.count("\n", 0, exc.position)
    mark = yaml.Mark("<text>", exc.position, line, 0, None, 0)
    problem = f"unacceptable character #x{exc.character:04x}: {exc.reason}"
    return yaml.MarkedYAMLError(None, None, problem, mark)


def read_yaml_text(path: str | Path) -> str:
    """A YAML file's text: at most :data:`MAX_BYTES`, UTF-8. ``OSError`` when it cannot be read,
    :class:`YamlInputError` (one line) when it is not text this loader takes."""
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlInputError(f"larger than {MAX_BYTES // 1024} KiB: not a profile or theme")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlInputError(
            f"line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None
