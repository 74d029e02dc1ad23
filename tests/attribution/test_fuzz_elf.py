"""Fuzzing the ELF reader: damaged binaries are symbolized in-process without a traceback or a hang.

Small binaries built here with gcc (with DWARF 5 and 4, with zlib-compressed debug sections, and
stripped) are mutated where the reader looks: the ELF header, the program and section header
tables, the symbol tables and their names, every ``.debug_*`` section (compressed ones included).
Each case loads the damaged copy as the kernel mapped the intact one and resolves code and data
addresses through :class:`~sectormon.attribution.symbolize.Symbolizer`, as a hot-spots run does:
whatever the damage, the result is a location (with at most one warning for the file), in well
under :data:`CASE_SECONDS`. Seeded: a failing case prints its seed and index to reproduce it.
"""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import pytest

from sectormon.attribution.elf import ElfCache
from sectormon.attribution.symbolize import Symbolizer
from sectormon.data.samples import Sample
from tests.attribution.elf_damage import VARIANTS, build, load_events, sections, symbol

BASE = 0x5555_0000_0000
PID = 99
CASE_SECONDS = 5.0
INTERESTING = (
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    struct.pack("<I", 0xFFFF_FFFF),
    struct.pack("<I", 0x8000_0000),
    struct.pack("<Q", 1 << 63),
    struct.pack("<Q", (1 << 64) - 1),
    struct.pack("<Q", 1 << 40),
    struct.pack("<H", 0xFFFF),
)


class Built:
    """One variant's intact bytes, where its parts lie, and the addresses a case resolves."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = path.read_bytes()
        self.sections = sections(path)
        header = self.data[:64]
        phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 0x36)
        self.regions: list[tuple[str, int, int]] = [
            ("ELF header", 0, 64),
            ("program headers", phoff, phentsize * phnum),
            ("section headers", shoff, shentsize * shnum),
        ]
        for name, section in self.sections.items():
            if name.startswith((".debug_", ".symtab", ".strtab", ".dynsym", ".dynstr", ".shstrtab")):
                self.regions.append((name, section.offset, section.size))
                self.regions.append((f"{name} header", section.header, shentsize))
        stripped = ".symtab" not in self.sections
        names = ("main",) if stripped else ("main", "add", "fill")
        self.ips = [BASE + self._address(name) + 1 for name in names]
        self.data_addresses = [] if stripped else [BASE + symbol(path, "counter")]

    def _address(self, name: str) -> int:
        if name == "main" and ".symtab" not in self.sections:
            return self.sections[".text"].offset  # some code: the stripped file has no symbol for it
        return symbol(self.path, name)


def mutate(built: Built, rng: random.Random) -> tuple[bytes, str]:
    """A damaged copy of the built file and what was done to it."""
    data = bytearray(built.data)
    what = []
    for _ in range(rng.randint(1, 6)):
        region, start, size = rng.choice(built.regions)
        offset = start + rng.randrange(max(size, 1))
        choice = rng.random()
        if choice < 0.5:
            data[offset] ^= 1 << rng.randrange(8)
            what.append(f"flip {region}@{offset:#x}")
        elif choice < 0.8:
            raw = rng.choice(INTERESTING)
            data[offset : offset + len(raw)] = raw
            what.append(f"set {region}@{offset:#x}={raw.hex()}")
        else:
            length = rng.randint(1, 16)
            data[offset : offset + length] = rng.randbytes(length)
            what.append(f"random {region}@{offset:#x}+{length}")
    if rng.random() < 0.05:
        cut = rng.randrange(len(data))
        del data[cut:]
        what.append(f"cut at {cut:#x}")
    return bytes(data), ", ".join(what)


def symbolize(built: Built, damaged: Path) -> list[str]:
    """Resolve the case's addresses in the damaged copy; the warnings it gave."""
    symbolizer = Symbolizer(ElfCache())
    for event in load_events(built.path, str(damaged), BASE, PID):
        symbolizer.feed(event)
    for ip in built.ips:
        for addr in [None, *built.data_addresses]:
            got = symbolizer.resolve(Sample(2, PID, PID, 0, ip, addr, 1, None, False))
            assert got.code.function and got.code.module
    return symbolizer.images.warnings


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> list[Built]:
    base = tmp_path_factory.mktemp("fuzz-elf")
    return [Built(build(base, variant)) for variant in VARIANTS]


def fuzz(builds: list[Built], directory: Path, seed: int, cases: int) -> tuple[int, float]:
    """(cases run, slowest case in seconds)."""
    rng = random.Random(seed)
    slowest = 0.0
    for index in range(cases):
        built = builds[index % len(builds)]
        data, what = mutate(built, rng)
        damaged = directory / "case.so"  # each case has its own ElfCache
        damaged.write_bytes(data)
        start = time.perf_counter()
        try:
            warnings = symbolize(built, damaged)
        except Exception as exc:  # the failure names the case
            raise AssertionError(f"seed {seed} case {index} ({built.path.name}: {what}): {exc!r}") from exc
        took = time.perf_counter() - start
        slowest = max(slowest, took)
        assert took < CASE_SECONDS, f"seed {seed} case {index} ({what}) took {took:.1f} s"
        assert len(warnings) <= 1 and all("\n" not in w for w in warnings), (seed, index, what, warnings)
    return cases, slowest


@pytest.mark.timeout(120)
def test_damaged_elf_files_symbolize_without_a_traceback(builds: list[Built], tmp_path: Path) -> None:
    assert fuzz(builds, tmp_path, seed=28, cases=150)[0] == 150


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_ten_thousand_damaged_elf_files(
    builds: list[Built], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.perf_counter()
    count, slowest = fuzz(builds, tmp_path, seed=34, cases=10_000)
    with capsys.disabled():
        print(f"\nELF fuzz: {count:,} cases in {time.perf_counter() - start:.0f} s, slowest {slowest:.2f} s")
    assert count >= 10_000
