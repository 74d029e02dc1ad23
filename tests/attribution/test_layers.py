"""Layering of the sampling path: the new perf modules stay a leaf, and nothing pulls in Textual."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[2] / "sectormon" / "perf"


LEAF = ["records.py", "ring.py", "sampling.py", "abi.py", "syscall.py", "events.py"]


@pytest.mark.parametrize("module", LEAF)
def test_perf_sampling_modules_import_only_the_standard_library_perf_and_errors(module: str) -> None:
    tree = ast.parse((PERF / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    ours = {name for name in imported if name.startswith("sectormon")}
    assert all(name == "sectormon.errors" or name.startswith("sectormon.perf") for name in ours), ours


def test_the_hotspots_command_never_imports_textual() -> None:
    code = (
        "import sys, sectormon.commands.hotspots, sectormon.attribution.report, "
        "sectormon.sources.perf.samples, sectormon.attribution.symbolize; "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
