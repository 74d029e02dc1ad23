"""Damaged ELF files for the attribution tests: small binaries built with gcc, then bytes changed
at offsets computed from the intact file's section table (a uniquely named helper module)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sectormon.data.samples import MapEvent

SOURCE = r"""
int counter;
static double table[4096];
__attribute__((noinline)) int add(int a, int b) { return a + b; }
__attribute__((noinline)) static void fill(void) { for (int i = 0; i < 4096; i++) table[i] = i; }
int main(void) { fill(); counter = add(1, 2); return (int)table[5] + counter; }
"""

VARIANTS = {
    "plain": ["-g", "-O1"],
    "zlib": ["-g", "-O1", "-gz=zlib"],  # SHF_COMPRESSED debug sections
    "dwarf4": ["-gdwarf-4", "-O1"],
    "stripped": ["-O1", "-s"],  # .dynsym only
}


@dataclass(frozen=True)
class Section:
    """Where a section's header (``header``) and its bytes (``offset``, ``size``) lie in the file."""

    header: int
    offset: int
    size: int


def build(base: Path, variant: str = "plain") -> Path:
    """The demo program compiled with the variant's flags into ``base``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the ELF files")
    source = base / "damage-demo.c"
    source.write_text(SOURCE)
    path = base / f"demo-{variant}"
    subprocess.run([cc, *VARIANTS[variant], "-fPIE", "-pie", "-o", str(path), str(source)], check=True)
    return path


def sections(path: Path) -> dict[str, Section]:
    """The intact file's sections by name."""
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        return {
            s.name: Section(elf["e_shoff"] + i * elf["e_shentsize"], s["sh_offset"], s["sh_size"])
            for i, s in enumerate(elf.iter_sections())
        }


def damage(source: Path, target: Path, edits: list[tuple[int, bytes]]) -> Path:
    """A copy of ``source`` with each ``(offset, bytes)`` written over it."""
    data = bytearray(source.read_bytes())
    for offset, raw in edits:
        data[offset : offset + len(raw)] = raw
    target.write_bytes(bytes(data))
    return target


def symbol(path: Path, name: str) -> int:
    """The ELF address of symbol ``name`` of the intact file."""
    with path.open("rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        found = table.get_symbol_by_name(name)  # type: ignore[union-attr]
        assert found, name
        return int(found[0]["st_value"])


def load_events(intact: Path, mapped: str, base: int, pid: int) -> list[MapEvent]:
    """The MMAP2 events of ``mapped`` (a damaged copy) loaded at ``base``, laid out as the intact
    file's segments (the kernel mapped the file before it was damaged)."""
    events = []
    with intact.open("rb") as handle:
        for segment in ELFFile(handle).iter_segments():
            if segment["p_type"] != "PT_LOAD":
                continue
            start = base + segment["p_vaddr"] - segment["p_vaddr"] % 4096
            end = base + segment["p_vaddr"] + segment["p_memsz"]
            pgoff = segment["p_offset"] - segment["p_offset"] % 4096
            flags = segment["p_flags"]
            prot = (4 if flags & 1 else 0) | (2 if flags & 2 else 0) | (1 if flags & 4 else 0)
            events.append(MapEvent(1, pid, start, end + -end % 4096, pgoff, mapped, prot))
    return events
