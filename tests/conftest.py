"""Shared test fixtures: paths to the shared A64FX reference data (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SECTORMON_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference"
FAPP_DATA = REFERENCE / "fapp-cpupa"
PMU_EVENTS = REFERENCE / "a64fx-pmu-events"
HOW_TO_GET_IT = (
    "put the data in ../shared/ next to the repository, or set SECTORMON_SHARED to the folder holding "
    "reference/ (README: Tests that need the reference data)"
)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"shared reference data not found at {REFERENCE}: {HOW_TO_GET_IT}")
    return REFERENCE


@pytest.fixture(scope="session")
def fapp_dir() -> Path:
    if not FAPP_DATA.is_dir():
        pytest.skip(f"fapp reference data not found at {FAPP_DATA}: {HOW_TO_GET_IT}")
    return FAPP_DATA


@pytest.fixture
def long_fuzz() -> None:
    """The fuzzers' long runs (ten times the default cases, minutes each) run when asked for with
    ``SECTORMON_LONG_FUZZ=1 pytest -m slow``; the default run has over 1,000 cases of each fuzzer
    already, and CI's slow tests leave them out to stay within its time."""
    if os.environ.get("SECTORMON_LONG_FUZZ") != "1":
        pytest.skip("the long fuzz runs with SECTORMON_LONG_FUZZ=1 pytest -m slow")
