"""The QEMU plugin (plugin.c) and the shim (shim.c) built with UndefinedBehaviorSanitizer trace real
programs: threads, heap blocks, marks and the shim's edge cases. Any undefined behaviour aborts
QEMU or the program (-fno-sanitize-recover) with the sanitizer's report. (AddressSanitizer cannot
be loaded into QEMU with a plugin, nor under a preloaded library into a guest: UBSan only.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sectormon.sim.qemu import target
from sectormon.sim.qemu.capture import trace_program

PROGRAMS = Path(__file__).parent / "programs"
SOURCES = Path(target.__file__).parent
FLAGS = ["-O1", "-g", "-std=c11", "-fPIC", "-shared", "-fvisibility=hidden", "-fexceptions", "-pthread"]
FLAGS += ["-fsanitize=undefined", "-fno-sanitize-recover=all", "-Wall", "-Wextra"]


@pytest.mark.e2e
def test_the_plugin_and_the_shim_are_clean_under_ubsan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("qemu-x86_64") is None or shutil.which("gcc") is None:
        pytest.skip("needs qemu-x86_64 and gcc (qemu-user, gcc)")
    plugin, shim = tmp_path / "plugin.so", tmp_path / "shim-x86_64.so"
    for out, source, extra in ((plugin, "plugin.c", []), (shim, "shim.c", ["-ldl"])):
        built = subprocess.run(
            ["gcc", *FLAGS, "-o", str(out), str(SOURCES / source), *extra], capture_output=True, text=True
        )
        if built.returncode != 0:
            pytest.skip(f"gcc cannot build with UBSan here: {built.stderr[:200]}")
    monkeypatch.setattr(target, "PLUGIN", plugin)
    monkeypatch.setattr(target, "SHIM", tmp_path / "shim-{arch}.so")
    for name, flags in (("heap_hostile", []), ("stacks", ["-pthread"]), ("heap_sites", [])):
        program = tmp_path / name
        subprocess.run(["gcc", "-O2", *flags, "-o", str(program), str(PROGRAMS / f"{name}.c")], check=True)
        traced = trace_program([str(program)])
        assert traced.exit_code == 0, name
        assert traced.shim.loaded and traced.heap is not None, name
    err = capfd.readouterr().err
    assert "runtime error" not in err, err[-3000:]
