"""Which QEMU runs a program (its ELF header), and one line naming what is missing otherwise."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from sectormon.errors import UsageError
from sectormon.sim.qemu import target
from sectormon.sim.qemu.target import Target, read_target


def _elf(path: Path, machine: int, interp: bool, elf_class: int = 2) -> Path:
    """A minimal ELF header with one program header (PT_INTERP or PT_LOAD)."""
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4], header[5] = elf_class, 1
    struct.pack_into("<HH", header, 16, 2, machine)
    struct.pack_into("<Q", header, 32, 64)  # e_phoff
    struct.pack_into("<HH", header, 54, 56, 1)  # e_phentsize, e_phnum
    phdr = bytearray(56)
    struct.pack_into("<I", phdr, 0, 3 if interp else 1)
    path.write_bytes(bytes(header + phdr))
    path.chmod(0o755)
    return path


def test_the_elf_header_picks_the_emulator(tmp_path: Path) -> None:
    assert read_target(str(_elf(tmp_path / "a", 183, True))) == Target(str(tmp_path / "a"), "aarch64", True)
    assert read_target(str(_elf(tmp_path / "x", 62, False))) == Target(str(tmp_path / "x"), "x86_64", False)


def test_an_aarch64_program_runs_as_an_a64fx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(target.os.path, "isdir", lambda path: path == target.AARCH64_SYSROOT)
    command = Target("./p", "aarch64", True).qemu_command("ring_fd=3")
    assert command == [
        "/usr/bin/qemu-aarch64", "-cpu", "a64fx", "-L", target.AARCH64_SYSROOT,
        "-plugin", f"{target.PLUGIN},ring_fd=3", "./p",
    ]  # fmt: skip
    assert "-L" not in Target("./p", "aarch64", False).qemu_command("ring_fd=3")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"#!/bin/sh\n", "not an ELF program (a script: give its interpreter"),
        (b"plain text", "not an ELF program"),
        (b"\x7fELF\x01" + bytes(59), "not a 64-bit little-endian ELF program"),
    ],
)
def test_what_is_no_program_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "p"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=re.escape(message)):
        read_target(str(path))


def test_another_architecture_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="a arm \\(32-bit\\) binary; sectormon sim runs x86_64 and aarch64"):
        read_target(str(_elf(tmp_path / "p", 40, True)))


def test_a_missing_program_or_qemu_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="no such program"):
        read_target(str(tmp_path / "absent"))
    monkeypatch.setattr(target.shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match="qemu-x86_64 is not installed \\(install the package qemu-user\\)"):
        Target("./p", "x86_64", False).qemu_command("ring_fd=3")
    monkeypatch.setattr(target.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(target.os.path, "isdir", lambda path: False)
    with pytest.raises(UsageError, match="install the package libc6-arm64-cross"):
        Target("./p", "aarch64", True).qemu_command("ring_fd=3")


def test_a_plugin_not_built_is_one_line_saying_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(target, "PLUGIN", tmp_path / "absent.so")
    with pytest.raises(
        UsageError, match=re.escape("the QEMU plugin is not built (reinstall with a C compiler")
    ):
        target.check_built()
