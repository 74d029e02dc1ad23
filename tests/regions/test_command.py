"""``sectormon markers``: pkg-config style flags, and one line when the library was not built."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon import __version__
from sectormon.cli import main
from sectormon.regions import library


def test_cflags_and_libs_print_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", "--cflags", "--libs"]) == 0
    out = capsys.readouterr().out
    assert (
        out
        == f"-I{library.INCLUDE_DIR} -L{library.LIB_DIR} -Wl,-rpath,{library.LIB_DIR} -lsectormon-markers\n"
    )
    assert (library.INCLUDE_DIR / "fj_tool" / "fapp.h").is_file()
    assert (library.INCLUDE_DIR / "likwid-marker.h").is_file()
    assert (library.INCLUDE_DIR / "sectormon_markers.h").is_file()


def test_pc_prints_a_pkg_config_file_of_this_install(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", "--pc"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"prefix={library.PACKAGE_DIR}\n") and f"Version: {__version__}\n" in text
    assert main(["markers", "--pc-path"]) == 0
    assert (Path(capsys.readouterr().out.strip()) / "sectormon-markers.pc").is_file()


@pytest.mark.parametrize("args", [[], ["--cflags"], ["--libs"], ["--pc"]])
def test_without_a_built_library_one_line_says_what_is_missing(
    args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(library, "LIBRARY_FILE", tmp_path / "libsectormon-markers.so")
    assert main(["markers", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "was not built: no C compiler was found" in lines[0]
