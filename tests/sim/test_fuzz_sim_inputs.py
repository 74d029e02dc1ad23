"""Fuzz generators for the simulator's inputs (slow tier): din traces, ``--objects`` files and
kernel ``--size`` options, each run through both cores in-process, the way ``sectormon sim``
builds and runs them (:func:`sim_options`'s file handling, :func:`build_sim_source`, the machine).

Every case is seeded (``random.Random(SEED + index)``), small (a few dozen lines, a short run) and
the batch runs under pytest-timeout, so a hang fails the test instead of stalling the suite. A case
may be accepted or refused; refused means a :class:`SectormonError` (one line, exit 2), never any
other exception, and both cores must give the same outcome: the same counters, or the same error.
A failing case is reported with its index; ``_case(index)`` rebuilds it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sectormon.errors import SectormonError
from sectormon.sim import native
from sectormon.sim.objects import parse_objects
from sectormon.sim.trace import open_trace
from sectormon.sources.sim.source import SimOptions, build_sim_source

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(native.compiled is None, reason="the compiled core is not built: nothing to compare"),
]

SEED = 28_34
TRACE_CASES = 7_000
OBJECT_CASES = 3_000
KERNEL_CASES = 600
RUN_CYCLES = 20_000  # a kernel case's run: enough for misses, prefetches and write-backs

_HEXDIGITS = "0123456789abcdefABCDEF"
_HOSTILE_TOKENS = [
    "",
    "-1",
    "²",
    "１２",
    "٣",
    "0x",
    "0X1f",
    "1_0",
    "1e3",
    "+10",
    "nan",
    "\x1b[31m",
    "\x00",
    "\u202e",
    "\ud800",
    "1" + "0" * 16,  # 2**64
    "f" * 17,
    "0" * 40 + "ff",  # wide only by its zeros
    "9" * 400,
    "7" * 5000,  # a line over the cap
]


def _address(rng: random.Random, hostile: float) -> str:
    kind = rng.random() * (0.8 + hostile)
    if kind < 0.5:
        value = 0x10000 + rng.randrange(1 << 22)
    elif kind < 0.7:
        value = rng.randrange(1 << 64)
    elif kind < 0.8:
        value = (1 << 64) - 1 - rng.randrange(1 << 12)
    else:
        return rng.choice(_HOSTILE_TOKENS)
    text = f"{value:x}" if rng.random() < 0.8 else f"{value:X}"
    if rng.random() < 0.2:
        text = "0x" + text
    if rng.random() < 0.05:
        text = "0" * rng.randrange(1, 30) + text
    return text


def _din_line(rng: random.Random, hostile: float) -> str:
    """One line; ``hostile`` (0 to 0.2) is how likely each field is to be broken."""
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.07:
        return "# " + rng.choice(_HOSTILE_TOKENS)
    label = rng.choice("0001112") if rng.random() >= hostile / 2 else rng.choice(["3", "7", "²", "-0", "00"])
    fields = [label, _address(rng, hostile)]
    if rng.random() < 0.3:
        fields.append(
            rng.choice("0123") if rng.random() >= hostile else rng.choice(["4", "-1", "²", "01", "x"])
        )
    if rng.random() < hostile / 5:
        fields.append(rng.choice(_HOSTILE_TOKENS))
    sep = " " if rng.random() < 0.95 else rng.choice(["\t", "  ", " \r", "\x0b"])
    return sep.join(fields)


def _bytes(lines: list[str], rng: random.Random, hostile: float) -> bytes:
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if rng.random() < 0.9:
        data += b"\n"
    if rng.random() < hostile / 3:  # damaged: a byte flipped, cut, or not UTF-8
        data = bytearray(data)
        where = rng.randrange(len(data)) if data else 0
        if data:
            data[where] ^= 1 << rng.randrange(8)
        data = (
            bytes(data[: rng.randrange(len(data) + 1)]) if rng.random() < 0.5 else bytes(data) + b"\xff\xfe"
        )
    return data


def _size(rng: random.Random, hostile: float = 0.2) -> str:
    if rng.random() >= hostile:
        return f"{rng.randrange(1, 64)}{rng.choice(['', 'K', 'K', 'k'])}"
    return rng.choice(
        ["0", "²", "２K", "1e3", "-4", "K", "4096b", "9" * 30, "9" * 4000, "17179869184G", "1G"]
    )


def _objects_line(rng: random.Random, index: int, hostile: float) -> str:
    name = (
        f"o{index}"
        if rng.random() >= hostile / 2
        else rng.choice(["[other]", "o0", "\x1b]0;x\x07", "名", "a b"])
    )
    start = f"{0x10000 + index * 0x100000 + rng.randrange(4) * 0x40000:x}"
    if rng.random() < hostile / 2:
        start = _address(rng, hostile)
    return f"{name} {start} {_size(rng, hostile)}" if rng.random() >= hostile / 5 else f"{name} {start}"


def _case(index: int, tmp_path: Path) -> Callable[[], SimOptions]:
    """The options of case ``index`` (files written to ``tmp_path``) as a builder: building reads
    the files as the command does, so a refused file raises there."""
    rng = random.Random(SEED + index)
    # Half the cases are well-formed (they run), the others broken here and there (most refused).
    hostile = 0.0 if rng.random() < 0.5 else rng.choice([0.01, 0.05, 0.2])
    trace = tmp_path / f"c{index}.din"
    trace.write_bytes(_bytes([_din_line(rng, hostile) for _ in range(rng.randrange(1, 40))], rng, hostile))
    objects: Path | None = None
    if index >= TRACE_CASES:
        objects = tmp_path / f"c{index}.objects"
        lines = [_objects_line(rng, i, hostile) for i in range(rng.randrange(1, 12))]
        objects.write_bytes(_bytes(lines, rng, hostile))
    sector_cache = rng.choice([None, True, False])
    prefetch = rng.random() < 0.7

    def build() -> SimOptions:
        return SimOptions(
            traces=(open_trace(str(trace)),),
            objects=parse_objects(str(objects)) if objects is not None else None,
            sector_cache=sector_cache,
            prefetch=prefetch,
            l1_sectors=(2, 1, 1, 0) if sector_cache else None,
        )

    return build


def _kernel_case(index: int) -> SimOptions:
    rng = random.Random(SEED + 1_000_000 + index)
    kernel = rng.choice(["scenario-a", "scenario-b", "random"])
    sizes: dict[str, str] = {}
    keys = {
        "scenario-a": ["reused", "passes", "vec", "shuffle"],
        "scenario-b": ["n", "tile_i", "tile_j", "pad", "vec"],
        "random": ["table", "accesses", "vec"],
    }[kernel]
    for key in rng.sample(keys, rng.randrange(len(keys) + 1)):
        roll = rng.random()
        if roll < 0.5:
            sizes[key] = str(rng.choice([1, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]))
        elif roll < 0.8:
            sizes[key] = _size(rng)
        else:
            sizes[key] = rng.choice(
                [*_HOSTILE_TOKENS[:15], "16M", "17M", "64G", "65G", "99999999999999999999999999G"]
            )
    return SimOptions(kernel=kernel, sizes=sizes, threads=rng.choice([1, 2, 5]), seed=rng.randrange(100))


def _outcome(options: Callable[[], SimOptions], core: str, cycles: float | None) -> tuple[str, Any]:
    """``("ok", counters)`` or ``("error", message)``; any other exception propagates."""
    try:
        source = build_sim_source(options(), loop=False)
        machine = source.machine
        assert machine.core == core
        if cycles is None:
            machine.run_to_completion()
        else:
            machine.run_until(cycles)
        return "ok", [
            (
                t.acc,
                t.cyc,
                t.l1_refill_dm,
                t.l1_refill_pf,
                t.l1_wb,
                t.l2_refill_dm,
                t.wait_l1,
                t.wait_l2,
                *t.object_counts(),
            )
            for t in machine.threads
        ]
    except SectormonError as exc:
        text = str(exc)
        assert "\n" not in text and text, text
        return "error", text


def _compare(
    monkeypatch: pytest.MonkeyPatch, label: str, options: Callable[[], SimOptions], cycles: float | None
) -> str:
    outcomes = {}
    for core in ("python", "c"):
        monkeypatch.setenv(native.ENV, core)
        try:
            outcomes[core] = _outcome(options, core, cycles)
        except Exception as exc:  # pragma: no cover - what the test is here to catch
            raise AssertionError(f"{label} on the {core} core: {type(exc).__name__}: {exc}") from exc
    assert outcomes["python"] == outcomes["c"], f"{label}: the cores disagree: {outcomes}"
    return outcomes["c"][0]


def test_fuzzed_traces_and_objects_agree_on_both_cores_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    seen = {"ok": 0, "error": 0}
    for index in range(TRACE_CASES + OBJECT_CASES):
        seen[_compare(monkeypatch, f"case {index} (seed {SEED + index})", _case(index, tmp_path), None)] += 1
    cases = seen["ok"] + seen["error"]
    assert cases >= 10_000
    assert seen["ok"] > cases // 10 and seen["error"] > cases // 10  # both paths are exercised
    print(f"{cases} trace/objects cases, {seen} in {time.monotonic() - started:.1f} s")


def test_fuzzed_kernel_sizes_agree_on_both_cores_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    seen = {"ok": 0, "error": 0}
    for index in range(KERNEL_CASES):
        options = _kernel_case(index)
        seen[_compare(monkeypatch, f"kernel case {index}: {options}", lambda o=options: o, RUN_CYCLES)] += 1
    assert sum(seen.values()) == KERNEL_CASES
    assert seen["ok"] > KERNEL_CASES // 10 and seen["error"] > KERNEL_CASES // 10
    print(f"{KERNEL_CASES} kernel cases, {seen} in {time.monotonic() - started:.1f} s")
