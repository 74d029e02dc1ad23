"""ELF lookups against binutils: every sized symbol as ``nm`` lists it, lines as ``addr2line`` gives them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.attribution.elf import ElfCache, ElfImage, LineTable, SymbolTable
from tests.attribution.attribution_helpers import Program, addr2line, nm_symbols, tool


def test_every_function_and_variable_matches_nm(program: Program) -> None:
    image = ElfImage(str(program.path))
    symbols = nm_symbols(program.path)
    checked = 0
    for name, (address, size, kind) in symbols.items():
        if size == 0:
            continue
        table = image.functions if kind in "tTwW" else image.objects if kind in "bBdDrR" else None
        if table is None:
            continue
        for inside in (address, address + size - 1):
            found = table.lookup(inside)
            assert found is not None, name
            assert found == (name, inside - address) or symbols[found[0]][0] == address  # an alias
        checked += 1
    assert {"main", "add", "fill", "counter", "table", "initialised", "message"} <= set(symbols)
    assert checked >= 7
    assert image.functions.lookup(symbols["add"][0] + 1) == ("add", 1)
    assert image.objects.lookup(symbols["table"][0] + 8 * 100) == ("table", 800)
    assert not image.stripped


def test_sections_cover_what_no_symbol_does(program: Program) -> None:
    image = ElfImage(str(program.path))
    counter = nm_symbols(program.path)["counter"][0]
    section = image.sections.lookup(counter)
    assert section is not None and section[0] == ".bss"
    # .bss lies in the last PT_LOAD segment's zero-filled part, past the file bytes.
    last = image.segments[-1]
    assert last.vaddr + last.filesz <= counter < last.vaddr + last.memsz


def test_source_lines_match_addr2line(program: Program) -> None:
    image = ElfImage(str(program.path))
    symbols = nm_symbols(program.path)
    assert image.has_lines
    for name in ("main", "add", "fill"):
        address, size, _ = symbols[name]
        for inside in (address, address + size // 2):
            assert image.source(inside) == addr2line(program.path, inside), (name, hex(inside))


def test_a_stripped_binary_keeps_only_its_dynamic_symbols(program: Program) -> None:
    image = ElfImage(str(program.stripped))
    assert image.stripped and not image.has_lines
    main = nm_symbols(program.path)["main"][0]
    assert image.functions.lookup(main) is None
    assert image.source(main) is None


def test_the_load_bias_follows_from_any_mapping_of_the_file(program: Program) -> None:
    """A PIE loaded at 0x5555_0000_0000: each segment's mapping (page-aligned file offset and
    address, its permissions) gives the same bias."""
    image = ElfImage(str(program.path))
    base = 0x5555_0000_0000
    for segment in image.segments:
        start = base + segment.vaddr - segment.vaddr % 4096
        pgoff = segment.offset - segment.offset % 4096
        assert image.load_bias(start, pgoff, segment.prot, 4096) == base
    assert image.load_bias(base, 1 << 40, None, 4096) is None


def test_symbol_table_rules() -> None:
    """Aliases: global over weak over local; zero-size functions reach the next symbol."""
    table = SymbolTable(
        [
            (100, 10, "local_alias", 2),
            (100, 10, "global_name", 0),
            (200, 0, "asm_func", 0),
            (300, 5, "last", 0),
        ],
        extend_empty=True,
    )
    assert table.lookup(105) == ("global_name", 5)
    assert table.lookup(250) == ("asm_func", 50)
    assert table.lookup(110) is None and table.lookup(99) is None and table.lookup(305) is None
    objects = SymbolTable([(100, 0, "marker", 0)], extend_empty=False)
    assert objects.lookup(100) == ("marker", 0) and objects.lookup(101) is None


def test_line_table_prefers_a_new_sequence_over_the_end_of_the_previous() -> None:
    table = LineTable([(0x10, "a.c:1"), (0x20, None), (0x20, "b.c:7"), (0x30, None)])
    assert table.lookup(0x1F) == "a.c:1"
    assert table.lookup(0x20) == "b.c:7"
    assert table.lookup(0x30) is None and table.lookup(0x5) is None
    assert list(table.sequences()) == [(0x10, 0x20), (0x20, 0x30)]


def test_the_cache_parses_each_file_once_and_remembers_failures(program: Program, tmp_path: Path) -> None:
    cache = ElfCache()
    first = cache.get(str(program.path))
    assert first is not None and cache.get(str(program.path)) is first
    text = tmp_path / "not-elf"
    text.write_text("hello")
    assert cache.get(str(text)) is None
    assert cache.get(str(tmp_path / "missing")) is None


UNIT = "__attribute__((noinline)) int f{i}(int x) {{\n    return x * {i} + 1;\n}}\n"


def two_units(base: Path, *, aranges: bool) -> Path:
    """A program of two compilation units, with or without ``.debug_aranges``."""
    cc = shutil.which("cc") or tool("gcc")
    first, second = base / "one.c", base / "two.c"
    first.write_text(UNIT.format(i=1) + "int f2(int);\nint main(void) { return f1(2) + f2(3); }\n")
    second.write_text("".join(UNIT.format(i=i) for i in range(2, 40)))
    path = base / ("two-units" if aranges else "two-units-no-aranges")
    subprocess.run([cc, "-g", "-O1", "-o", str(path), str(first), str(second)], check=True)
    if not aranges:
        subprocess.run([tool("objcopy"), "--remove-section", ".debug_aranges", str(path)], check=True)
    return path


@pytest.mark.parametrize("aranges", [True, False], ids=["aranges", "unit-ranges"])
def test_a_source_lookup_decodes_only_the_unit_it_falls_in(tmp_path: Path, aranges: bool) -> None:
    """DWARF lines are decoded per compilation unit when a sampled address first needs one: the
    rows held are those of the unit sampled, not the file's (memory bounded by what is sampled)."""
    path = two_units(tmp_path, aranges=aranges)
    symbols = nm_symbols(path)
    image = ElfImage(str(path))
    main = symbols["main"][0]
    assert image.source(main) == addr2line(path, main)
    small = image.decoded_rows
    assert small > 0
    f30 = symbols["f30"][0]
    assert image.source(f30) == addr2line(path, f30)
    assert image.decoded_rows > 5 * small  # the second unit (38 functions) came in only now
