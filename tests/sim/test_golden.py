"""Every counter and the final cache contents of the model's runs are pinned (tests/sim/golden_cases.py).

The simulator is tuned for speed; a tuning that changes one simulated number fails here. Both
cores run every case: the compiled core must match the Python model to the last line's state.
"""

from __future__ import annotations

import json

import pytest

from sectormon.sim import native
from tests.sim.cores import CORES
from tests.sim.golden_cases import GOLDEN, cases, machine_state

CASES = cases()


@pytest.fixture(scope="module")
def golden() -> dict[str, object]:
    data: dict[str, object] = json.loads(GOLDEN.read_text())
    return data


def test_every_case_is_pinned(golden: dict[str, object]) -> None:
    assert sorted(golden) == sorted(CASES)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_model_state_is_unchanged(
    name: str, core: str, golden: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(native.ENV, core)
    state = json.loads(json.dumps(machine_state(CASES[name]())))
    assert state == golden[name]
