"""ELF files as lookup tables: segments, function and variable symbols, DWARF lines (pyelftools).

An :class:`ElfImage` is parsed once per file per session (:class:`ElfCache`) and answers in ELF
virtual addresses (the load bias is the address space's business): which PT_LOAD segment, which
FUNC symbol, which OBJECT symbol, which section, and which ``file:line``. Symbols come from
``.symtab`` when present, else ``.dynsym`` (what a stripped binary keeps).

The files are the profiled program's, so they can be anything: a FIFO planted where a library was
(opened only as a regular file, see :func:`~sectormon.files.regular.open_input`), or a damaged
binary. pyelftools raises from anywhere in its parser on damaged bytes (its own errors, asserts,
construct's, ``zlib.error``, ``OverflowError``, ``MemoryError`` on absurd sizes), so every read of
a file runs in one guarded stage that names the section it reads; a stage that fails costs only
what it would have given (the file's symbols, or its source lines: the samples fall back to
module+offset), with one warning naming the file and section, and the run goes on. Before
pyelftools reads a section, its size is checked against the file (and a compressed section's
declared size against :data:`MAX_SECTION_BYTES`), so a fuzzed size is refused before it is
allocated.

DWARF lines are the expensive part (a libpython's: bench_hotspots in docs/perf-tuning.md, "DWARF
lines and live windows"), so they are decoded lazily, per compilation unit: the first source lookup
reads which address ranges each unit covers (``.debug_aranges``, else each unit's top DIE), and a
unit's line program is decoded when a sampled address first falls in it, into compact arrays (16
bytes a row plus one string per distinct ``file:line``). Units no sample touches are never decoded.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from elftools.dwarf.compileunit import CompileUnit
from elftools.dwarf.dwarfinfo import DWARFInfo
from elftools.dwarf.lineprogram import LineProgram
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from sectormon.errors import DataError
from sectormon.files.regular import open_input
from sectormon.files.text import printable

_BIND_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}

MAX_SECTION_BYTES = 1 << 30
"""The largest section (after decompression) read from an ELF file: a larger declared size is a
damaged header, and is refused before anything is allocated."""

_SHF_ALLOC = 0x2
_SHF_COMPRESSED = 0x800

Warn = Callable[[str], None]


class ElfDamaged(Exception):
    """A stage of reading an ELF file failed: ``section`` is what it was reading."""

    def __init__(self, section: str, cause: BaseException | str) -> None:
        if isinstance(cause, BaseException):
            detail = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
            cause = f"{type(cause).__name__}: {detail[:120]}" if detail else type(cause).__name__
        super().__init__(f"{section} cannot be read ({printable(cause)})")
        self.section = section


class NotElf(Exception):
    """The file is no ELF file (a mapped font, locale archive or data file): nothing to read."""


@contextmanager
def _stage(section: str) -> Iterator[None]:
    """Turn whatever pyelftools raises while reading ``section`` into :class:`ElfDamaged`.

    Exception, not a list of types: on damaged bytes pyelftools fails with whatever its parser
    meets (asserts, construct's errors, arithmetic, allocation, zlib), which is not a closed set.
    """
    try:
        yield
    except ElfDamaged:
        raise
    except Exception as exc:
        raise ElfDamaged(section, exc) from None


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

    def ranges(self) -> Iterator[tuple[str, int, int]]:
        """(name, start, end) of every symbol, by address."""
        return zip(self._names, self._starts, self._ends, strict=True)

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
    """DWARF line rows as sorted addresses -> ``file:line`` (None inside the gaps between sequences).

    Compact: an address (8 bytes) and an index into the distinct locations (8 bytes) a row.
    """

    def __init__(self, rows: Iterable[tuple[int, str | None]]) -> None:
        # At an address where one sequence ends and the next begins, the beginning wins.
        ordered = sorted(rows, key=lambda row: (row[0], row[1] is not None))
        places: dict[str | None, int] = {None: 0}
        self._addresses = array("Q", (a for a, _ in ordered))
        self._where = array("q", (places.setdefault(w, len(places)) for _, w in ordered))
        self._places: list[str | None] = list(places)

    def __len__(self) -> int:
        return len(self._addresses)

    def lookup(self, vaddr: int) -> str | None:
        i = bisect.bisect_right(self._addresses, vaddr) - 1
        return self._places[self._where[i]] if i >= 0 else None

    def sequences(self) -> Iterator[tuple[int, int]]:
        """``[start, end)`` of each sequence: the contiguous code ranges the rows cover."""
        start = None
        for address, where in zip(self._addresses, self._where, strict=True):
            if where == 0:  # an end of sequence
                if start is not None and address > start:
                    yield start, address
                start = None
            elif start is None:
                start = address


class ElfImage:
    """One parsed ELF file (see the module docstring).

    Segments, sections and whether the file has symbols and lines are read at once; the symbol
    tables on the first lookup, since a process maps many libraries that no sample ever lands in
    (a live session places them all as it starts, before the first sample arrives). ``warn`` is
    told, once per failed stage, what could not be read and what the samples show instead.
    :class:`NotElf`, :class:`ElfDamaged` or :class:`~sectormon.errors.DataError` when not even the
    headers can be read.
    """

    def __init__(self, path: str, warn: Warn | None = None) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self._warn = warn or (lambda message: None)
        self._lines: _LineIndex | None = None
        self._lines_failed = False
        self._symbols: tuple[SymbolTable, SymbolTable] | None = None
        with open_input(path, "ELF file") as handle:
            self.size = os.fstat(handle.fileno()).st_size
            if handle.read(4) != b"\x7fELF":
                raise NotElf(path)
            handle.seek(0)
            with _stage("the ELF header"):
                elf = ELFFile(handle)
            with _stage("the program headers"):
                self.segments = _load_segments(elf, handle, self.size)
            headers = _section_headers(elf, self.size, self._warn_damaged)
        self._index = {name: i for i, (name, _) in enumerate(headers) if name}
        self.stripped = ".symtab" not in self._index
        self.sections = SymbolTable(
            (
                (h["sh_addr"], h["sh_size"], name, 0)
                for name, h in headers
                if h is not None and h["sh_flags"] & _SHF_ALLOC and h["sh_addr"] and name
            ),
            extend_empty=False,
        )
        self.has_lines = ".debug_line" in self._index or ".zdebug_line" in self._index

    def _warn_damaged(self, exc: ElfDamaged) -> None:
        self._warn(
            f"{printable(self.path)}: {exc}: its samples are shown as {printable(self.name)}+offset "
            "where they need that section"
        )

    @property
    def functions(self) -> SymbolTable:
        """FUNC (and IFUNC) symbols."""
        return self._symbol_tables()[0]

    @property
    def objects(self) -> SymbolTable:
        """OBJECT symbols: global and static variables."""
        return self._symbol_tables()[1]

    def _symbol_tables(self) -> tuple[SymbolTable, SymbolTable]:
        if self._symbols is None:
            section = ".dynsym" if self.stripped else ".symtab"
            try:
                functions, objects = self._read_symbols(section, self._index.get(section))
            except (ElfDamaged, DataError) as exc:
                self._warn(
                    f"{printable(self.path)}: {_reason(exc)}: its functions and variables are shown "
                    f"as {printable(self.name)}+offset"
                )
                functions, objects = [], []
            self._symbols = (
                SymbolTable(functions, extend_empty=True),
                SymbolTable(objects, extend_empty=False),
            )
        return self._symbols

    def _read_symbols(
        self, section: str, index: int | None
    ) -> tuple[list[tuple[int, int, str, int]], list[tuple[int, int, str, int]]]:
        """(functions, objects) of the symbol table ``section``, the file's section ``index``."""
        functions: list[tuple[int, int, str, int]] = []
        objects: list[tuple[int, int, str, int]] = []
        if index is None:
            return functions, objects
        with open_input(self.path, "ELF file") as handle, _stage(section):
            # By index: a lookup by name would build pyelftools' map of every section, and fail
            # with any damaged one.
            table = ELFFile(handle).get_section(index)
            if not isinstance(table, SymbolTableSection):
                return functions, objects
            _check_size(table, self.size, section)
            strings = table.stringtable
            _check_size(strings, self.size, strings.name or "the symbol names")
            for symbol in table.iter_symbols():
                kind = symbol["st_info"]["type"]
                if kind not in ("STT_FUNC", "STT_OBJECT", "STT_GNU_IFUNC"):
                    continue
                if symbol["st_shndx"] == "SHN_UNDEF" or not symbol.name:
                    continue
                rank = _BIND_RANK.get(symbol["st_info"]["bind"], 3)
                entry = (symbol["st_value"], symbol["st_size"], symbol.name, rank)
                (objects if kind == "STT_OBJECT" else functions).append(entry)
        return functions, objects

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

    @property
    def decoded_rows(self) -> int:
        """DWARF line rows held now: those of the units that a lookup needed so far."""
        return self._lines.rows if self._lines is not None else 0

    def source(self, vaddr: int) -> str | None:
        """``file:line`` of the instruction at ``vaddr``, or None without DWARF line info."""
        if not self.has_lines or self._lines_failed:
            return None
        try:
            if self._lines is None:
                self._lines = _LineIndex(self.path, self.size, self._index)
            return self._lines.lookup(vaddr)
        except (ElfDamaged, DataError) as exc:
            self._lines_failed = True
            self._lines = None
            self._warn(f"{printable(self.path)}: {_reason(exc)}: its samples are shown without source lines")
            return None


class _LineIndex:
    """Which compilation unit covers an address, and each unit's rows once a lookup needs them.

    Holds the file's DWARF sections as pyelftools read them (their size, not the rows'), the units'
    address ranges, and the decoded units' :class:`LineTable`. A unit whose line program cannot be
    decoded raises :class:`ElfDamaged` (the file's lines are then given up, with one warning).
    """

    def __init__(self, path: str, size: int, sections: dict[str, int]) -> None:
        with open_input(path, "ELF file") as handle:
            elf = ELFFile(handle)
            debug = [
                (name, i)
                for name, i in sections.items()
                if name.startswith((".debug_", ".zdebug_", ".eh_frame"))
            ]
            for name, i in debug:
                with _stage(name):
                    _check_size(elf.get_section(i), size, name)
            try:
                with _stage(".debug_info"):
                    # Relocation is for object files, and linked DWARF files are paths the profiled
                    # program chose: neither is read.
                    self._dwarf: DWARFInfo = elf.get_dwarf_info(
                        relocate_dwarf_sections=False, follow_links=False
                    )
            except ElfDamaged:
                # pyelftools reads (and decompresses) every DWARF section at once: find which one
                # failed, for the warning.
                for name, i in debug:
                    with _stage(name):
                        elf.get_section(i).data()
                raise
        self._units: dict[int, LineTable] = {}
        ranges = self._ranges()
        ranges.sort()
        self._starts = array("Q", (r[0] for r in ranges))
        self._ends = array("Q", (r[1] for r in ranges))
        self._offsets = array("Q", (r[2] for r in ranges))

    def _ranges(self) -> list[tuple[int, int, int]]:
        """(start, end, unit offset) of every unit's code: ``.debug_aranges`` when it has any,
        else the units' ``DW_AT_low_pc``/``DW_AT_high_pc``, else the sequences of the unit's rows
        (a unit in several pieces, ``DW_AT_ranges``, is decoded here once to find them)."""
        dwarf = self._dwarf
        out: list[tuple[int, int, int]] = []
        with _stage(".debug_aranges"):
            aranges = dwarf.get_aranges()
            if aranges is not None:
                out = [
                    (e.begin_addr, e.begin_addr + e.length, e.info_offset)
                    for e in aranges.entries
                    if e.length > 0 and e.begin_addr + e.length < 1 << 64
                ]
        if out:
            return out
        with _stage(".debug_info"):
            units = list(dwarf.iter_CUs())
        for unit in units:
            with _stage(".debug_info"):
                top = unit.get_top_DIE()
                low = top.attributes.get("DW_AT_low_pc")
                high = top.attributes.get("DW_AT_high_pc")
            if low is not None and high is not None and "DW_AT_ranges" not in top.attributes:
                end = high.value if high.form == "DW_FORM_addr" else low.value + high.value
                if low.value < end < 1 << 64:
                    out.append((low.value, end, unit.cu_offset))
                continue
            table = self._units[unit.cu_offset] = self._decode(unit)
            out += [(start, end, unit.cu_offset) for start, end in table.sequences()]
        return out

    @property
    def rows(self) -> int:
        return sum(len(table) for table in self._units.values())

    def lookup(self, vaddr: int) -> str | None:
        i = bisect.bisect_right(self._starts, vaddr) - 1
        # Ranges of valid DWARF do not overlap; of damaged DWARF, the one starting last is taken.
        if i < 0 or vaddr >= self._ends[i]:
            return None
        offset = self._offsets[i]
        table = self._units.get(offset)
        if table is None:
            with _stage(".debug_info"):
                unit = self._dwarf.get_CU_at(offset)
            table = self._units[offset] = self._decode(unit)
        return table.lookup(vaddr)

    def _decode(self, unit: CompileUnit) -> LineTable:
        """The rows of ``unit``'s line program as a compact :class:`LineTable`."""
        with _stage(".debug_info"):
            unit.get_top_DIE()
        with _stage(".debug_line"):
            cached = self._dwarf.line_program_for_CU(unit)
        if cached is None:
            return LineTable(())
        with _stage(".debug_line"):
            # A fresh program over the same bytes: pyelftools keeps a decoded program's entries
            # (hundreds of bytes a row) for the file's life; this copy's go with it.
            program = LineProgram(
                cached.header,
                cached.stream,
                cached.structs,
                cached.program_start_offset,
                cached.program_end_offset,
            )
            return LineTable(_rows(program))


def _rows(program: LineProgram) -> Iterator[tuple[int, str | None]]:
    """(address, ``file:line``) of each row of ``program`` (None at the end of a sequence)."""
    files = program["file_entry"]
    base = 0 if program["version"] >= 5 else 1
    names: dict[int, str] = {}
    places: dict[tuple[int, int], str] = {}
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if state.end_sequence:
            yield state.address, None
            continue
        place = places.get((state.file, state.line))
        if place is None:
            name = names.get(state.file)
            if name is None:
                index = state.file - base
                raw = files[index].name if 0 <= index < len(files) else b"?"
                name = names[state.file] = os.path.basename(raw.decode("utf-8", "replace"))
            place = places[(state.file, state.line)] = f"{name}:{state.line}"
        yield state.address, place


def _load_segments(elf: ELFFile, handle: BinaryIO, size: int) -> tuple[Segment, ...]:
    """The PT_LOAD segments, from the program headers alone (pyelftools' own segments read the
    dynamic section's tables too, where a damaged section would cost the whole file)."""
    count, offset, entry = elf.num_segments(), elf["e_phoff"], elf["e_phentsize"]
    _check_count(count, offset, entry, size, "program")
    segments = []
    for i in range(count):
        handle.seek(offset + i * entry)
        phdr = elf.structs.Elf_Phdr.parse(handle.read(entry))
        if phdr["p_type"] == "PT_LOAD":
            flags = phdr["p_flags"]
            segments.append(
                Segment(phdr["p_vaddr"], phdr["p_memsz"], phdr["p_offset"], phdr["p_filesz"], _prot(flags))
            )
    return tuple(segments)


def _section_headers(elf: ELFFile, size: int, damaged: Callable[[ElfDamaged], None]) -> list[tuple[str, Any]]:
    """(name, header) of each section by index; ("", None) for one pyelftools cannot read (said
    to ``damaged``), so that one damaged section costs only itself."""
    with _stage("the section headers"):
        count = elf.num_sections()
        _check_count(count, elf["e_shoff"], elf["e_shentsize"], size, "section")
    out: list[tuple[str, Any]] = []
    for i in range(count):
        try:
            with _stage(f"section [{i}]"):
                section = elf.get_section(i)
                out.append((section.name, section.header))
        except ElfDamaged as exc:
            damaged(exc)
            out.append(("", None))
    return out


def _check_count(count: int, offset: int, entry_size: int, file_size: int, kind: str) -> None:
    """:class:`ElfDamaged` for a header table that cannot fit in the file: its count (up to 2^32
    with extended numbering) would be looped over before anything could tell."""
    if count and (entry_size <= 0 or offset + count * entry_size > file_size):
        raise ElfDamaged(
            f"the {kind} headers",
            f"{count:,} of {entry_size} bytes at byte {offset:,} of a {file_size:,}-byte file",
        )


def _check_size(section: Any, file_size: int, name: str) -> None:
    """:class:`ElfDamaged` for a section whose bytes lie past the file's end, or whose
    (decompressed) size is over :data:`MAX_SECTION_BYTES`: read as they are, they would be
    allocated before anything could tell."""
    shdr = section.header
    if shdr["sh_type"] == "SHT_NOBITS":
        return
    if shdr["sh_offset"] + shdr["sh_size"] > file_size:
        raise ElfDamaged(
            name, f"it ends at byte {shdr['sh_offset'] + shdr['sh_size']:,} of a {file_size:,}-byte file"
        )
    declared = section.data_size if shdr["sh_flags"] & _SHF_COMPRESSED else shdr["sh_size"]
    if declared > MAX_SECTION_BYTES:
        raise ElfDamaged(name, f"a size of {declared:,} bytes, over the {MAX_SECTION_BYTES:,} read")


def _reason(exc: ElfDamaged | DataError) -> str:
    return exc.message if isinstance(exc, DataError) else str(exc)


def _prot(p_flags: int) -> int:
    """PF_X 1, PF_W 2, PF_R 4 -> PROT_EXEC 4, PROT_WRITE 2, PROT_READ 1."""
    return (4 if p_flags & 1 else 0) | (2 if p_flags & 2 else 0) | (1 if p_flags & 4 else 0)


class ElfCache:
    """Parsed ELF files of one session, by path; a file that cannot be read is remembered as None.

    ``warnings`` collects, once a file, what could not be read in it (file and section) and what
    its samples show instead; :meth:`new_warnings` hands over those not yet taken.
    """

    def __init__(self) -> None:
        self._images: dict[str, ElfImage | None] = {}
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self._taken = 0

    def get(self, path: str) -> ElfImage | None:
        if path in self._images:
            return self._images[path]
        if path.startswith("/dev/"):
            # Device mappings (/dev/zero, a GPU's memory) are not files to read: opening some
            # devices acts on them.
            self._images[path] = None
            return None
        image: ElfImage | None
        shown = printable(os.path.basename(path))
        try:
            image = ElfImage(path, lambda message: self._warn(path, message))
        except NotElf:
            image = None
        except DataError as exc:
            image = None
            # A library that is gone (a deleted or replaced file) is common and says nothing; a path
            # that is now a FIFO, a folder or unreadable is said.
            if os.path.lexists(path):
                self._warn(path, f"{exc.message}: its samples are shown as {shown}+offset")
        except ElfDamaged as exc:
            image = None
            self._warn(path, f"{printable(path)}: {exc}: its samples are shown as {shown}+offset")
        self._images[path] = image
        return image

    def _warn(self, path: str, message: str) -> None:
        """One warning a file: the first thing that could not be read in it."""
        if path not in self._warned:
            self._warned.add(path)
            self.warnings.append(message)

    def new_warnings(self) -> list[str]:
        """The warnings added since the last call (safe while another thread adds more: a
        list's slice and append are atomic, and only what was sliced counts as taken)."""
        out = self.warnings[self._taken :]
        self._taken += len(out)
        return out
