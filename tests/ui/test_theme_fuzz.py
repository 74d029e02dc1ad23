"""Fuzzing theme files: every damaged theme loads or is one ``file:line`` line (a
:class:`ThemeError`), in well under 5 s; never a traceback or a hang. The same seeded mutator as
the profiles' (tests/profiles/test_fuzz.py) over the shipped themes."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from sectormon.ui.themes import ThemeError, parse_theme
from tests.profiles.test_fuzz import CASE_SECONDS, mutants

THEMES = Path(__file__).resolve().parents[2] / "themes"


def fuzz(seed: int, n: int) -> int:
    rng = random.Random(seed)
    count = 0
    for theme in sorted(THEMES.glob("*.yaml")):
        for what, text in mutants(theme.read_bytes(), rng, n // 3):
            start = time.perf_counter()
            try:
                parse_theme(text.decode("utf-8", "replace"), "t.yaml", "t")
            except ThemeError as exc:
                assert "\n" not in str(exc) and str(exc).startswith("t.yaml"), (what, str(exc))
            assert time.perf_counter() - start < CASE_SECONDS, what
            count += 1
    return count


@pytest.mark.timeout(120)
def test_damaged_themes_load_or_name_their_line() -> None:
    assert fuzz(seed=21, n=450) >= 450


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_damaged_themes_at_length(long_fuzz: None) -> None:
    fuzz(seed=22, n=6000)
