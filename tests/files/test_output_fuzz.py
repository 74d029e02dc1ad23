"""Seeded generator over output paths of every kind x every writer: no traceback, no node replaced,
no planted symlink followed.

Each case makes a fresh folder with one target (new path, regular file, symlinks, a character
device, a FIFO with and without a reader, a socket, a folder, a name too long, a path below a
file, a missing folder), plants symlinks at the old guessable temporary names, and runs one
writer in-process: the output rule's three openers, the recorder, bookmarks, and ``merge`` and
``import`` through the CLI. A failing case prints its seed and index.
"""

from __future__ import annotations

import os
import random
import socket
import stat
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest

from sectormon.data.readings import Mark
from sectormon.errors import SectormonError
from sectormon.files.output import check_writable, open_output, replace_output
from sectormon.io.bookmarks import BookmarkFile
from sectormon.io.recording import RecordingWriter
from tests.files.nodes import NULL, FifoReader, char_device

pytestmark = pytest.mark.slow

SEED = 3301
CASES = 1200

KINDS = (
    "new", "regular", "link-regular", "link-dangling", "device", "link-device", "fifo-read",
    "fifo-alone", "socket", "folder", "too-long", "below-file", "missing-folder",
)  # fmt: skip


def _make(kind: str, folder: Path, stack: ExitStack) -> tuple[Path, FifoReader | None]:
    target = folder / "out.jsonl"
    reader = None
    if kind == "regular":
        target.write_text("old\n")
    elif kind == "link-regular":
        (folder / "real").write_text("old\n")
        target.symlink_to("real")
    elif kind == "link-dangling":
        target.symlink_to("nowhere")
    elif kind == "device":
        char_device(target, NULL)
    elif kind == "link-device":
        char_device(folder / "null", NULL)
        target.symlink_to("null")
    elif kind == "fifo-read":
        reader = FifoReader(target)
    elif kind == "fifo-alone":
        os.mkfifo(target)
    elif kind == "socket":
        server = stack.enter_context(socket.socket(socket.AF_UNIX))
        server.bind(str(target))
    elif kind == "folder":
        target.mkdir()
    elif kind == "too-long":
        target = folder / ("n" * 300)
    elif kind == "below-file":
        (folder / "file").write_text("")
        target = folder / "file" / "out.jsonl"
    elif kind == "missing-folder":
        target = folder / "missing" / "out.jsonl"
    return target, reader


def _writers(inputs: dict[str, str]) -> dict[str, Callable[[Path], object]]:
    from sectormon.cli import main
    from tests.io.recording_synth import header

    def replace(path: Path) -> None:
        with replace_output(str(path), "-o") as out:
            out.write(b"x\n")

    def in_place(path: Path) -> None:
        with open_output(str(path), "-o") as out:
            out.write(b"x\n")

    def record(path: Path) -> None:
        writer = RecordingWriter(path, header())
        writer.write_mark(Mark(t=0.0, kind="end"))
        writer.close()

    def bookmark(path: Path) -> None:
        kept = BookmarkFile.__new__(BookmarkFile)  # the file is the target itself, never read here
        kept.path, kept.marks, kept.warnings = path, [], []
        kept.add(Mark(t=1.0, kind="bookmark", label="b"))

    return {
        "replace_output": replace,
        "open_output": in_place,
        "check_writable": lambda path: check_writable(str(path), "--record"),
        "recorder": record,
        "bookmarks": bookmark,
        "merge": lambda path: main(["merge", inputs["n1"], inputs["n2"], "-o", str(path)]),
        "import": lambda path: main(["import", "fapp", inputs["fapp"], "-o", str(path)]),
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from sectormon.cli import main
    from tests.e2e.test_outputs import CSV

    folder = tmp_path_factory.mktemp("fuzz-inputs")
    made = {}
    for host in ("n1", "n2"):
        node = folder / f"{host}.jsonl"
        os.environ["SECTORMON_HOST"] = host
        try:
            assert main(["sim", "--headless", "--count", "2", "--record", str(node)]) == 0
        finally:
            del os.environ["SECTORMON_HOST"]
        made[host] = str(node)
    (folder / "fapp").mkdir()
    (folder / "fapp" / "sc1.csv").write_text(CSV)
    (folder / "fapp" / "info.json").write_text('{"cntfrq_hz": 100000000}')
    made["fapp"] = str(folder / "fapp")
    return made


def _kind_of(path: Path) -> int | None:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except OSError:
        return None


@pytest.mark.timeout(900)
def test_every_writer_on_every_kind_of_path(tmp_path: Path, inputs: dict[str, str]) -> None:
    rng = random.Random(SEED)
    writers = _writers(inputs)
    ran = 0
    for index in range(CASES):
        kind, name = rng.choice(KINDS), rng.choice(sorted(writers))
        folder = tmp_path / f"case{index}"
        folder.mkdir()
        victim = folder / "victim"
        victim.write_text("precious\n")
        pid = os.getpid()
        for guess in range(pid - 3, pid + 4):
            (folder / f".partial-{guess}-out.jsonl").symlink_to(victim)
        with ExitStack() as stack:
            target, reader = _make(kind, folder, stack)
            before = _kind_of(target)
            where = f"seed {SEED} case {index}: {name} on {kind}"
            try:
                writers[name](target)
            except SectormonError:
                pass  # one line, exit 1 or 2: allowed
            except Exception as exc:
                pytest.fail(f"{where}: {type(exc).__name__}: {exc}")
            if reader is not None:
                reader.result(wake=True)
            if before not in (None, stat.S_IFREG):
                assert _kind_of(target) == before, f"{where}: the node was replaced"
            assert victim.read_text() == "precious\n", f"{where}: a planted symlink was followed"
        ran += 1
    assert ran >= CASES
