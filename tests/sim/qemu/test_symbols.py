"""A program's global variables as data objects, from its ELF symbols, at its load bias."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.errors import UsageError
from sectormon.sim.objects import OTHER
from sectormon.sim.qemu.symbols import check_assign, symbol_objects

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc missing (it builds the program)")
SOURCE = Path(__file__).parents[3] / "examples" / "stream_table.c"


def _symbol(program: Path, name: str) -> int:
    for line in subprocess.run(
        ["nm", str(program)], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        fields = line.split()
        if fields[-1] == name:
            return int(fields[0], 16)
    raise AssertionError(f"{name} not in {program}")


def test_the_variables_are_objects_at_the_load_bias(tmp_path: Path) -> None:
    program = tmp_path / "prog"
    subprocess.run(["gcc", "-O2", "-o", str(program), str(SOURCE)], check=True)
    objects = symbol_objects(str(program), 0x4000000000)
    assert objects is not None and objects.names[0] == OTHER
    table = objects.names.index("table")
    start = 0x4000000000 + _symbol(program, "table")
    assert objects.lookup(start) == table
    assert objects.lookup(start + (40 << 10) - 1) == table
    assert objects.lookup(start + (40 << 10)) != table
    assert len(set(objects.names)) == len(objects.names)
    check_assign(str(program), {"table": "0", "stream": "1"})


# Stripped, a program keeps only its dynamic symbols: the example's include `stderr` (its usage
# message), which would be a variable to name; this one has none.
PLAIN = "double stream[1024]; long table[64];\nint main(void) { return (int)table[(long)stream[0]]; }\n"


def _stripped(tmp_path: Path) -> Path:
    source, program = tmp_path / "plain.c", tmp_path / "prog"
    source.write_text(PLAIN)
    subprocess.run(["gcc", "-O2", "-s", "-o", str(program), str(source)], check=True)
    return program


def test_a_stripped_program_cannot_be_assigned(tmp_path: Path) -> None:
    program = _stripped(tmp_path)
    with pytest.raises(UsageError, match="has no symbols naming its variables"):
        check_assign(str(program), {"table": "0"})


def test_heap_and_stack_names_wait_for_the_run(tmp_path: Path) -> None:
    """They exist once the program has run (the shim names them): not refused before, even
    without symbols; a global name still is."""
    program = _stripped(tmp_path)
    check_assign(str(program), {"heap:main:12": "1", "stack:0": "2"})
    with pytest.raises(UsageError, match="has no symbols naming its variables"):
        check_assign(str(program), {"heap:main:12": "1", "table": "0"})
