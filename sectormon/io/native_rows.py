"""Which check turns a recording's readings into rows: the compiled one (``_rows.c``) where the
install built it, else the Python one in :mod:`sectormon.io.jsonl`. Both accept and reject the
same readings and build the same rows (a property test runs both), and a rejected slice's error
is always found by the Python side, so it reads the same; the compiled check is the faster one
(bench_replay in docs/perf-tuning.md, "The row check in C").

``SECTORMON_ROWS`` overrides the choice for a whole process: ``python`` runs the Python check (to
compare the two, or to try a change in Python first), ``c`` makes a missing compiled check an
error instead of a fallback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from sectormon.data.readings import Row
from sectormon.errors import UsageError

ENV = "SECTORMON_ROWS"
PATHS = ("c", "python")
DESCRIPTIONS = {"c": "compiled row check", "python": "Python row check"}

SliceRows = Callable[[list[Any], list[tuple[str, ...]], type[Row]], "tuple[Row, ...] | None"]
"""``slice_rows(raw, layouts, Row)``: the checked rows, or ``None`` when a reading is malformed."""

compiled: ModuleType | None
try:
    from sectormon.io import _rows as compiled
except ImportError:  # installed without a C compiler: the Python check runs
    compiled = None


def choose() -> str:
    """The row check to run: ``$SECTORMON_ROWS``, else ``c`` where it is built."""
    name = os.environ.get(ENV) or ("c" if compiled is not None else "python")
    if name not in PATHS:
        raise UsageError(f"{ENV}={name}: not a row check (use one of {', '.join(PATHS)})")
    if name == "c" and compiled is None:
        raise UsageError(
            f"{ENV}=c: the compiled row check is not built "
            "(reinstall with a C compiler and the Python headers: pip install -e .)"
        )
    return name


def slice_rows(path: str) -> SliceRows | None:
    """The compiled check for ``path`` ``c``, ``None`` for the Python one."""
    if path == "c" and compiled is not None:
        check: SliceRows = compiled.slice_rows
        return check
    return None
