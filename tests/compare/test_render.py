"""The compare report's layout: plain decimals, named runs, counts beside the rates, relative
changes left out next to a zero baseline; pinned against a golden file of the shipped recordings."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sectormon import cli
from sectormon.compare.render import plain, relative
from sectormon.compare.runs import Row

REPO = Path(__file__).resolve().parents[2]
OFF = REPO / "recordings" / "scenario-a-sectors-off.jsonl.gz"
ON = REPO / "recordings" / "scenario-a-sectors-on.jsonl.gz"
GOLDEN = Path(__file__).resolve().parent / "golden" / "scenario-a-total.txt"


def test_the_report_layout_is_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    """Regenerate after an intended change: sectormon compare --labels off,on --scope total OFF ON."""
    assert cli.main(["compare", "--labels", "off,on", "--scope", "total", str(OFF), str(ON)]) == 0
    assert capsys.readouterr().out == GOLDEN.read_text()


def test_labels_need_two_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "--labels", "off", str(OFF), str(ON)]) == 2
    assert capsys.readouterr().err == "sectormon: --labels 'off': give two names, as --labels off,on\n"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
@example(1e-13)
@example(-68_050_152.0)
def test_plain_numbers_have_no_exponent_and_four_significant_digits(value: float) -> None:
    text = plain(value)
    assert "e" not in text.lower() and "inf" not in text
    back = float(text.replace(",", ""))
    if abs(value) >= 1e-9:
        assert math.isclose(back, value, rel_tol=5e-4, abs_tol=1e-12)


def test_a_relative_change_is_left_out_next_to_a_zero_baseline() -> None:
    def row(base: float, other: float) -> Row:
        return Row("m", base, other, other - base, other - base, (other - base) / abs(base) if base else None)

    assert relative(row(1e-12, 0.5)) is None
    assert relative(row(0.25, 0.5)) == pytest.approx(1.0)
