"""Where fapp and compare write: a full disk or a closed stdout is one line and exit 1, an import
never overwrites its own input and never leaves a partial recording."""

from __future__ import annotations

import resource
import signal
import subprocess
from pathlib import Path

import pytest

from sectormon.cli import main
from tests.e2e.helpers import sectormon_command

CSV = (
    "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    "0x0011,0x0008,0x01e0,0x03e0,0x03e8\n"
    "FAPP-cpupa,Thread,0,0,0,k,0,1,100000000,220000000,220000000,300000000,5000,700,90\n"
    "FAPP-cpupa,Thread,0,0,1,k,0,1,100000100,221000000,221000000,310000000,5100,700,90\n"
)


@pytest.fixture
def measurement(tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "sc1.csv").write_text(CSV)
    (folder / "info.json").write_text('{"cntfrq_hz": 100000000}')
    return folder


def _run(
    argv: list[str], *, stdout: int | None, shell_close: bool = False
) -> subprocess.CompletedProcess[str]:
    cmd = [sectormon_command(), *argv]
    if shell_close:  # the command with its stdout closed: `sectormon ... >&-`
        cmd = ["sh", "-c", 'exec "$0" "$@" >&-', *cmd]
    return subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, check=False)


def _commands(folder: Path) -> list[list[str]]:
    return [
        ["fapp", str(folder)],
        ["fapp", str(folder), "--json"],
        ["compare", str(folder), str(folder)],
        ["compare", str(folder), str(folder), "--json"],
        ["compare", str(folder), str(folder), "--csv"],
        ["compare", str(folder), str(folder), "--markdown"],
    ]


def test_a_full_disk_is_one_line_and_exit_1(measurement: Path) -> None:
    """> /dev/full ended in an OSError traceback."""
    for argv in _commands(measurement):
        with open("/dev/full", "w") as full:
            proc = _run(argv, stdout=full.fileno())
        assert proc.returncode == 1, (argv, proc.stderr)
        assert proc.stderr.strip().splitlines() == [
            "sectormon: cannot write the report to stdout: No space left on device "
            "(free space or write it elsewhere)"
        ], argv


def test_a_closed_stdout_is_one_line_and_exit_1(measurement: Path) -> None:
    """>&- ended in an AttributeError traceback ('NoneType' object has no attribute 'write')."""
    for argv in _commands(measurement):
        proc = _run(argv, stdout=None, shell_close=True)
        assert proc.returncode == 1, (argv, proc.stderr)
        assert proc.stderr.strip().splitlines() == [
            "sectormon: cannot write the report: stdout is closed (redirect it to a file or a pipe)"
        ], argv


def test_a_reader_that_goes_away_is_quiet(measurement: Path) -> None:
    proc = subprocess.run(
        f'"{sectormon_command()}" compare "{measurement}" "{measurement}" --all | head -c 10',
        shell=True, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["sc1.csv", "info.json", "./sc1.csv"])
def test_import_refuses_to_overwrite_its_own_input(
    measurement: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    before = {p.name: p.read_bytes() for p in measurement.iterdir()}
    assert main(["import", "fapp", str(measurement), "-o", f"{measurement}/{name}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"sectormon: -o {measurement}/{name} is {measurement / name.lstrip('./')}, which this import reads: "
        "write the recording elsewhere"
    )
    assert {p.name: p.read_bytes() for p in measurement.iterdir()} == before


def test_import_refuses_a_hard_link_to_its_input(
    measurement: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = measurement.parent / "link.csv"
    link.hardlink_to(measurement / "sc1.csv")
    assert main(["import", "fapp", str(measurement), "-o", str(link)]) == 2
    assert "which this import reads" in capsys.readouterr().err
    assert (measurement / "sc1.csv").read_text() == CSV


def _limit_file_size() -> None:
    """The child may write files of 2 KiB at most; past that, writes fail with EFBIG (a full disk)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_a_failed_import_leaves_no_partial_file_and_keeps_the_old_one(
    measurement: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rec.jsonl"
    out.write_text("an older recording\n")
    proc = subprocess.run(
        [sectormon_command(), "import", "fapp", str(measurement), "-o", str(out)],
        capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=_limit_file_size,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # a failed write (was 2, as for bad input)
    assert proc.stderr.strip().splitlines()[-1] == (
        f"sectormon: cannot write recording {out}: File too large "
        f"(free space or write it elsewhere; nothing was written to {out})"
    )
    assert out.read_text() == "an older recording\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "rec.jsonl"]  # no .partial-* left
    assert main(["import", "fapp", str(measurement), "-o", str(out)]) == 0
    assert out.read_text().startswith('{"schema":"sectormon/recording/')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "rec.jsonl"]
