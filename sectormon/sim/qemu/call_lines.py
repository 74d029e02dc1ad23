"""The source line an allocation site has in the function it is in, through inlined code.

A heap block is named by the function and line of its allocation call (:mod:`.heap`). When the
call was inlined - C++'s ``std::vector`` constructor calls ``operator new`` from
``new_allocator.h`` inlined into the user's function - the line table gives the header's line,
the same for every vector of that function, which would merge them into one object. DWARF says
where each inlined body was called from (``DW_TAG_inlined_subroutine``, ``DW_AT_call_line``):
the outermost inlined call containing the site, inside the function that holds it, is on the
user's own line.

One pass over the DIEs of each compilation unit holding a site (found with ``.debug_aranges``,
else every unit's ranges): sites are few. A file without DWARF, or with DWARF pyelftools cannot
read, gives no lines (the caller keeps the line table's).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.dwarf.ranges import BaseAddressEntry
from elftools.elf.elffile import ELFFile


def inlined_call_lines(path: str, vaddrs: Iterable[int]) -> dict[int, int]:
    """For each of ``vaddrs`` (ELF addresses) inside inlined code: the line, in the function
    holding it, of the outermost inlined call containing it."""
    wanted = sorted(set(vaddrs))
    if not wanted:
        return {}
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            if not elf.has_dwarf_info():
                return {}
            dwarf = elf.get_dwarf_info()
            out: dict[int, int] = {}
            for cu, addresses in _units(dwarf, wanted):
                out.update(_unit_lines(dwarf, cu, addresses))
            return out
    except (OSError, ELFError, ValueError, KeyError, IndexError, AttributeError, TypeError):
        return {}  # unreadable or unexpected DWARF: the line table's lines stand


def _units(dwarf: Any, wanted: list[int]) -> Iterator[tuple[Any, list[int]]]:
    aranges = dwarf.get_aranges()
    if aranges is not None:
        by_offset: dict[int, list[int]] = {}
        for vaddr in wanted:
            offset = aranges.cu_offset_at_addr(vaddr)
            if offset is not None:
                by_offset.setdefault(offset, []).append(vaddr)
        for offset, addresses in by_offset.items():
            yield dwarf.get_CU_at(offset), addresses
        return
    for cu in dwarf.iter_CUs():
        spans = _spans(dwarf, cu, cu.get_top_DIE())
        inside = [v for v in wanted if any(lo <= v < hi for lo, hi in spans)]
        if inside:
            yield cu, inside


def _unit_lines(dwarf: Any, cu: Any, addresses: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for die in cu.iter_DIEs():
        if die.tag != "DW_TAG_subprogram":
            continue
        spans = _spans(dwarf, cu, die)
        for vaddr in addresses:
            if vaddr not in out and any(lo <= vaddr < hi for lo, hi in spans):
                line = _outer_call_line(dwarf, cu, die, vaddr)
                if line is not None:
                    out[vaddr] = line
    return out


def _outer_call_line(dwarf: Any, cu: Any, die: Any, vaddr: int) -> int | None:
    """The call line of the first inlined subroutine containing ``vaddr`` below ``die``
    (looking through lexical blocks)."""
    for child in die.iter_children():
        if child.tag not in ("DW_TAG_inlined_subroutine", "DW_TAG_lexical_block"):
            continue
        if not any(lo <= vaddr < hi for lo, hi in _spans(dwarf, cu, child)):
            continue
        if child.tag == "DW_TAG_inlined_subroutine":
            line = child.attributes.get("DW_AT_call_line")
            return int(line.value) if line is not None else None
        found = _outer_call_line(dwarf, cu, child, vaddr)
        if found is not None:
            return found
    return None


def _spans(dwarf: Any, cu: Any, die: Any) -> list[tuple[int, int]]:
    """The [low, high) address ranges of ``die``."""
    attributes = die.attributes
    if "DW_AT_low_pc" in attributes and "DW_AT_high_pc" in attributes:
        low = int(attributes["DW_AT_low_pc"].value)
        high = attributes["DW_AT_high_pc"]
        return [(low, int(high.value) if high.form == "DW_FORM_addr" else low + int(high.value))]
    if "DW_AT_ranges" not in attributes:
        return []
    lists = dwarf.range_lists()
    if lists is None:
        return []
    top = cu.get_top_DIE()
    base = int(top.attributes["DW_AT_low_pc"].value) if "DW_AT_low_pc" in top.attributes else 0
    out = []
    for entry in lists.get_range_list_at_offset(attributes["DW_AT_ranges"].value, cu=cu):
        if isinstance(entry, BaseAddressEntry):
            base = entry.base_address
        elif entry.is_absolute:
            out.append((entry.begin_offset, entry.end_offset))
        else:
            out.append((base + entry.begin_offset, base + entry.end_offset))
    return out
