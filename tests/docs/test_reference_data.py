"""The README tells a fresh clone what the skipped reference-data tests need and how to run them."""

from __future__ import annotations

import re

from tests.conftest import FAPP_DATA, HOW_TO_GET_IT, PMU_EVENTS, REFERENCE, REPO, SHARED

README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^## |^### |\Z)", README, re.S | re.M)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def test_readme_names_the_variable_and_every_folder_the_fixtures_read() -> None:
    section = _section("Tests that need the reference data")
    assert "SECTORMON_SHARED" in section
    for path in (REFERENCE, FAPP_DATA, PMU_EVENTS):
        relative = f"../shared/{path.relative_to(SHARED).as_posix()}/"
        assert relative in section, f"{relative} is read by tests/conftest.py but not explained"
    assert "pytest -rs" in section  # how to see which tests skipped, and why


def test_the_skip_reason_points_at_the_readme() -> None:
    section_title = "Tests that need the reference data"
    assert section_title in HOW_TO_GET_IT
    assert "SECTORMON_SHARED" in HOW_TO_GET_IT and "../shared/" in HOW_TO_GET_IT
