"""host/ is the one package that reads /proc and /sys: no other module names a path there.

Everything under the roots goes through :mod:`sectormon.host.roots`, so a fake tree moves every
reader at once. Two kinds of paths stay outside: perf/, the leaf wrapper of the perf_event ABI
(it imports nothing of sectormon's, so it takes its sysfs root as an argument and explains its
errno from the kernel's own files), and a process's own ``/proc/self/...``, which no fake tree
stands for.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sectormon"
READERS = ("host", "perf")
PREFIXES = ("/proc", "/sys")


def _not_paths(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (they may name paths freely) or parts of
    an f-string (which is looked at as a whole)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.update(id(part) for part in node.values)
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def host_paths(source: str) -> list[str]:
    """The /proc and /sys paths ``source`` names outside docstrings (f-strings by their start),
    a process's own /proc/self/ files left out."""
    tree = ast.parse(source)
    skipped = _not_paths(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            text = node.value
        else:
            continue
        if text.startswith(PREFIXES) and not text.startswith("/proc/self/"):
            found.append(text)
    return found


def test_only_host_and_perf_name_proc_and_sys_paths() -> None:
    named = {
        str(path.relative_to(PACKAGE)): paths
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in READERS
        and (paths := host_paths(path.read_text(encoding="utf-8")))
    }
    assert named == {}, f"read these through sectormon.host (host/roots.py): {named}"


def test_the_check_sees_paths_and_f_strings_but_not_docstrings_or_self() -> None:
    source = (
        '"""Reads /proc/PID/maps."""\n'
        'A = "/proc/cpuinfo"\n'
        'B = f"/sys/devices/system/cpu/cpu{1}"\n'
        'C = "/proc/self/status"\n'
        'def f() -> None:\n    """From /sys/bus."""\n'
    )
    assert host_paths(source) == ["/proc/cpuinfo", "/sys/devices/system/cpu/cpu"]
