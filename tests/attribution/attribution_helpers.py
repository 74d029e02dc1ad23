"""Helpers of the attribution tests (a uniquely named module: conftest names are not unique).

A small C program compiled once per session: the ELF tests read its symbols and lines and check
them against binutils (``nm``, ``addr2line``) as the peer."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = r"""
int counter;
static double table[4096];
int initialised[16] = {1};
const char message[] = "hello";

__attribute__((noinline)) int add(int a, int b) {
    return a + b;
}

__attribute__((noinline)) static void fill(void) {
    for (int i = 0; i < 4096; i++)
        table[i] = i;
}

int main(void) {
    fill();
    counter = add(1, 2);
    return (int)table[5] + initialised[0] + message[0];
}
"""


@dataclass(frozen=True)
class Program:
    path: Path
    stripped: Path
    source: Path


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (needed to build or check the test program)")
    return found


def build_program(base: Path) -> Program:
    cc = shutil.which("cc") or tool("gcc")
    source = base / "demo.c"
    source.write_text(SOURCE)
    path = base / "demo"
    subprocess.run([cc, "-g", "-O1", "-fPIE", "-pie", "-o", str(path), str(source)], check=True)
    stripped = base / "demo-stripped"
    subprocess.run([tool("strip"), "-o", str(stripped), str(path)], check=True)
    return Program(path, stripped, source)


def nm_symbols(path: Path) -> dict[str, tuple[int, int, str]]:
    """``name -> (address, size, type letter)`` of the defined, sized symbols, by binutils' nm."""
    out = subprocess.run(
        [tool("nm"), "-S", "--defined-only", str(path)], check=True, capture_output=True, text=True
    ).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            address, size, kind, name = parts
            symbols[name] = (int(address, 16), int(size, 16), kind)
    return symbols


def addr2line(path: Path, address: int) -> str:
    """``file:line`` of ``address`` by binutils' addr2line (base name of the file)."""
    out = subprocess.run(
        [tool("addr2line"), "-e", str(path), hex(address)], check=True, capture_output=True, text=True
    ).stdout.strip()
    where, _, line = out.rpartition(":")
    return f"{Path(where).name}:{line.split()[0]}"
