"""Which QEMU runs a program, from its ELF header, and what is missing to run it.

``qemu-x86_64`` for x86_64 binaries, ``qemu-aarch64 -cpu a64fx`` for aarch64 ones (a dynamic one
with ``-L`` naming Debian's cross libc, package ``libc6-arm64-cross``). Everything that stops a run
before it starts is one :class:`~sectormon.errors.UsageError` naming the program or the package to
install: a missing file, a script or other non-ELF file, a 32-bit binary or another architecture,
a missing QEMU, a plugin not built.
"""

from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from sectormon.errors import UsageError

PLUGIN = Path(__file__).parent / "lib" / "sectormon-qemu.so"
SHIM = Path(__file__).parent / "lib" / "sectormon-shim-{arch}.so"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
_MACHINES = {62: "x86_64", 183: "aarch64"}  # ELF e_machine
_PT_LOAD, _PT_INTERP = 1, 3
_PF_X = 1
_OTHER_MACHINES = {3: "i386", 40: "arm (32-bit)", 8: "mips", 20: "powerpc", 21: "powerpc64", 243: "riscv64"}


@dataclass(frozen=True, slots=True)
class Target:
    """The program to trace: its path, architecture, whether it has an ELF interpreter, and the
    ELF address of its executable segment (with where QEMU loaded it, the load bias of a PIE)."""

    path: str
    arch: str
    dynamic: bool
    code_vaddr: int = 0

    def shim(self) -> Path | None:
        """The shim to preload into this program (``shim.c``), None where it was not built."""
        path = Path(str(SHIM).format(arch=self.arch))
        return path if path.is_file() else None

    def qemu_command(self, plugin_args: str, preload: Path | None = None) -> list[str]:
        """The QEMU command line that runs this program with the plugin, and ``preload`` in the
        guest's LD_PRELOAD (ahead of any the user set; QEMU itself is not preloaded); the
        program's own arguments follow it. An absolute path is found on the host even under
        ``-L``: QEMU looks in the sysroot first, then at the path itself."""
        qemu = shutil.which(f"qemu-{self.arch}")
        if qemu is None:
            raise UsageError(
                f"sim -- {self.path}: qemu-{self.arch} is not installed (install the package qemu-user)"
            )
        cmd = [qemu]
        if self.arch == "aarch64":
            cmd += ["-cpu", "a64fx"]
            if self.dynamic:
                if not os.path.isdir(AARCH64_SYSROOT):
                    raise UsageError(
                        f"sim -- {self.path}: a dynamic aarch64 binary needs the aarch64 libc in "
                        f"{AARCH64_SYSROOT} (install the package libc6-arm64-cross, or link it -static)"
                    )
                cmd += ["-L", AARCH64_SYSROOT]
        if preload is not None:
            given = os.environ.get("LD_PRELOAD", "")
            cmd += ["-E", f"LD_PRELOAD={preload}{':' + given if given else ''}"]
        return [*cmd, "-plugin", f"{PLUGIN},{plugin_args}", self.path]


def resolve(command: str) -> str:
    """The file ``command`` names: a path as it is, a bare name looked up on PATH."""
    path = command if "/" in command else shutil.which(command)
    if path is None or not os.path.isfile(path):
        raise UsageError(f"sim -- {command}: no such program (give its path, or a command on PATH)")
    return path


def read_target(command: str) -> Target:
    """The :class:`Target` of ``command`` (see the module docstring for what is refused)."""
    path = resolve(command)
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if header[:4] != b"\x7fELF":
                hint = (
                    " (a script: give its interpreter, e.g. sim -- sh SCRIPT)" if header[:2] == b"#!" else ""
                )
                raise UsageError(f"sim -- {command}: not an ELF program{hint}")
            if len(header) < 64 or header[4] != 2 or header[5] != 1:
                raise UsageError(
                    f"sim -- {command}: not a 64-bit little-endian ELF program (use x86_64 or aarch64)"
                )
            (machine,) = struct.unpack_from("<H", header, 18)
            phoff, phentsize, phnum = (
                *struct.unpack_from("<Q", header, 32),
                *struct.unpack_from("<HH", header, 54),
            )
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
    except OSError as exc:
        raise UsageError(f"sim -- {command}: cannot read it ({exc.strerror})") from None
    arch = _MACHINES.get(machine)
    if arch is None:
        name = _OTHER_MACHINES.get(machine, f"ELF machine {machine}")
        raise UsageError(f"sim -- {command}: a {name} binary; sectormon sim runs x86_64 and aarch64 programs")
    # (p_type, p_flags, p_offset, p_vaddr) of each program header
    headers = [
        struct.unpack_from("<IIQQ", table, i * phentsize)
        for i in range(phnum)
        if (i + 1) * phentsize <= len(table) and phentsize >= 24
    ]
    dynamic = any(h[0] == _PT_INTERP for h in headers)
    code = [h[3] for h in headers if h[0] == _PT_LOAD and h[1] & _PF_X]
    return Target(path, arch, dynamic, min(code, default=0))


def check_built() -> None:
    """One error naming what to do when the plugin or its compiled consumer was not built."""
    try:
        from sectormon.sim.qemu import _capture  # noqa: F401 (only whether it is there)
    except ImportError:
        built = False
    else:
        built = PLUGIN.is_file()
    if not built:
        raise UsageError(
            "sim -- CMD: the QEMU plugin is not built (reinstall with a C compiler and the Python "
            "headers: pip install -e .)"
        )
