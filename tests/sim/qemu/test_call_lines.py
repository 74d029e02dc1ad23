"""The line an allocation site has in its function through inlined code (call_lines.py): the
user's lines for two vectors whose ``operator new`` call is inlined from the library's headers,
nothing for a file without DWARF or not ELF at all."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.attribution.elf import ElfImage
from sectormon.sim.qemu.call_lines import inlined_call_lines

SOURCE = """#include <vector>
#include <cstdio>
int main() {
    std::vector<double> a(1000, 1.0);
    std::vector<double> b(500, 2.0);
    std::printf("%g\\n", a[3] + b[4]);
}
"""


def _new_calls(program: Path) -> list[int]:
    """The ELF addresses of main's calls of operator new (the call instruction's last byte)."""
    listing = subprocess.run(["objdump", "-d", str(program)], capture_output=True, text=True, check=True)
    lines = listing.stdout.splitlines()
    return [
        int(lines[i + 1].split(":")[0], 16) - 1
        for i, line in enumerate(lines)
        if "call" in line and "<_Znwm@plt>" in line
    ]


def test_inlined_calls_have_the_lines_of_the_function_holding_them(tmp_path: Path) -> None:
    if shutil.which("g++") is None or shutil.which("objdump") is None:
        pytest.skip("needs g++ and objdump (g++, binutils)")
    source, program = tmp_path / "vec.cc", tmp_path / "vec"
    source.write_text(SOURCE)
    subprocess.run(["g++", "-O2", "-g", "-o", str(program), str(source)], check=True)
    calls = _new_calls(program)
    assert len(calls) == 2
    assert all(ElfImage(str(program)).source(c).startswith("new_allocator.h:") for c in calls)  # type: ignore[union-attr]
    assert inlined_call_lines(str(program), calls) == {calls[0]: 4, calls[1]: 5}
    stripped = tmp_path / "stripped"
    subprocess.run(["g++", "-O2", "-o", str(stripped), str(source)], check=True)
    assert inlined_call_lines(str(stripped), _new_calls(stripped)) == {}


def test_a_file_that_is_not_elf_gives_no_lines(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF" + bytes(100))
    assert inlined_call_lines(str(junk), [0x1000]) == {}
    assert inlined_call_lines(str(tmp_path / "missing"), [0x1000]) == {}
    assert inlined_call_lines(str(junk), []) == {}
