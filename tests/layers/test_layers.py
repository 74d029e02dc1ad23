"""The layering of the design is enforced: import contracts hold, a broken one is caught, and the
headless JSON path never loads the TUI's toolkit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

needs_lint_imports = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is not installed (pip install -e '.[dev]')"
)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root`` with the repository's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
        check=False,
    )


@needs_lint_imports
def test_the_contracts_hold() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@needs_lint_imports
@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("io/jsonl.py", "import sectormon.metrics.engine", "io/ never imports metrics/"),
        ("perf/group.py", "import sectormon.data.readings", "perf/ is a leaf"),
        ("metrics/windows.py", "import sectormon.session.live", "layers"),
        ("data/frames.py", "import textual", "only ui/ imports textual"),
        ("data/readings.py", "import yaml", "data/ holds records"),
        ("host/topology.py", "import sectormon.rotation.sampler", "layers"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    shutil.copytree(REPO / "sectormon", tmp_path / "sectormon", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "sectormon" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    done = lint_imports(tmp_path)
    assert done.returncode != 0
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout


def test_the_json_stream_never_loads_textual() -> None:
    code = (
        "import sys; from sectormon.cli import main; "
        "status = main(['sim', '--json', '--count', '1', '--threads', '1']); "
        "assert 'textual' not in sys.modules, 'textual was imported'; sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 3  # the header, one frame and the final frame
