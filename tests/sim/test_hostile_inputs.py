"""Hostile simulator inputs (issues 28 and 34): each ends with one line naming the file, line or
option, exit 2, the same on both cores, in bounded memory; none is a traceback, a hang or a crash.

The memory tests run the installed command in a child and read its peak RSS from the kernel's
accounting of that child (``RUSAGE_CHILDREN`` of a wrapper that runs only it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sectormon import cli
from sectormon.errors import DataError, UsageError
from sectormon.sim import native
from sectormon.sim.config import parse_size
from sectormon.sim.trace import parse_line
from tests.e2e.helpers import run_sectormon, sectormon_command
from tests.sim.cores import CORES

MB = 1 << 20


def _one_line_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    """Run ``sectormon ARGS`` in-process: it must exit 2 with one line on stderr, nothing on stdout."""
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("sectormon: ") and err.count("\n") == 1, err
    return err


def _peak_rss(command: str, timeout: float = 120) -> tuple[int, str, int]:
    """Run ``command`` (a shell line) in a wrapper whose only children it makes: its exit status,
    stderr and the peak RSS (bytes) of the largest process it ran."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1], shell=True, capture_output=True, text=True)\n"
        "sys.stdout.write(f'{done.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
        "sys.stdout.write(done.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, command], capture_output=True, text=True, timeout=timeout, check=True
    )
    first, _, stderr = done.stdout.partition("\n")
    code, rss_kib = first.split()
    return int(code), stderr, int(rss_kib) * 1024


def _trace(tmp_path: Path, text: str, name: str = "t.din") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ----------------------------------------------------------------------------- trace addresses
@pytest.mark.parametrize("core", CORES)
def test_address_wider_than_64_bits_is_one_line_naming_the_line_on_both_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, core: str
) -> None:
    monkeypatch.setenv(native.ENV, core)
    path = _trace(tmp_path, "0 100\n0 1" + "0" * 16 + "\n")  # 2**64
    err = _one_line_error(capsys, ["sim", "--trace", path, "--summary"])
    assert f"{path}:2: address '1{'0' * 16}' is wider than 64 bits" in err


def test_the_widest_addresses_give_the_same_counts_on_both_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if native.compiled is None:
        pytest.skip("compiled core not built")
    path = _trace(tmp_path, "0 ffffffffffffffff\n1 0x0000ffffffffffffff00\n0 ffffffffffffff00 3\n0 0\n")
    counts = {}
    for core in ("python", "c"):
        monkeypatch.setenv(native.ENV, core)
        assert cli.main(["sim", "--trace", path, "--summary"]) == 0
        counts[core] = json.loads(capsys.readouterr().out)["counts"]
    assert counts["python"] == counts["c"]


@pytest.mark.parametrize("core", CORES)
def test_a_20_million_digit_address_is_the_same_one_line_error_on_both_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, core: str
) -> None:
    monkeypatch.setenv(native.ENV, core)
    path = _trace(tmp_path, "0 " + "7" * 20_000_000 + "\n")
    err = _one_line_error(capsys, ["sim", "--trace", path, "--summary"])
    assert (
        err
        == f"sectormon: {path}:1: line longer than 4,096 bytes (the file is damaged or not of this kind)\n"
    )


# ----------------------------------------------------------------------------- objects files
@pytest.mark.parametrize(
    ("size", "problem"),
    [
        ("9" * 5000, "line longer than 4,096 bytes"),  # past Python's int-string limit (4,300)
        ("9" * 4000, "ends beyond the 64-bit address space"),
        ("²", "size '²' is not a size"),
        ("２K", "size '２K' is not a size"),
        ("1e3", "size '1e3' is not a size"),
        ("17179869184G", "ends beyond the 64-bit address space"),
    ],
    ids=["5000-digits", "4000-digits", "superscript", "fullwidth", "float", "2**64"],
)
def test_object_sizes_out_of_range_or_not_ascii_digits_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: str, problem: str
) -> None:
    trace = _trace(tmp_path, "0 100\n")
    objects = _trace(tmp_path, f"a 100 {size}\n", "o.txt")
    err = _one_line_error(capsys, ["sim", "--trace", trace, "--objects", objects, "--summary"])
    assert f"{objects}:1: " in err and problem in err


def test_100000_objects_are_refused_at_the_limit_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, "0 100\n")
    objects = _trace(tmp_path, "".join(f"o{i} {i * 4096:x} 4K\n" for i in range(100_000)), "o.txt")
    err = _one_line_error(capsys, ["sim", "--trace", trace, "--objects", objects, "--summary"])
    assert f"{objects}:4097: more than 4,096 objects" in err


@pytest.mark.parametrize("core", CORES)
def test_the_most_objects_stay_in_bounded_memory(tmp_path: Path, core: str) -> None:
    objects = _trace(tmp_path, "".join(f"o{i} {i * 4096:x} 4K\n" for i in range(4096)), "o.txt")
    trace = _trace(tmp_path, "".join(f"0 {i * 4096 + 64:x}\n" for i in range(4096)))
    command = f"{sectormon_command()} sim --trace {trace} --objects {objects} --summary >/dev/null"
    code, err, rss = _peak_rss(f"{native.ENV}={core} {command}")
    assert code == 0, err
    assert rss < 200 * MB, rss  # 100,000 objects took 1.8 GB of the Python model


# ----------------------------------------------------------------------------- devices, pipes, endless lines
@pytest.mark.parametrize(
    "command",
    [
        "sim --trace /dev/zero --summary",
        "sim --trace {trace} --objects /dev/zero --summary",
        "sim --trace /dev/stdin --summary < /dev/zero",
        "cat /dev/zero | {sectormon} sim --trace /dev/stdin --summary",
        "cat /dev/zero | {sectormon} sim --trace {trace} --objects /dev/stdin --summary",
        "sim --trace {trace} --objects {trace} --summary",
    ],
)
def test_endless_or_device_input_ends_with_one_line_under_200_mb(tmp_path: Path, command: str) -> None:
    trace = _trace(tmp_path, "0 100\n")
    sectormon = sectormon_command()
    line = command.format(trace=trace, sectormon=sectormon)
    if line.startswith("sim "):
        line = f"{sectormon} {line}"
    code, err, rss = _peak_rss(line, timeout=60)
    assert code == 2 and err.count("\n") == 1 and err.startswith("sectormon: "), err
    assert rss < 200 * MB, rss  # /dev/zero reached 15-20 GB in 40 s


def test_a_fifo_without_a_writer_does_not_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo.din"
    os.mkfifo(fifo)
    err = _one_line_error(capsys, ["sim", "--trace", str(fifo), "--summary"])
    assert "no data accesses" in err


def test_a_piped_trace_is_simulated_whole(tmp_path: Path) -> None:
    text = "".join(f"{i % 2} {0x10000 + i * 72:x}\n" for i in range(20_000))
    path = _trace(tmp_path, text)
    from_file = run_sectormon("sim", "--trace", path, "--summary")
    piped = run_sectormon("sim", "--trace", "/dev/stdin", "--summary", input=text)
    assert from_file.returncode == piped.returncode == 0, piped.stderr
    a, b = json.loads(from_file.stdout), json.loads(piped.stdout)
    assert b["accesses"]["counted"] == 20_000  # was 0: validation had consumed the stream
    assert a["counts"] == b["counts"]
    assert b["kernel"]["traces"][0]["path"] == "/dev/stdin"


def test_a_bad_line_of_a_piped_trace_names_the_pipe_and_line() -> None:
    done = run_sectormon("sim", "--trace", "/dev/stdin", "--summary", input="0 100\n0 zz\n")
    assert done.returncode == 2
    assert done.stderr.startswith("sectormon: /dev/stdin:2: address 'zz' is not hexadecimal")


# ----------------------------------------------------------------------------- kernel sizes
@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize(
    ("kernel", "size", "message"),
    [
        ("scenario-a", "reused=100G", "--size reused: '100G' is too large (at most 16M)"),
        ("random", "table=99999999999999999999999999G", "too large (at most 64G)"),
        ("random", "accesses=" + "9" * 5000, "--size accesses: '99999"),
        ("scenario-b", "n=²", "--size n: '²' is not a size"),
        ("scenario-b", "tile_i=2048", "(at most 1K)"),
    ],
)
def test_kernel_sizes_have_a_stated_maximum_on_both_cores(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    core: str,
    kernel: str,
    size: str,
    message: str,
) -> None:
    monkeypatch.setenv(native.ENV, core)
    err = _one_line_error(capsys, ["sim", "--kernel", kernel, "--size", size, "--json", "--count", "1"])
    assert message in err


@pytest.mark.parametrize("option", ["--l1-sectors", "--l2-sectors"])
def test_way_counts_in_unicode_digits_are_one_line(capsys: pytest.CaptureFixture[str], option: str) -> None:
    err = _one_line_error(capsys, ["sim", option, "²,1,0,0", "--summary"])
    assert "comma-separated way counts" in err


def test_the_largest_kernel_sizes_run_in_bounded_memory() -> None:
    for size in ("reused=16M", "n=4096,tile_i=1024,tile_j=4096,pad=4096"):
        kernel = "scenario-a" if "reused" in size else "scenario-b"
        code, err, rss = _peak_rss(
            f"{sectormon_command()} sim --kernel {kernel} --size {size} --json --count 1 >/dev/null"
        )
        assert code == 0, err
        assert rss < 200 * MB, (size, rss)  # reused=100G reached 16 GB in 60 s


# ----------------------------------------------------------------------------- properties of the parsers
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["1" + "0" * 16, "0" * 30 + "ff", "9" * 5000, "²", "１２", "16M", "17M", "0x", "-0"]
)


@settings(max_examples=400, deadline=None)
@given(label=st.sampled_from(["0", "1", "2", "3", "²"]), address=_TEXT, sector=st.none() | _TEXT)
@example(label="0", address="1" + "0" * 16, sector=None)  # 2**64: was accepted, then OverflowError in C
def test_a_din_line_parses_to_a_64_bit_address_or_is_a_data_error(
    label: str, address: str, sector: str | None
) -> None:
    text = f"{label} {address}" + (f" {sector}" if sector is not None else "")
    try:
        parsed = parse_line(text, "t.din", 7)
    except DataError as exc:
        assert exc.line == 7 and "\n" not in str(exc)
        return
    if parsed is not None:
        assert 0 <= parsed[1] < 1 << 64
        assert parsed[2] in (None, 0, 1, 2, 3)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, maximum=st.sampled_from([256, 4096, 16 << 20, 64 << 30]))
@example(text="9" * 5000, maximum=4096)  # past Python's int-string limit: a ValueError traceback
@example(text="²", maximum=4096)
def test_a_size_is_at_most_its_maximum_or_a_usage_error(text: str, maximum: int) -> None:
    try:
        value = parse_size(text, "--size x", maximum)
    except UsageError as exc:
        assert str(exc).startswith("--size x: ") and "\n" not in str(exc)
        return
    assert 0 <= value <= maximum
