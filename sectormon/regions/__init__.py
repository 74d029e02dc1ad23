"""Regions: what a program marks (fapp_start/fapp_stop, LIKWID's markers, sectormon's own API).

Two halves. In the marked program, the C marker library (``markers.c``, its entry points in
``api.c``, headers in ``include/``) reads the thread's counter groups at each start and stop, so a
region's counts are exactly that thread's between the two calls; Python targets use :func:`region`.
In sectormon, the endpoint (``endpoint.py``) hands each marking thread its groups over a unix socket
(``server.py``) and reads the per-(region, thread) deltas from a shared-memory table (``table.py``,
``layout.py``) into immutable records (:mod:`sectormon.data.regions`). docs/regions.md says how to
instrument a code and what a count means.

Importing this package loads nothing; :func:`region` (what Python targets import) is loaded when
first asked for (``sectormon stat``'s quick start reads :mod:`.layout` and :mod:`.rendezvous`
without the library's loader, :mod:`threading` and :mod:`pathlib`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sectormon.regions.marking import region

__all__ = ["region"]


def __getattr__(name: str) -> object:
    if name == "region":
        from sectormon.regions.marking import region

        return region
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
