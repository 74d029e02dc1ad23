"""ELF files as lookup tables: segments, function and variable symbols, DWARF lines (pyelftools).

An :class:`ElfImage` is parsed once per file per session (:class:`ElfCache`) and answers in ELF
virtual addresses (the load bias is the address space's business): which PT_LOAD segment, which
FUNC symbol, which OBJECT symbol, which section, and which ``file:line``. Symbols come from
``.symtab`` when present, else ``.dynsym`` (what a stripped binary keeps); DWARF line tables are
read only when a sample first needs them, since they are the expensive part.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.dwarf.dwarfinfo import DWARFInfo
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

_BIND_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}


@dataclass(frozen=True, slots=True)
class Segment:
    """A PT_LOAD segment: file bytes ``[offset, offset+filesz)`` at ``[vaddr, vaddr+memsz)``;
    ``memsz`` beyond ``filesz`` is zero-filled (``.bss``). ``prot`` is its permissions as mmap's
    PROT_* bits (read 1, write 2, exec 4)."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    prot: int = 0


class SymbolTable:
    """Sorted, non-overlapping symbol ranges: ``lookup(vaddr)`` -> (name, offset) or None.

    Where several symbols share an address a sized one wins over a zero-size marker (such as
    ``__TMC_END__``), then the global one over a weak, then a local one (aliases such as
    ``__libc_malloc``/``malloc``), then the larger. A zero-size symbol covers up to the next
    symbol when ``extend_empty`` (hand-written assembly functions), else only its own address.
    """

    def __init__(self, symbols: Iterable[tuple[int, int, str, int]], *, extend_empty: bool) -> None:
        best: dict[int, tuple[tuple[bool, int, int], int, str]] = {}
        for start, size, name, rank in symbols:
            preference = (size == 0, rank, -size)
            known = best.get(start)
            if known is None or preference < known[0]:
                best[start] = (preference, size, name)
        starts = sorted(best)
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._names: list[str] = []
        for i, start in enumerate(starts):
            _, size, name = best[start]
            following = starts[i + 1] if i + 1 < len(starts) else None
            if size:
                end = start + size
            elif extend_empty and following is not None:
                end = following
            else:
                end = start + 1
            self._starts.append(start)
            self._ends.append(end)
            self._names.append(name)

    def __len__(self) -> int:
        return len(self._starts)

    def lookup(self, vaddr: int) -> tuple[str, int] | None:
        """(name, offset into the symbol) of the symbol covering ``vaddr``."""
        found = self.find(vaddr)
        return (found[0], vaddr - found[1]) if found is not None else None

    def find(self, vaddr: int) -> tuple[str, int, int] | None:
        """(name, start, end) of the symbol covering ``vaddr``."""
        i = bisect.bisect_right(self._starts, vaddr) - 1
        # A symbol nested inside a larger one (rare) may hide the outer one: look one back too.
        for j in (i, i - 1):
            if j >= 0 and self._starts[j] <= vaddr < self._ends[j]:
                return self._names[j], self._starts[j], self._ends[j]
        return None


class LineTable:
    """DWARF line rows as sorted addresses -> ``file:line`` (None inside the gaps between sequences)."""

    def __init__(self, rows: Iterable[tuple[int, str | None]]) -> None:
        # At an address where one sequence ends and the next begins, the beginning wins.
        ordered = sorted(rows, key=lambda row: (row[0], row[1] is not None))
        self._addresses = [a for a, _ in ordered]
        self._where = [w for _, w in ordered]

    def __len__(self) -> int:
        return len(self._addresses)

    def lookup(self, vaddr: int) -> str | None:
        i = bisect.bisect_right(self._addresses, vaddr) - 1
        return self._where[i] if i >= 0 else None


class ElfImage:
    """One parsed ELF file (see the module docstring).

    Segments, sections and whether the file has symbols and lines are read at once; the symbol
    tables on the first lookup, since a process maps many libraries that no sample ever lands in
    (a live session places them all as it starts, before the first sample arrives).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self._lines: LineTable | None = None
        self._lines_loaded = False
        self._symbols: tuple[SymbolTable, SymbolTable] | None = None
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            self.segments = tuple(
                Segment(s["p_vaddr"], s["p_memsz"], s["p_offset"], s["p_filesz"], _prot(s["p_flags"]))
                for s in elf.iter_segments()
                if s["p_type"] == "PT_LOAD"
            )
            self.stripped = not isinstance(elf.get_section_by_name(".symtab"), SymbolTableSection)
            self.sections = SymbolTable(
                (
                    (s["sh_addr"], s["sh_size"], s.name, 0)
                    for s in elf.iter_sections()
                    if s["sh_flags"] & 0x2 and s["sh_addr"] and s.name  # SHF_ALLOC
                ),
                extend_empty=False,
            )
            self.has_lines = elf.get_section_by_name(".debug_line") is not None

    @property
    def functions(self) -> SymbolTable:
        """FUNC (and IFUNC) symbols."""
        if self._symbols is None:
            self._symbols = _read_symbols(self.path, self.stripped)
        return self._symbols[0]

    @property
    def objects(self) -> SymbolTable:
        """OBJECT symbols: global and static variables."""
        if self._symbols is None:
            self._symbols = _read_symbols(self.path, self.stripped)
        return self._symbols[1]

    def load_bias(self, start: int, pgoff: int, prot: int | None, page_size: int) -> int | None:
        """Where this file was loaded, from one of its mappings (``start`` maps file offset
        ``pgoff``): address = ELF vaddr + bias. None when no segment fits the mapping.

        Two segments can share a page of the file (read-only data and the start of ``.data``), so
        a mapping whose permissions are known is matched to the segment with the same ones.
        """
        fitting = [
            s for s in self.segments if s.offset - s.offset % page_size <= pgoff < s.offset + max(s.filesz, 1)
        ]
        if prot is not None:
            fitting = [s for s in fitting if s.prot == prot] or fitting
        if not fitting:
            return None
        segment = fitting[0]
        return start + segment.offset - pgoff - segment.vaddr

    def contains(self, vaddr: int) -> bool:
        return any(s.vaddr <= vaddr < s.vaddr + s.memsz for s in self.segments)

    def source(self, vaddr: int) -> str | None:
        """``file:line`` of the instruction at ``vaddr``, or None without DWARF line info."""
        if not self.has_lines:
            return None
        if not self._lines_loaded:
            self._lines_loaded = True
            self._lines = _read_lines(self.path)
        return self._lines.lookup(vaddr) if self._lines is not None else None


def _read_symbols(path: str, stripped: bool) -> tuple[SymbolTable, SymbolTable]:
    """(functions, objects) from ``.symtab``, or ``.dynsym`` when stripped (empty tables when the
    file can no longer be read)."""
    functions: list[tuple[int, int, str, int]] = []
    objects: list[tuple[int, int, str, int]] = []
    try:
        with open(path, "rb") as handle:
            table = ELFFile(handle).get_section_by_name(".dynsym" if stripped else ".symtab")
            if isinstance(table, SymbolTableSection):
                for symbol in table.iter_symbols():
                    kind = symbol["st_info"]["type"]
                    if kind not in ("STT_FUNC", "STT_OBJECT", "STT_GNU_IFUNC"):
                        continue
                    if symbol["st_shndx"] == "SHN_UNDEF" or not symbol.name:
                        continue
                    rank = _BIND_RANK.get(symbol["st_info"]["bind"], 3)
                    entry = (symbol["st_value"], symbol["st_size"], symbol.name, rank)
                    (objects if kind == "STT_OBJECT" else functions).append(entry)
    except (ELFError, OSError, ValueError, KeyError, AttributeError):
        functions, objects = [], []
    return SymbolTable(functions, extend_empty=True), SymbolTable(objects, extend_empty=False)


def _prot(p_flags: int) -> int:
    """PF_X 1, PF_W 2, PF_R 4 -> PROT_EXEC 4, PROT_WRITE 2, PROT_READ 1."""
    return (4 if p_flags & 1 else 0) | (2 if p_flags & 2 else 0) | (1 if p_flags & 4 else 0)


def _read_lines(path: str) -> LineTable | None:
    """Every row of every line program of ``path`` (None when the DWARF cannot be read)."""
    rows: list[tuple[int, str | None]] = []
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            dwarf: DWARFInfo = elf.get_dwarf_info()
            for unit in dwarf.iter_CUs():
                program = dwarf.line_program_for_CU(unit)
                if program is None:
                    continue
                files = program["file_entry"]
                base = 0 if program["version"] >= 5 else 1
                names: dict[int, str] = {}
                for entry in program.get_entries():
                    state = entry.state
                    if state is None:
                        continue
                    if state.end_sequence:
                        rows.append((state.address, None))
                        continue
                    name = names.get(state.file)
                    if name is None:
                        index = state.file - base
                        raw = files[index].name if 0 <= index < len(files) else b"?"
                        name = os.path.basename(raw.decode("utf-8", "replace"))
                        names[state.file] = name
                    rows.append((state.address, f"{name}:{state.line}"))
    except (ELFError, OSError, ValueError, KeyError, IndexError, AttributeError):
        return None
    return LineTable(rows)


class ElfCache:
    """Parsed ELF files of one session, by path; a file that cannot be read is remembered as None."""

    def __init__(self) -> None:
        self._images: dict[str, ElfImage | None] = {}

    def get(self, path: str) -> ElfImage | None:
        if path in self._images:
            return self._images[path]
        image: ElfImage | None
        try:
            image = ElfImage(path)
        except (ELFError, OSError, ValueError, KeyError, AttributeError):
            image = None
        self._images[path] = image
        return image
