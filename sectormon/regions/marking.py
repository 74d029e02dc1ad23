"""Regions in Python targets: ``with sectormon.regions.region("solve"):`` or ``@region("solve")``.

The calls go through the same marker library as C and Fortran (loaded with ctypes), so a Python
region is counted exactly like theirs, in the thread that enters it. Outside sectormon (its
environment variable absent) or without a built library nothing is loaded and both ends return at
once.
"""

from __future__ import annotations

import ctypes
import os
import threading
from contextlib import ContextDecorator

from sectormon.regions import layout
from sectormon.regions.library import LIBRARY_FILE

_loaded: list[ctypes.CDLL | None] = []
_loading = threading.Lock()


def _library() -> ctypes.CDLL | None:
    """The marker library when this process runs under sectormon, else None (decided once)."""
    if _loaded:
        return _loaded[0]
    with _loading:
        if not _loaded:
            lib = None
            if os.environ.get(layout.ENV_SOCKET) and LIBRARY_FILE.is_file():
                lib = ctypes.CDLL(str(LIBRARY_FILE))
                for function in (lib.sectormon_region_begin_numbered, lib.sectormon_region_end_numbered):
                    function.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
                    function.restype = None
            _loaded.append(lib)
    return _loaded[0]


class region(ContextDecorator):  # lower case: used as a function, `with region(...)`, `@region(...)`
    """The region ``name`` (fapp's ``number`` and ``level`` too) around a block or a function."""

    def __init__(self, name: str, number: int = 0, level: int = 0) -> None:
        self.name = name.encode()
        self.number = number
        self.level = level

    def __enter__(self) -> region:
        lib = _library()
        if lib is not None:
            lib.sectormon_region_begin_numbered(self.name, self.number, self.level)
        return self

    def __exit__(self, *_exc: object) -> None:
        lib = _library()
        if lib is not None:
            lib.sectormon_region_end_numbered(self.name, self.number, self.level)
