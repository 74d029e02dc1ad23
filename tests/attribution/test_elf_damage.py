"""Damaged ELF files: each class of failure pyelftools raises falls back to what can still be read
(functions without lines, or module+offset), with one warning naming the file and the section."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from sectormon.attribution.elf import ElfCache
from sectormon.attribution.symbolize import Symbolizer
from sectormon.data.samples import Sample
from tests.attribution.elf_damage import build, damage, load_events, sections, symbol

BASE = 0x5555_0000_0000
PID = 77


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("damage")
    return {variant: build(base, variant) for variant in ("plain", "zlib")}


def resolve(intact: Path, damaged: Path, name: str) -> tuple[str, str | None, list[str]]:
    """(function, source line, warnings) of an instruction of ``name`` in the damaged copy."""
    symbolizer = Symbolizer(ElfCache())
    for event in load_events(intact, str(damaged), BASE, PID):
        symbolizer.feed(event)
    ip = BASE + symbol(intact, name) + 2
    got = symbolizer.resolve(Sample(2, PID, PID, 0, ip, None, 1, None, False))
    return got.code.function, got.code.source, symbolizer.images.warnings


# (class pyelftools raised on main, variant, section at fault, edit of the intact file's bytes)
CASES = {
    "DWARFError-abbrev-offset-out-of-bounds": (
        "plain",
        ".debug_info",
        lambda s: [(s[".debug_info"].offset + 8, struct.pack("<I", 0xFFFF_FF00))],
    ),
    "OverflowError-debug-line-size-2**63": (
        "plain",
        ".debug_line",
        lambda s: [(s[".debug_line"].header + 32, struct.pack("<Q", 1 << 63))],
    ),
    "MemoryError-section-table-size": (
        "plain",
        ".debug_line",
        lambda s: [(s[".debug_line"].header + 32, struct.pack("<Q", 1 << 62))],
    ),
    "zlib.error-corrupt-compressed-section": (
        "zlib",
        ".debug_line",
        lambda s: [(s[".debug_line"].offset + 24 + 4, b"\xff\xff\xff\xff")],
    ),
    "AssertionError-address-size": (
        "plain",
        ".debug_info",
        lambda s: [(s[".debug_info"].offset + 7, b"\x03")],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_dwarf_keeps_the_functions_and_warns_once_naming_file_and_section(
    builds: dict[str, Path], tmp_path: Path, case: str
) -> None:
    variant, section, edits = CASES[case]
    intact = builds[variant]
    damaged = damage(intact, tmp_path / "libdamaged.so", edits(sections(intact)))
    function, source, warnings = resolve(intact, damaged, "add")
    assert function == "add" and source is None
    assert len(warnings) == 1, warnings
    assert str(damaged) in warnings[0] and f"{section} cannot be read" in warnings[0]
    assert "without source lines" in warnings[0]
    assert resolve(intact, intact, "add")[1] is not None  # the intact file has its line


def test_a_damaged_symbol_table_falls_back_to_module_and_offset(
    builds: dict[str, Path], tmp_path: Path
) -> None:
    intact = builds["plain"]
    edits = [(sections(intact)[".symtab"].header + 32, struct.pack("<Q", (1 << 62) + 1))]
    damaged = damage(intact, tmp_path / "libdamaged.so", edits)
    function, _, warnings = resolve(intact, damaged, "add")
    assert function == f"libdamaged.so+{symbol(intact, 'add') + 2:#x}"
    assert len(warnings) == 1 and str(damaged) in warnings[0] and "section [" in warnings[0]


def test_a_damaged_elf_header_falls_back_to_the_file_offset(builds: dict[str, Path], tmp_path: Path) -> None:
    intact = builds["plain"]
    damaged = damage(intact, tmp_path / "libdamaged.so", [(4, b"\x07")])  # EI_CLASS 7
    function, _, warnings = resolve(intact, damaged, "add")
    assert function.startswith("libdamaged.so+0x")
    assert len(warnings) == 1 and "the ELF header cannot be read" in warnings[0]


def test_a_fifo_where_a_library_was_is_never_opened_for_reading(tmp_path: Path) -> None:
    """A target can put a FIFO at a loaded library's path: opening it to read would block forever."""
    fifo = tmp_path / "libm.so.6"
    os.mkfifo(fifo)
    cache = ElfCache()
    assert cache.get(str(fifo)) is None
    assert cache.warnings == [
        f"{fifo}: is a named pipe (the ELF file must be a regular file): "
        "its samples are shown as libm.so.6+offset"
    ]


def test_files_that_are_gone_or_not_elf_say_nothing(tmp_path: Path) -> None:
    """Mapped data files (locale archives, fonts), devices and deleted libraries are common, not damage."""
    text = tmp_path / "locale-archive"
    text.write_bytes(b"not an ELF file")
    cache = ElfCache()
    assert cache.get(str(text)) is None and cache.get(str(tmp_path / "gone.so")) is None
    assert cache.get("/dev/zero") is None and cache.get("/dev/null") is None  # device mappings
    assert cache.warnings == []
