"""Pinned replays: ``replay --json`` of the shipped and golden recordings, byte for byte (paths
relative to the repository, since compare's output names its files).

The digests in ``tests/fixtures/golden/digests.json`` were taken from the command's output; a
change of the engine, the reader or the frame format that alters any byte fails here. When a
change is meant to alter frames, regenerate them with ``SECTORMON_UPDATE_GOLDEN=1 pytest
tests/io/test_golden.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import sectormon_command

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "fixtures" / "golden"
DIGESTS = GOLDEN / "digests.json"
SHIPPED = REPO / "recordings"

CASES: dict[str, list[str]] = {
    **{
        f"replay {p.name}": ["replay", "--json", str(p.relative_to(REPO))]
        for p in sorted([*SHIPPED.glob("*.jsonl.gz"), *GOLDEN.glob("*.jsonl.gz")])
    },
    "compare shipped": [
        "compare",
        "--json",
        "recordings/scenario-a-sectors-off.jsonl.gz",
        "recordings/scenario-a-sectors-on.jsonl.gz",
    ],
}


def _digest(args: list[str]) -> str:
    done = subprocess.run(
        [sectormon_command(), *args], capture_output=True, check=False, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return hashlib.sha256(done.stdout).hexdigest()


@pytest.mark.e2e
def test_golden_outputs_are_unchanged() -> None:
    got = {name: _digest(args) for name, args in CASES.items()}
    if os.environ.get("SECTORMON_UPDATE_GOLDEN"):
        DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    expected = json.loads(DIGESTS.read_text())
    changed = sorted(name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name))
    assert not changed, f"output changed for: {', '.join(changed)}"
