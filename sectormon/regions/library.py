"""Where the marker library and its headers are, and the flags to compile and link against them.

The install builds ``lib/libsectormon-markers.so`` next to ``include/`` in this package (setup.py);
``sectormon markers --cflags/--libs`` prints these flags, like pkg-config does for a system library,
with an rpath so a marked program finds the library without ``LD_LIBRARY_PATH``. Where no C
compiler was there at install, the library is missing and :func:`require_library` says so.
"""

from __future__ import annotations

from pathlib import Path

from sectormon.errors import SectormonError
from sectormon.regions import layout

PACKAGE_DIR = Path(__file__).resolve().parent
INCLUDE_DIR = PACKAGE_DIR / "include"
LIB_DIR = PACKAGE_DIR / "lib"
PC_DIR = LIB_DIR / "pkgconfig"
LIBRARY_NAME = layout.LIBRARY_NAME
LIBRARY_FILE = LIB_DIR / f"lib{LIBRARY_NAME}.so"


class MarkersMissing(SectormonError):
    """The marker library was not built at install."""


def require_library() -> Path:
    """The built library, or :class:`MarkersMissing` saying what was missing."""
    if not LIBRARY_FILE.is_file():
        raise MarkersMissing(
            f"the marker library ({LIBRARY_FILE}) was not built: no C compiler was found when sectormon "
            "was installed (install one, e.g. gcc, and reinstall sectormon)"
        )
    return LIBRARY_FILE


def cflags() -> str:
    return f"-I{INCLUDE_DIR}"


def libs() -> str:
    return f"-L{LIB_DIR} -Wl,-rpath,{LIB_DIR} -l{LIBRARY_NAME}"


def pc_text(version: str) -> str:
    """A pkg-config file with this install's absolute paths (the shipped one is relative to itself)."""
    return (
        f"prefix={PACKAGE_DIR}\n"
        "includedir=${prefix}/include\n"
        "libdir=${prefix}/lib\n\n"
        f"Name: {LIBRARY_NAME}\n"
        "Description: Region markers (fapp, LIKWID, sectormon's own) that sectormon counts exactly\n"
        f"Version: {version}\n"
        "Cflags: -I${includedir}\n"
        f"Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -l{LIBRARY_NAME}\n"
    )
