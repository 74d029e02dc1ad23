"""Which core runs the simulated machine: the compiled one (``_core.c``) where the install built it,
else the pure-Python model. Both give the same numbers and the same final cache contents (the
golden cases run both); the compiled core is the faster, most on miss-bound streams (bench_sim in
docs/perf-tuning.md, "Thirteenth pass").

``SECTORMON_SIM_CORE`` overrides the choice for a whole process: ``python`` runs the Python model
(to compare the two, or to try a model change in Python first), ``c`` makes a missing compiled core
an error instead of a fallback.
"""

from __future__ import annotations

import os
from types import ModuleType

from sectormon.errors import UsageError

ENV = "SECTORMON_SIM_CORE"
CORES = ("c", "python")
DESCRIPTIONS = {"c": "compiled core", "python": "Python model"}

compiled: ModuleType | None
try:
    from sectormon.sim import _core as compiled
except ImportError:  # installed without a C compiler: the Python model runs
    compiled = None


def choose(requested: str | None = None) -> str:
    """The core to run: ``requested`` (a Machine's own choice), else ``$SECTORMON_SIM_CORE``, else
    ``c`` where it is built."""
    name = requested or os.environ.get(ENV) or ("c" if compiled is not None else "python")
    if name not in CORES:
        raise UsageError(f"{ENV}={name}: not a simulator core (use one of {', '.join(CORES)})")
    if name == "c" and compiled is None:
        raise UsageError(
            f"{ENV}=c: the compiled simulator core is not built "
            "(reinstall with a C compiler and the Python headers: pip install -e .)"
        )
    return name
