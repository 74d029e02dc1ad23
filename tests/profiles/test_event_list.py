"""-e EVENTS: perf's event-list syntax read into events, groups and modifiers."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sectormon.errors import UsageError
from sectormon.profiles.event_list import EventChoice, parse_event_list

NAMES = st.one_of(
    st.sampled_from(["cycles", "page-faults", "task-clock", "L1D_CACHE", "L1-dcache-load-misses"]),
    st.integers(0, 0xFFFF).map(lambda code: f"r{code:04x}"),
    st.integers(0, 0xFFF).map(lambda code: f"cpu/event={code:#x},umask=0x1/"),
)
MODIFIERS = st.sampled_from(["", "u", "k", "uk", "ku"])


def _with(name: str, modifiers: str) -> str:
    return f"{name}:{modifiers}" if modifiers else name


# An event list as perf writes it: items, some of them {...} groups, each with modifiers.
ITEMS = st.lists(
    st.one_of(
        st.tuples(NAMES, MODIFIERS).map(lambda nm: ([nm], None)),
        st.tuples(st.lists(st.tuples(NAMES, MODIFIERS), min_size=1, max_size=4), MODIFIERS),
    ),
    min_size=1,
    max_size=6,
)


def _render(items: list[tuple[list[tuple[str, str]], str | None]]) -> str:
    parts = []
    for members, outer in items:
        if outer is None:
            parts.append(_with(*members[0]))
        else:
            inner = ",".join(_with(*member) for member in members)
            parts.append("{" + inner + "}" + (f":{outer}" if outer else ""))
    return ",".join(parts)


@given(ITEMS)
@example([([("cpu/event=0x3c,umask=0x1/", "u")], None)])  # a PMU form's comma is its own
@example([([("r0004", ""), ("r0003", "")], "u")])  # a group's modifier reaches every member
def test_every_written_list_reads_back_as_its_events_groups_and_modifiers(
    items: list[tuple[list[tuple[str, str]], str | None]],
) -> None:
    choices = parse_event_list(_render(items))
    expected = []
    group = 0
    for members, outer in items:
        for name, own in members:
            letters = set(own) | set(outer or "")
            modifiers = "".join(letter for letter in "uk" if letter in letters)
            expected.append((name, modifiers, None if outer is None else group))
        if outer is not None:
            group += 1
    assert [(c.name, c.modifiers, c.group) for c in choices] == expected


@given(st.text(max_size=30))
@example("{a,{b}}")
@example("a:")
@example("}")
@example(":u:k")  # found: the first ':' stayed in the name, a modifier nobody checked
@example("a::k")
def test_any_text_is_events_or_one_usage_error(text: str) -> None:
    try:
        choices = parse_event_list(text)
    except UsageError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith("-e ")
    else:
        assert choices
        for choice in choices:
            assert choice.name and not any(ch.isspace() for ch in choice.name)
            assert ":" not in choice.name.rpartition("/")[2]  # modifiers never stay in a name


def test_the_text_keeps_what_was_typed_for_perf_style_labels() -> None:
    assert parse_event_list("{cycles,instructions}:u,page-faults:uk") == (
        EventChoice("cycles:u", "cycles", "u", 0),
        EventChoice("instructions:u", "instructions", "u", 0),
        EventChoice("page-faults:uk", "page-faults", "uk", None),
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the list is empty"),
        ("a,,b", "empty event between commas"),
        ("{a,{b}}", "groups cannot be nested"),
        ("{a,b", "'{' without its '}'"),
        ("a}", "'}' without its '{'"),
        ("a:p", "modifier 'p' is not supported"),
        ("a:", "nothing after ':'"),
        ("{}", "an empty group"),
        ("{a}b", "after a group's '}'"),
        ("cpu/event=1", "without its closing '/'"),
        ("a b", "a space inside"),
        ("a:u:k", "more than one ':'"),
    ],
)
def test_a_malformed_list_is_one_line_naming_the_fault(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_event_list(text)
