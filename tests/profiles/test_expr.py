"""The formula language: parsing, n/a propagation, errors with positions, and properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sectormon.errors import SectormonError
from sectormon.profiles.expr import Binary, Call, ExprError, Name, Num, Unary, parse

# ----------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("1 + 2 * 3", {}, 7.0),
        ("(1 + 2) * 3", {}, 9.0),
        ("10 - 4 - 3", {}, 3.0),  # left-associative
        ("64 / 4 / 2", {}, 8.0),
        ("-2 * 3", {}, -6.0),
        ("2 * -3", {}, -6.0),
        ("- -4", {}, 4.0),
        ("+4", {}, 4.0),
        ("1e9", {}, 1e9),
        ("2.5e-3 * 1000", {}, 2.5),
        (".5 + 1.", {}, 1.5),
        ("A / B", {"A": 3.0, "B": 4.0}, 0.75),
        ("min(A, B, 2)", {"A": 3.0, "B": 4.0}, 2.0),
        ("max(A)", {"A": 3.0}, 3.0),
        ("max(A - B, 0)", {"A": 3.0, "B": 4.0}, 0.0),
        ("EA_CORE * NJ_EA_CORE / 1e9 / SECONDS", {"EA_CORE": 5e8, "NJ_EA_CORE": 8.0, "SECONDS": 2.0}, 2.0),
        ("(A + B) / (C + D)", {"A": 1.0, "B": 2.0, "C": 3.0, "D": 3.0}, 0.5),
        ("A", {"A": 7}, 7.0),
        ("3", {}, 3.0),
    ],
)
def test_evaluate_examples(text: str, env: dict[str, float], expected: float) -> None:
    assert parse(text).evaluate(env) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("A / B", {"A": 1.0}),  # missing name
        ("A / B", {"A": 1.0, "B": None}),  # None value
        ("A / B", {"A": 1.0, "B": 0.0}),  # division by zero: never 0, never inf
        ("A / B", {"A": 0.0, "B": 0.0}),
        ("1 / 0", {}),
        ("A / (B - B)", {"A": 1.0, "B": 5.0}),
        ("min(A, B)", {"A": 1.0, "B": None}),
        ("max(A, B, C)", {"A": None, "B": None, "C": 2.0}),
        ("min(A)", {"A": None}),
        ("-A", {"A": None}),
        ("A", {}),
        ("A * 10", {"A": 1e308}),  # overflow to inf is not a value
        ("A - A", {"A": math.inf}),
    ],
)
def test_undefined_is_none(text: str, env: dict[str, Any]) -> None:
    assert parse(text).evaluate(env) is None


def test_names_exclude_functions_and_numbers() -> None:
    assert parse("min(A, B) / max(C, 2) + A * 1e3").names == frozenset({"A", "B", "C"})
    assert parse("42").names == frozenset()


def test_tree_shape_follows_precedence() -> None:
    assert parse("A - B * -C").tree == Binary("-", Name("A"), Binary("*", Name("B"), Unary("-", Name("C"))))
    assert parse("max(1, A)").tree == Call("max", (Num(1.0), Name("A")))


def test_parse_is_cached_and_reusable() -> None:
    e = parse("A / B")
    assert parse("A / B") is e
    assert e.evaluate({"A": 1.0, "B": 2.0}) == 0.5
    assert e.evaluate({"A": 1.0, "B": 0.0}) is None
    assert e.evaluate({"A": 3.0, "B": 2.0}) == 1.5


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("A / (B))", 7, "unexpected ')' at column 7 in 'A / (B))'"),
        ("A +", 3, "unexpected end of formula (expected a number, a name or '(') at column 3 in 'A +'"),
        ("", 0, "empty formula (expected a number, a name or '(') at column 0 in ''"),
        ("(A", 2, "unexpected end of formula (expected ')') at column 2 in '(A'"),
        ("A B", 2, "unexpected 'B' at column 2 in 'A B'"),
        ("A $ B", 2, "unexpected character '$' at column 2 in 'A $ B'"),
        ("abs(A)", 0, "unknown function 'abs' (only min and max exist) at column 0 in 'abs(A)'"),
        ("min + 1", 4, "expected '(' after 'min' at column 4 in 'min + 1'"),
        ("max()", 4, "max() needs at least one argument at column 4 in 'max()'"),
        ("min(A,)", 6, None),
        ("A * * B", 4, None),
        ("A, B", 1, None),
        ("1.2.3", 3, None),
    ],
)
def test_syntax_errors_name_the_column(text: str, column: int, message: str | None) -> None:
    with pytest.raises(ExprError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, SectormonError)
    assert err.column == column
    assert err.text == text
    if message is not None:
        assert str(err) == message


# ----------------------------------------------------------------------------- properties

NAMES = ("A", "B", "C_1", "x")
OPS = ("+", "-", "*", "/")

numbers = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(float),
    st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False),
)
leaves = st.one_of(numbers.map(lambda v: ("num", v)), st.sampled_from(NAMES).map(lambda n: ("name", n)))


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda c: ("neg", c)),
        st.tuples(st.just("bin"), st.sampled_from(OPS), children, children),
        st.tuples(
            st.just("call"), st.sampled_from(("min", "max")), st.lists(children, min_size=1, max_size=3)
        ),
    )


trees = st.recursive(leaves, _extend, max_leaves=12)
values = st.one_of(
    st.none(),
    st.just(0.0),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
)
envs = st.fixed_dictionaries({}, optional={n: values for n in NAMES})

PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def render(node: Any) -> tuple[str, int]:
    """Text with the fewest parentheses that keep the tree's shape (and its float rounding order)."""
    kind = node[0]
    if kind == "num":
        return repr(node[1]), 4
    if kind == "name":
        return node[1], 4
    if kind == "neg":
        text, prec = render(node[1])
        return "-" + (text if prec >= 3 else f"({text})"), 3
    if kind == "bin":
        _, op, left, right = node
        p = PREC[op]
        lt, lp = render(left)
        rt, rp = render(right)
        lt = lt if lp >= p else f"({lt})"
        rt = rt if rp > p else f"({rt})"
        return f"{lt} {op} {rt}", p
    _, fn, args = node
    return f"{fn}({', '.join(render(a)[0] for a in args)})", 4


def reference(node: Any, env: dict[str, float | None]) -> float | None:
    """Direct evaluation of the tree with explicit n/a rules (no exceptions involved)."""
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "name":
        return env.get(node[1])
    if kind == "neg":
        v = reference(node[1], env)
        return None if v is None else -v
    if kind == "bin":
        _, op, left, right = node
        a, b = reference(left, env), reference(right, env)
        if a is None or b is None:
            return None
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        return None if b == 0 else a / b
    _, fn, args = node
    vals = [reference(a, env) for a in args]
    if any(v is None for v in vals):
        return None
    return min(vals) if fn == "min" else max(vals)  # type: ignore[type-var]


def names_of(node: Any) -> set[str]:
    kind = node[0]
    if kind == "name":
        return {node[1]}
    if kind == "num":
        return set()
    if kind == "neg":
        return names_of(node[1])
    if kind == "bin":
        return names_of(node[2]) | names_of(node[3])
    return set().union(*(names_of(a) for a in node[2]))


def finite_or_none(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


@settings(max_examples=300, deadline=None)
@given(tree=trees, env=envs)
def test_parse_agrees_with_reference_evaluation(tree: Any, env: dict[str, float | None]) -> None:
    text, _ = render(tree)
    expr = parse(text)
    assert expr.names == frozenset(names_of(tree))
    expected = finite_or_none(reference(tree, env))
    got = expr.evaluate(env)
    if expected is None:
        assert got is None
    else:
        assert got == expected  # same operations in the same order: bit-identical


@settings(max_examples=150, deadline=None)
@given(tree=trees, env=envs, data=st.data())
def test_none_anywhere_makes_none(tree: Any, env: dict[str, float | None], data: st.DataObject) -> None:
    names = sorted(names_of(tree))
    assume(names)
    victim = data.draw(st.sampled_from(names))
    env = {**env, victim: None}
    assert parse(render(tree)[0]).evaluate(env) is None
    del env[victim]
    assert parse(render(tree)[0]).evaluate(env) is None


@settings(max_examples=150, deadline=None)
@given(tree=trees, env=envs)
def test_division_by_zero_is_none(tree: Any, env: dict[str, float | None]) -> None:
    text = render(tree)[0]
    assert parse(f"({text}) / Z").evaluate({**env, "Z": 0.0}) is None
    assert parse(f"({text}) / (Z - Z)").evaluate({**env, "Z": 3.0}) is None


@settings(max_examples=150, deadline=None)
@given(tree=trees)
def test_broken_formulas_raise_with_position(tree: Any) -> None:
    text = render(tree)[0]
    for bad, column in (
        (text + ")", len(text)),  # stray ')': points at it
        (text + " *", len(text) + 2),  # dangling operator: points at the end
        ("(" + text, len(text) + 1),  # unclosed '(': points at the end
        (text + " 7", len(text) + 1),  # two operands in a row: points at the second
    ):
        with pytest.raises(ExprError) as info:
            parse(bad)
        assert info.value.column == column, bad


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="AB1.e+-*/(), $", max_size=20))
def test_any_text_parses_or_raises_expr_error(text: str) -> None:
    try:
        expr = parse(text)
    except ExprError as err:
        assert 0 <= err.column <= len(text)
        assert f"at column {err.column} in " in str(err)
    else:
        expr.evaluate({"A": 1.0, "B": 2.0, "e": 3.0})  # never raises
