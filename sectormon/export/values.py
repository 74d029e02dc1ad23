"""Sample values as prometheus_client writes them (``floatToGoString``), a family's at a time.

Most of a scrape's values need CPython's float ``repr`` (David Gay's shortest round-trip digits),
which costs more than everything else on a sample line. orjson writes the same shortest
round-trip digits with a faster algorithm, for a whole family's values in one call. Where both
write a value in positional notation (no exponent) the digits and the text are the same: the
shortest digits that read back as the value, closest to it, are one string. Where they differ in
notation (below 1e-4, from 1e16, in ways that vary between orjson versions) or where orjson has
no text (NaN, infinities: ``null``), the family's values are written one by one with ``repr``.
"""

from __future__ import annotations

import math
from itertools import repeat

import orjson
from prometheus_client.utils import floatToGoString

GO_EXPONENT_FROM = 1e6
"""prometheus_client writes an exponent from here on (Go's formatting), Python's repr from 1e16."""


def _maybe_not_repr(text: str) -> bool:
    """Whether orjson's text of some values may differ from repr's: it has an exponent, ``null``
    (NaN, infinities) or ``0.0000`` (a value below 1e-4 written positionally, where repr writes
    an exponent; a value such as 10.00001 has it too, and is written one by one as well).
    Substring tests: a regular expression for the same costs more than formatting the values."""
    return "e" in text or "n" in text or "0.0000" in text


_GO_EXPONENT = {digits: f"e+{digits - 1:02d}" for digits in range(7, 17)}
"""The exponent of a positional value with this many digits before its point."""


def go_float(value: float) -> str:
    """``value`` as prometheus_client writes it (``floatToGoString``, Go's formatting)."""
    if -GO_EXPONENT_FROM < value < GO_EXPONENT_FROM:
        return repr(value)  # the same in Go and Python
    return _go_large(value)


def _go_large(value: float) -> str:
    if GO_EXPONENT_FROM <= value < math.inf:
        text = repr(value)
        dot = text.find(".")
        if dot > 6:  # prometheus_client writes an exponent from 1e6 on, Python's repr from 1e16
            mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
            return f"{mantissa}e+{dot - 1:02d}"
        return text
    return floatToGoString(value)  # negative, infinite, NaN


def go_floats(values: tuple[float, ...]) -> list[str]:
    """Each of ``values`` as :func:`go_float` writes it."""
    if not values:
        return []
    text = orjson.dumps(values).decode()
    if _maybe_not_repr(text):
        return [go_float(value) for value in values]
    texts = text[1:-1].split(",")
    if max(values) >= GO_EXPONENT_FROM:
        # Positional from 1e6 (below 1e16, or the text would have an exponent): Go's exponent
        # form as in _go_large, inline: a function call per value costs as much again.
        texts = [
            f"{item[0]}.{item[1:dot]}{item[dot + 1 :]}".rstrip("0.") + _GO_EXPONENT[dot]
            if value >= GO_EXPONENT_FROM
            else item
            for item, value, dot in zip(texts, values, map(str.find, texts, repeat(".")), strict=True)
        ]
    return texts
