"""JSON output that every strict reader accepts: never ``NaN`` or ``Infinity``.

Python's ``json`` writes ``NaN``/``Infinity`` by default, which jq, JavaScript and our own
reader refuse. Every one-object writer (``compare --json``, ``fapp --json``, ``check --json``,
``events --json``, ``sim --summary``) goes through :func:`dumps`: a non-finite number is an
unknown value, so it becomes ``null`` (rendered ``n/a``), as a metric with a zero denominator is.
"""

from __future__ import annotations

import json
import math
from typing import Any


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
