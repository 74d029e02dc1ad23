"""JSON that every strict reader accepts: never ``NaN`` or ``Infinity``; and JSON input decoded
with a limit on nesting.

Python's ``json`` writes ``NaN``/``Infinity`` by default, which jq, JavaScript and our own
reader refuse. Every one-object writer (``compare --json``, ``fapp --json``, ``check --json``,
``events --json``, ``sim --summary``) goes through :func:`dumps`: a non-finite number is an
unknown value, so it becomes ``null`` (rendered ``n/a``), as a metric with a zero denominator is.

Input from a file may nest thousands of levels (``[[[[...]]]]``). The C decoder stops at the
interpreter's recursion limit with a ``RecursionError`` that most callers do not expect, and a
value nested just below it makes every later recursive step (a copy, ``==``, the encoder) fail
instead: :func:`decode_limited` turns the first into a :class:`TooDeep` (a ``ValueError``, as
any other bad JSON), and :func:`check_depth` refuses the second for records that are kept whole.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
"""Levels of nesting a kept record may have (a recording's header needs 5, a job header 3)."""


class TooDeep(ValueError):
    """A JSON value nested deeper than a reader accepts."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_not_json)


def decode_limited(text: str) -> Any:
    """``json.loads(text)`` refusing ``NaN``/``Infinity`` and nesting the decoder cannot follow:
    :class:`ValueError` for both (:class:`TooDeep` for the nesting)."""
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise TooDeep("nested too deeply to decode (a damaged line)") from None


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """:class:`TooDeep` when ``value`` nests lists/objects more than ``limit`` levels; iterative,
    so a deep value cannot exhaust the stack while it is measured."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            raise TooDeep(f"nested more than {limit} levels deep (a damaged line)")
        todo.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (in dicts, lists and tuples) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, allow_nan=False, **kwargs)``, with ``null`` where a non-finite number was."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **kwargs)
