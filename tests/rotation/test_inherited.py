"""InheritedRows: found threads' counts come out of their family's inherited rows, once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sectormon.data.readings import Row, Unit
from sectormon.rotation.inherited import InheritedRows

NAMES = ("TASK_CLOCK", "PAGE_FAULTS")
ROOT = Unit("thread", 100, process=100, family=100, inherit=True)
FOUND = Unit("thread", 101, core=3, process=100, family=100)
OTHER_ROOT = Unit("thread", 200, process=200, family=200, inherit=True)


def row(unit: Unit, values: list[int], enabled: int, running: int, group: str = "SW") -> Row:
    return Row(unit.key, unit.core, unit.cmg, group, enabled, running, NAMES, tuple(values))


def ledger(*units: Unit) -> InheritedRows:
    rows = InheritedRows()
    for unit in units:
        rows.track(unit)
    return rows


def test_rows_without_found_threads_pass_unchanged() -> None:
    rows = (row(ROOT, [50, 5], 50, 50),)
    assert ledger(ROOT).settle(rows) is rows


def test_a_found_thread_is_taken_out_of_its_root() -> None:
    settled = ledger(ROOT, FOUND).settle((row(ROOT, [90, 9], 90, 80), row(FOUND, [30, 4], 30, 30)))
    assert settled == (row(ROOT, [60, 5], 60, 50), row(FOUND, [30, 4], 30, 30))


def test_another_family_and_another_group_are_left_alone() -> None:
    rows = (
        row(OTHER_ROOT, [90, 9], 90, 90),
        row(ROOT, [90, 9], 90, 90, group="HW"),
        row(FOUND, [30, 4], 30, 30),
        row(ROOT, [70, 9], 70, 70),
    )
    settled = ledger(ROOT, FOUND, OTHER_ROOT).settle(rows)
    assert settled[:3] == rows[:3]
    assert settled[3] == row(ROOT, [40, 5], 40, 40)


def test_a_deficit_is_carried_not_made_negative() -> None:
    rows = ledger(ROOT, FOUND)
    first = rows.settle((row(ROOT, [10, 1], 10, 10), row(FOUND, [30, 4], 30, 30)))
    assert first[0] == row(ROOT, [0, 0], 0, 0)
    second = rows.settle((row(ROOT, [50, 5], 50, 50),))
    assert second[0] == row(ROOT, [30, 2], 30, 30)  # 20 and 3 still owed from the first slice


def test_a_forgotten_thread_owes_what_it_owed() -> None:
    rows = ledger(ROOT, FOUND)
    rows.settle((row(FOUND, [30, 4], 30, 30),))  # no root row in this slice
    rows.forget(FOUND.key)
    assert rows.settle((row(ROOT, [50, 5], 50, 50),))[0] == row(ROOT, [20, 1], 20, 20)
    assert rows.settle((row(ROOT, [50, 5], 50, 50),))[0] == row(ROOT, [50, 5], 50, 50)


def test_running_never_exceeds_enabled() -> None:
    settled = ledger(ROOT, FOUND).settle((row(ROOT, [90, 9], 90, 90), row(FOUND, [30, 4], 40, 20)))
    _, _, _, _, enabled, running, _, _ = settled[0]
    assert (enabled, running) == (50, 50)


slices = st.lists(
    st.tuples(
        st.lists(st.integers(0, 1000), min_size=2, max_size=2),  # what the found thread counted
        st.lists(st.integers(0, 1000), min_size=2, max_size=2),  # the rest of the family
    ),
    min_size=1,
    max_size=30,
)


@given(slices)
def test_the_sum_of_rows_is_the_inherited_total(history: list[tuple[list[int], list[int]]]) -> None:
    """Whatever the split, no row goes negative and, once the family has counted at least what its
    found thread did, all rows together add up to the inherited totals."""
    rows = ledger(ROOT, FOUND)
    inherited = [0, 0]
    shown = [0, 0]
    for found, rest in history:
        total = [f + r for f, r in zip(found, rest, strict=True)]
        inherited = [a + b for a, b in zip(inherited, total, strict=True)]
        settled = rows.settle((row(ROOT, total, total[0], total[0]), row(FOUND, found, found[0], found[0])))
        for _, _, _, _, enabled, running, _, values in settled:
            assert min(values) >= 0 and 0 <= running <= enabled
            shown = [a + b for a, b in zip(shown, values, strict=True)]
    assert shown == inherited
