"""Every writer of the installed command against what is not a regular file: a character device
stays a device (``merge -o`` replaced it with a regular file), a FIFO stays a FIFO and its reader
gets the data, a full device is one line and exit 1. ``--record`` into the file stdout goes to is
refused; ``--help`` and ``--version`` on a full or closed stdout exit 1 with one line.

The device nodes are the test's own (mknod in tmp_path), never the machine's /dev/null or
/dev/full: see tests/files/nodes.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sectormon.data.readings import Mark
from tests.e2e.helpers import run_sectormon, sectormon_command
from tests.files.nodes import FULL, NULL, FifoReader, char_device, is_char_device, is_fifo

pytestmark = pytest.mark.e2e

CSV = (
    "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    "0x0011,0x0008,0x01e0,0x03e0,0x03e8\n"
    "FAPP-cpupa,Thread,0,0,0,k,0,1,100000000,220000000,220000000,300000000,5000,700,90\n"
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two nodes' recordings (for merge) and a fapp measurement folder (for import)."""
    folder = tmp_path_factory.mktemp("inputs")
    made = {}
    for host in ("n1", "n2"):
        node = folder / f"{host}.jsonl"
        done = run_sectormon(
            "sim", "--json", "--count", "3", "--record", str(node), env={**os.environ, "SECTORMON_HOST": host}
        )
        assert done.returncode == 0, done.stderr
        made[host] = str(node)
    fapp = folder / "fapp"
    fapp.mkdir()
    (fapp / "sc1.csv").write_text(CSV)
    (fapp / "info.json").write_text('{"cntfrq_hz": 100000000}')
    made["fapp"] = str(fapp)
    return made


WRITERS = {
    "merge -o": lambda i, out: ["merge", i["n1"], i["n2"], "-o", out],
    "import fapp -o": lambda i, out: ["import", "fapp", i["fapp"], "-o", out],
    "--record": lambda i, out: ["sim", "--json", "--count", "3", "--record", out],
    "--json -o": lambda i, out: ["sim", "--json", "--count", "3", "-o", out],
}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sectormon_command(), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, timeout=120, check=False,
    )  # fmt: skip


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("sectormon: warning:")]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_character_device_stays_a_device(writer: str, inputs: dict[str, str], tmp_path: Path) -> None:
    node = char_device(tmp_path / "out.jsonl", NULL)
    proc = _run(WRITERS[writer](inputs, str(node)))
    assert proc.returncode == 0, proc.stderr
    assert is_char_device(node, NULL), "the device node was replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_fifo_stays_a_fifo_and_its_reader_gets_the_output(
    writer: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    reader = FifoReader(tmp_path / "out.jsonl")
    proc = _run(WRITERS[writer](inputs, str(reader.path)))
    data = reader.result()
    assert proc.returncode == 0, proc.stderr
    assert is_fifo(reader.path), "the FIFO was replaced"
    assert data.startswith(b'{"schema":"sectormon/') and data.endswith(b"\n")


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_full_device_is_one_line_exit_1_and_stays(
    writer: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    node = char_device(tmp_path / "out.jsonl", FULL)
    proc = _run(WRITERS[writer](inputs, str(node)))
    assert proc.returncode == 1, proc.stderr
    assert is_char_device(node, FULL)
    assert "Traceback" not in proc.stderr
    if writer == "--record":  # a side job: the monitor goes on, says so once, then exits 1
        assert proc.stderr.count("recording stopped: cannot write recording") == 1, proc.stderr
    else:
        assert len(_errors(proc.stderr)) == 1 and "No space left on device" in proc.stderr, proc.stderr


@pytest.mark.parametrize("writer", ["merge -o", "import fapp -o", "--json -o"])
def test_a_fifo_nobody_reads_is_one_line_not_a_hang(
    writer: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    proc = _run(WRITERS[writer](inputs, str(fifo)))
    assert proc.returncode == 2
    assert _errors(proc.stderr) == [
        f"sectormon: -o {fifo}: it is a named pipe nobody reads; start its reader first, or give a file path"
    ]
    assert is_fifo(fifo)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_name_too_long_is_one_line_exit_2(writer: str, inputs: dict[str, str], tmp_path: Path) -> None:
    proc = _run(WRITERS[writer](inputs, str(tmp_path / ("x" * 300))))
    assert proc.returncode == 2
    assert len(_errors(proc.stderr)) == 1 and "the name is too long; give a shorter path" in proc.stderr


def test_import_into_a_path_below_a_file_is_one_line(inputs: dict[str, str], tmp_path: Path) -> None:
    """import fapp DIR -o existing_file/x.jsonl ended in a NotADirectoryError traceback."""
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "x.jsonl"
    proc = _run(["import", "fapp", inputs["fapp"], "-o", str(out)])
    assert proc.returncode == 2
    assert _errors(proc.stderr) == [
        f"sectormon: -o {out}: a part of the path is a file, not a folder; give a file path in a folder"
    ]


@pytest.mark.parametrize("writer", ["merge -o", "import fapp -o"])
def test_a_symlink_to_a_device_is_followed_and_both_stay(
    writer: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    node = char_device(tmp_path / "null", NULL)
    link = tmp_path / "out.jsonl"
    link.symlink_to(node)
    proc = _run(WRITERS[writer](inputs, str(link)))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and is_char_device(node, NULL)


@pytest.mark.parametrize("writer", ["merge -o", "import fapp -o"])
def test_planted_symlinks_at_the_old_temporary_names_are_not_followed(
    writer: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    """The temporary file was `.partial-<pid>-NAME`, opened with open("wb"): symlinks planted for
    a range of pids made sectormon overwrite their target."""
    from sectormon.cli import main

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    pid = os.getpid()  # in-process: the pid the command runs with
    for guess in range(max(1, pid - 50), pid + 50):
        (tmp_path / f".partial-{guess}-out.jsonl").symlink_to(victim)
    out = tmp_path / "out.jsonl"
    assert main(WRITERS[writer](inputs, str(out))) == 0
    assert victim.read_text() == "precious\n"
    assert out.read_text().startswith('{"schema":"sectormon/')


@pytest.mark.parametrize("make", ["device", "fifo"])
def test_bookmarks_go_into_a_device_or_fifo_in_place(make: str, tmp_path: Path) -> None:
    from sectormon.io.bookmarks import BookmarkFile, bookmarks_path

    recording = tmp_path / "run.jsonl"
    path = bookmarks_path(recording)
    reader = None
    if make == "device":
        char_device(path, NULL)
    else:
        reader = FifoReader(path)
    kept = BookmarkFile.__new__(BookmarkFile)  # not read: a FIFO's reader is this test
    kept.path, kept.marks, kept.warnings = path, [], []
    kept.add(Mark(t=1.0, kind="bookmark", label="b1"))
    if reader is not None:
        assert b'"label":"b1"' in reader.result()
        assert is_fifo(path)
    else:
        assert is_char_device(path, NULL)


def test_record_into_the_file_stdout_goes_to_is_refused(tmp_path: Path) -> None:
    """`sim --json --record out.jsonl > out.jsonl` exited 0 with both outputs interleaved."""
    out = tmp_path / "out.jsonl"
    with out.open("w") as handle:
        proc = subprocess.run(
            [sectormon_command(), "sim", "--json", "--count", "3", "--record", str(out)],
            stdout=handle, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"sectormon: --record {out} is where stdout goes: the recording and the frame stream would be "
        "mixed in one file; record to another file"
    )
    assert out.read_text() == ""


def test_record_to_dev_stdout_is_refused_unless_stdout_is_free() -> None:
    proc = run_sectormon("sim", "--json", "--count", "3", "--record", "/dev/stdout")
    assert proc.returncode == 2 and "--record /dev/stdout is where stdout goes" in proc.stderr
    assert proc.stdout == ""
    # with the frames in a file or no frames at all, stdout is the recording's alone
    proc = run_sectormon("sim", "--headless", "--count", "3", "--record", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('{"schema":"sectormon/recording/')


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["merge", "--help"]])
def test_help_and_version_on_a_full_device_exit_1_with_one_line(argv: list[str], tmp_path: Path) -> None:
    """They exited 0 with nothing written."""
    node = char_device(tmp_path / "full", FULL)
    with node.open("w") as full:
        proc = subprocess.run(
            [sectormon_command(), *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 1
    what = "version" if argv == ["--version"] else "help"
    assert proc.stderr.splitlines() == [
        f"sectormon: cannot write the {what} to stdout: No space left on device "
        "(free space or write it elsewhere)"
    ]


def test_version_on_a_closed_stdout_exits_1_with_one_line() -> None:
    proc = subprocess.run(
        ["sh", "-c", 'exec "$0" --version >&-', sectormon_command()],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "sectormon: cannot write the version: stdout is closed (redirect it to a file or a pipe)"
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        ("too-long", "the recording name is too long (give a shorter path)"),
        ("fifo", "is a named pipe (the recording must be a regular file)"),
        ("folder", "is a folder (the recording must be a regular file)"),
    ],
)
def test_a_merge_input_that_is_no_file_is_one_line(
    make: str, message: str, inputs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node path of 256+ characters ended in an ENAMETOOLONG traceback."""
    from sectormon.cli import main

    node = tmp_path / ("n" * 300 if make == "too-long" else "node.jsonl")
    if make == "fifo":
        os.mkfifo(node)
    elif make == "folder":
        node.mkdir()
    assert main(["merge", str(node), inputs["n2"], "-o", str(tmp_path / "job.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(message), err


@pytest.mark.parametrize("argv", [["top"], ["--pid"], ["--pid", "--json"]])
def test_the_process_list_without_a_terminal_is_one_line_and_exit_2(argv: list[str]) -> None:
    proc = subprocess.run(
        [sectormon_command(), *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        "sectormon: the process list needs a terminal: give the process as --pid PID to count without one"
    ]
