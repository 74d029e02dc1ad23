"""The simulator's two cores, for tests that run both: the pure-Python model (the reference) and
the compiled core (sectormon/sim/_core.c), which must give the same numbers."""

from __future__ import annotations

from typing import Any

import pytest

from sectormon.sim import native
from sectormon.sim.cache import SectorCache

NOT_BUILT = "the compiled core is not built (test_native.py::test_the_compiled_core_is_built says why)"
CORES = [
    pytest.param("python", id="python"),
    pytest.param("c", id="c", marks=pytest.mark.skipif(native.compiled is None, reason=NOT_BUILT)),
]
CACHES: list[Any] = [
    pytest.param(SectorCache, id="python"),
    pytest.param(
        native.compiled.Cache if native.compiled is not None else None,
        id="c",
        marks=pytest.mark.skipif(native.compiled is None, reason=NOT_BUILT),
    ),
]
