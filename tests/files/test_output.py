"""The output rule: a regular file or a new path is replaced whole through an unguessable
temporary file; a device, FIFO or socket is written in place and stays what it is; a symlink is
followed; a refused path is one line."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from sectormon.errors import UsageError
from sectormon.files.output import OutputError, check_writable, is_stdout, open_output, replace_output
from tests.files.nodes import FULL, FifoReader, char_device, is_char_device, is_fifo


def test_a_new_file_appears_whole_with_the_usual_mode(tmp_path: Path) -> None:
    """mkstemp makes 0600: the file gets 0666 less the umask, as an open() would."""
    out = tmp_path / "job.jsonl"
    with replace_output(str(out), "-o") as handle:
        handle.write(b"data\n")
        assert not out.exists()  # nothing at the target before the end
    assert out.read_bytes() == b"data\n"
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.jsonl"]


def test_a_regular_file_is_replaced_atomically_and_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "job.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    old_inode = out.stat().st_ino
    with replace_output(str(out), "-o") as handle:
        handle.write(b"new\n")
        assert out.read_text() == "old\n"
    assert out.read_text() == "new\n"
    assert out.stat().st_ino != old_inode  # renamed over, not rewritten
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_a_failure_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "job.jsonl"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), replace_output(str(out), "-o") as handle:
        handle.write(b"half")
        raise RuntimeError("cut")
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.jsonl"]


def test_a_symlink_is_followed_and_stays_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target.name)
    with replace_output(str(link), "-o") as handle:
        handle.write(b"new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


@pytest.mark.parametrize("link", [False, True])
def test_a_character_device_is_written_in_place_not_replaced(tmp_path: Path, link: bool) -> None:
    """merge -o onto a device node replaced the node with a regular file."""
    node = char_device(tmp_path / "null")
    path = tmp_path / "link" if link else node
    if link:
        path.symlink_to(node)
    with replace_output(str(path), "-o") as handle:
        handle.write(b"data\n")
    assert is_char_device(node)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["null", *(["link"] if link else [])])


def test_a_full_device_is_one_output_error_and_stays(tmp_path: Path) -> None:
    node = char_device(tmp_path / "full", FULL)
    with (
        pytest.raises(OutputError, match=r"cannot write .*full: No space left on device"),
        replace_output(str(node), "-o") as handle,
    ):
        handle.write(b"x" * 100_000)
    assert is_char_device(node, FULL)


def test_a_fifo_is_written_in_place_and_its_reader_gets_the_data(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path / "pipe")
    with replace_output(str(reader.path), "-o") as handle:
        handle.write(b"through the pipe\n")
    assert reader.result() == b"through the pipe\n"
    assert is_fifo(reader.path)


def test_a_fifo_nobody_reads_is_one_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"^-o .*pipe: it is a named pipe nobody reads; start its reader"):
        open_output(str(fifo), "-o")
    assert is_fifo(fifo)


def test_a_socket_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(UsageError, match="it is a socket"), replace_output(str(path), "-o"):
            pass
    assert stat.S_ISSOCK(path.lstat().st_mode)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a" * 300, "the name is too long; give a shorter path"),
        ("file/x.jsonl", "a part of the path is a file, not a folder"),
        ("missing/x.jsonl", r"cannot write there \(No such file or directory\)"),
        (".", "is a folder; give a file path"),
    ],
    ids=["too-long", "not-a-dir", "missing-folder", "folder"],
)
def test_a_refused_path_is_one_line_for_every_opener(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "file").write_text("")
    path = str(tmp_path / name)
    for opener in (
        lambda: open_output(path, "-o"),
        lambda: replace_output(path, "-o").__enter__(),
        lambda: check_writable(path, "-o"),
    ):
        with pytest.raises(UsageError, match=message) as raised:
            opener()
        assert "\n" not in str(raised.value) and len(str(raised.value)) < 200


def test_planted_symlinks_at_guessable_temporary_names_are_never_followed(tmp_path: Path) -> None:
    """merge -o and import -o wrote `.partial-<pid>-NAME` with open("wb"): a symlink planted
    there for a range of pids made sectormon overwrite the symlink's target."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    pid = os.getpid()
    for guess in range(max(1, pid - 100), pid + 100):
        (tmp_path / f".partial-{guess}-job.jsonl").symlink_to(victim)
    with replace_output(str(tmp_path / "job.jsonl"), "-o") as handle:
        handle.write(b"job\n")
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "job.jsonl").read_text() == "job\n"
    assert all(p.is_symlink() for p in tmp_path.glob(".partial-*"))


def test_append_adds_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "marks.jsonl"
    out.write_text("a\n")
    with open_output(str(out), "bookmarks", append=True) as handle:
        handle.write(b"b\n")
    assert out.read_text() == "a\nb\n"


def test_is_stdout_compares_device_and_inode(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    other = tmp_path / "other.jsonl"
    other.write_text("")
    saved = os.dup(1)
    try:
        with out.open("w") as handle:
            os.dup2(handle.fileno(), 1)
            assert is_stdout(str(out))
            assert is_stdout("/dev/stdout")
            assert not is_stdout(str(other))
            assert not is_stdout(str(tmp_path / "missing"))
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def test_the_record_check_keeps_a_dangling_symlink(tmp_path: Path) -> None:
    """Found by the generator: the check removed the link it had written through."""
    link = tmp_path / "run.jsonl"
    link.symlink_to("later.jsonl")
    check_writable(str(link), "--record")
    assert link.is_symlink() and not (tmp_path / "later.jsonl").exists()
