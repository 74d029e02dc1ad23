"""Address spaces and symbolization: code to functions and lines, data to variables, heap, stack."""

from __future__ import annotations

from pathlib import Path

from sectormon.attribution.elf import ElfCache, ElfImage
from sectormon.attribution.space import AddressSpace
from sectormon.attribution.symbolize import Symbolizer
from sectormon.data.samples import CodeLocation, DataLocation, MapEvent, ProcessEvent, Sample
from sectormon.host.maps import parse_proc_maps
from tests.attribution.attribution_helpers import Program, addr2line, nm_symbols

BASE = 0x5555_0000_0000
PID = 4242


def load_events(path: str, base: int = BASE, pid: int = PID, time: int = 1) -> list[MapEvent]:
    """The mappings the kernel makes for ``path`` loaded at ``base``: one per PT_LOAD segment's
    file pages, plus the anonymous zero pages of ``.bss`` past them (as MMAP2 reports them)."""
    events = []
    for segment in ElfImage(path).segments:
        start = base + segment.vaddr - segment.vaddr % 4096
        file_end = base + segment.vaddr + segment.filesz
        file_end += -file_end % 4096
        pgoff = segment.offset - segment.offset % 4096
        events.append(MapEvent(time, pid, start, file_end, pgoff, path, segment.prot))
        mem_end = base + segment.vaddr + segment.memsz
        if mem_end > file_end:
            events.append(MapEvent(time, pid, file_end, mem_end + -mem_end % 4096, 0, "//anon", 3))
    return events


def sample(ip: int, addr: int | None = None, *, pid: int = PID, kernel: bool = False) -> Sample:
    return Sample(2, pid, pid, 0, ip, addr, 1, None, kernel)


def symbolizer_for(program: Program) -> Symbolizer:
    symbolizer = Symbolizer(ElfCache())
    for event in load_events(str(program.path)):
        assert symbolizer.feed(event) is None
    symbolizer.feed(MapEvent(1, PID, 0x6000_0000, 0x6010_0000, 0, "[heap]", 3))
    symbolizer.feed(MapEvent(1, PID, 0x7FFF_0000_0000, 0x7FFF_0010_0000, 0, "[stack]", 3))
    symbolizer.feed(MapEvent(1, PID, 0x7F00_0000_0000, 0x7F00_0100_0000, 0, "//anon", 3))
    return symbolizer


def test_ips_resolve_to_functions_and_lines(program: Program) -> None:
    symbolizer = symbolizer_for(program)
    symbols = nm_symbols(program.path)
    for name in ("main", "add", "fill"):
        address = symbols[name][0] + 2
        got = symbolizer.resolve(sample(BASE + address))
        assert got.code == CodeLocation(name, "demo", addr2line(program.path, address))


def test_data_addresses_resolve_to_variables_even_in_bss(program: Program) -> None:
    """``counter`` and ``table`` lie in .bss, which the kernel maps as anonymous memory: they
    still belong to the binary's variables."""
    symbolizer = symbolizer_for(program)
    symbols = nm_symbols(program.path)
    ip = BASE + symbols["fill"][0]
    for name, offset in (("table", 8 * 4000), ("counter", 0), ("initialised", 60), ("message", 3)):
        got = symbolizer.resolve(sample(ip, BASE + symbols[name][0] + offset))
        assert got.data == DataLocation(name, "symbol", "demo"), name
    assert symbolizer.resolve(sample(ip, 0x6000_1234)).data == DataLocation("[heap]", "heap")
    assert symbolizer.resolve(sample(ip, 0x7FFF_0000_0100)).data == DataLocation("[stack]", "stack")
    assert symbolizer.resolve(sample(ip, 0x7F00_0000_0040)).data == DataLocation("[anon]", "mapping")
    assert symbolizer.resolve(sample(ip, 0x10)).data == DataLocation("[unknown]", "unknown")
    assert symbolizer.resolve(sample(ip, None)).data is None


def test_a_stripped_binary_falls_back_to_module_and_offset(program: Program) -> None:
    symbolizer = Symbolizer()
    for event in load_events(str(program.stripped)):
        symbolizer.feed(event)
    main = nm_symbols(program.path)["main"][0]
    counter = nm_symbols(program.path)["counter"][0]
    got = symbolizer.resolve(sample(BASE + main, BASE + counter))
    assert got.code == CodeLocation(f"demo-stripped+{main:#x}", "demo-stripped")
    assert got.data == DataLocation(".bss", "section", "demo-stripped")


def test_kernel_and_unknown_ips() -> None:
    symbolizer = Symbolizer()
    assert symbolizer.resolve(sample(0xFFFF_FFFF_8100_0000, kernel=True)).code.function == "[kernel]"
    assert symbolizer.resolve(sample(0x1234)).code.function == "[unknown]"


def test_exec_starts_a_new_address_space_and_fork_copies_it(program: Program) -> None:
    symbolizer = symbolizer_for(program)
    add = BASE + nm_symbols(program.path)["add"][0]
    symbolizer.feed(ProcessEvent(3, 5000, "fork", PID))
    assert symbolizer.resolve(sample(add, pid=5000)).code.function == "add"
    symbolizer.feed(ProcessEvent(4, 5000, "exec"))
    assert symbolizer.resolve(sample(add, pid=5000)).code.function == "[unknown]"
    assert symbolizer.resolve(sample(add)).code.function == "add"  # the parent is untouched


def test_a_remapped_range_resolves_to_its_new_mapping(program: Program) -> None:
    """The code cache of a process is dropped when its mappings change."""
    symbolizer = symbolizer_for(program)
    ip = 0x7F00_0000_0040
    assert symbolizer.resolve(sample(ip)).code.function == "[anon]"
    symbolizer.feed(MapEvent(5, PID, 0x7F00_0000_0000, 0x7F00_0000_1000, 0, "[vdso]", 5))
    assert symbolizer.resolve(sample(ip)).code.function == "[vdso]"


def test_a_new_mapping_splits_what_it_overlaps() -> None:
    space = AddressSpace()
    images = ElfCache()
    space.map(MapEvent(0, 1, 0x1000, 0x5000, 0, "/no/such/file.so", 1), images)
    space.map(MapEvent(0, 1, 0x2000, 0x3000, 0, "//anon", 3), images)
    assert [(r.start, r.end, r.pgoff, r.path) for r in space.regions] == [
        (0x1000, 0x2000, 0, "/no/such/file.so"),
        (0x2000, 0x3000, 0, "//anon"),
        (0x3000, 0x5000, 0x2000, "/no/such/file.so"),
    ]
    assert space.region_at(0x4FFF) is not None and space.region_at(0x5000) is None
    other = space.copy()
    other.map(MapEvent(0, 1, 0x1000, 0x5000, 0, "[heap]", 3), images)
    assert len(space.regions) == 3 and len(other.regions) == 1


def test_proc_maps_lines() -> None:
    text = (
        "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 260131                     /usr/bin/cat\n"
        "55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:00 260131                     /usr/bin/cat\n"
        "55d0c1c59000-55d0c1c7a000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f3b1c000000-7f3b1c021000 rw-p 00000000 00:00 0 \n"
        "not a maps line\n"
    )
    events = list(parse_proc_maps(text, 7, 9))
    assert [(e.start, e.end, e.pgoff, e.path, e.prot) for e in events] == [
        (0x55D0C0A00000, 0x55D0C0A02000, 0, "/usr/bin/cat", 1),
        (0x55D0C0A02000, 0x55D0C0A07000, 0x2000, "/usr/bin/cat", 5),
        (0x55D0C1C59000, 0x55D0C1C7A000, 0, "[heap]", 3),
        (0x7F3B1C000000, 0x7F3B1C021000, 0, "//anon", 3),
    ]
    assert all(e.pid == 7 and e.time == 9 for e in events)


def test_the_last_data_range_never_spans_into_a_module(program: Path) -> None:
    """The anonymous mapping that holds .bss runs on to the next page boundary: an address in
    that tail is [anon], and the variable right before it is still the variable."""
    symbolizer = symbolizer_for(program)
    image = ElfImage(str(program.path))
    last = image.segments[-1]
    bss_end = BASE + last.vaddr + last.memsz
    assert bss_end % 4096, "the test needs a .bss that ends inside a page"
    ip = BASE + nm_symbols(program.path)["fill"][0]
    assert symbolizer.resolve(sample(ip, bss_end)).data == DataLocation("[anon]", "mapping")
    table_end = BASE + sum(nm_symbols(program.path)["table"][:2]) - 8  # in the anonymous part
    assert table_end >= bss_end - bss_end % 4096
    assert symbolizer.resolve(sample(ip, table_end)).data == DataLocation("table", "symbol", "demo")
    assert symbolizer.resolve(sample(ip, bss_end + 8)).data == DataLocation("[anon]", "mapping")
