"""``sectormon markers``: the flags to compile and link a marked program, like pkg-config prints them.

``cc $(sectormon markers --cflags) prog.c $(sectormon markers --libs)`` builds a program marked with
fapp, LIKWID or sectormon's own calls against the library the install built; ``--pc`` prints a
pkg-config file for this install and ``--pc-path`` the directory of the shipped one. Without a
built library every form says, in one line, what was missing (exit 2).
"""

from __future__ import annotations

import argparse

from sectormon import __version__
from sectormon.commands.options.output import write_stdout
from sectormon.regions import library


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cflags", action="store_true", help="print the compiler flags (the headers' directory)"
    )
    parser.add_argument("--libs", action="store_true", help="print the linker flags (with an rpath)")
    parser.add_argument("--pc", action="store_true", help="print a pkg-config file for this install")
    parser.add_argument(
        "--pc-path",
        action="store_true",
        help="print the directory holding sectormon-markers.pc (PKG_CONFIG_PATH)",
    )


def summary() -> str:
    return (
        f"marker library: {library.LIBRARY_FILE}\n"
        f"headers: {library.INCLUDE_DIR} (fj_tool/fapp.h, likwid-marker.h, sectormon_markers.h)\n"
        f"compile and link: cc $(sectormon markers --cflags) prog.c $(sectormon markers --libs)\n"
        "LIKWID markers count only with -DLIKWID_PERFMON; docs/regions.md says more.\n"
    )


def run(args: argparse.Namespace) -> int:
    library.require_library()
    if args.pc:
        write_stdout(library.pc_text(__version__))
        return 0
    if args.pc_path:
        write_stdout(f"{library.PC_DIR}\n")
        return 0
    flags = [library.cflags()] if args.cflags else []
    if args.libs:
        flags.append(library.libs())
    write_stdout(" ".join(flags) + "\n" if flags else summary())
    return 0
