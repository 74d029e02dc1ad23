"""Regions: what a program marks (fapp_start/fapp_stop, LIKWID's markers, sectormon's own API).

Two halves. In the marked program, the C marker library (``markers.c``, its entry points in
``api.c``, headers in ``include/``) reads the thread's counter groups at each start and stop, so a
region's counts are exactly that thread's between the two calls; Python targets use :func:`region`.
In sectormon, the endpoint (``endpoint.py``) hands each marking thread its groups over a unix socket
(``server.py``) and reads the per-(region, thread) deltas from a shared-memory table (``table.py``,
``layout.py``) into immutable records (:mod:`sectormon.data.regions`). docs/regions.md says how to
instrument a code and what a count means.

Importing this package loads nothing but :func:`region`: Python targets import it.
"""

from __future__ import annotations

from sectormon.regions.marking import region

__all__ = ["region"]
