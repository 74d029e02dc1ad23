"""Both row checks of the recording reader in one process, for tests that compare them.

:mod:`sectormon.io.native_rows` chooses one check per process (``SECTORMON_ROWS``); a test that
runs both puts the chosen one aside for a moment with :func:`row_check`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from sectormon.io import jsonl, native_rows

BUILT = native_rows.compiled is not None
PATHS = ["python", "c"] if BUILT else ["python"]
needs_compiled = pytest.mark.skipif(not BUILT, reason="the compiled row check is not built (no C compiler)")


@contextlib.contextmanager
def row_check(path: str) -> Iterator[None]:
    """``slice_from_record`` runs the ``path`` row check (``c`` or ``python``) inside the block."""
    saved = jsonl._compiled_rows
    jsonl._compiled_rows = native_rows.slice_rows(path)
    try:
        yield
    finally:
        jsonl._compiled_rows = saved
