"""The formula language of metrics: parsed once, compiled to closures, never ``eval``.

Evaluation follows the project rule "unknown is not zero": a missing name, a ``None`` input, a
division by zero or a result that is not finite makes the result ``None``. The compiled closures use
plain arithmetic and let those cases raise, and ``Expr.evaluate`` turns the exception into ``None``:
the common path carries no per-node checks, which matters because every metric is evaluated for
every scope of every frame. The profile checks use the same parser (:func:`formula_names`), so a
profile cannot hold a formula the engine rejects.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sectormon.errors import SectormonError

Env = Mapping[str, float | None]
Compiled = Callable[[Env], float]

FUNCTIONS = ("min", "max")

# What a compiled closure may raise when an input is unknown; all of them mean "n/a".
EVAL_FAILURES: tuple[type[BaseException], ...] = (TypeError, KeyError, ZeroDivisionError, OverflowError)

_INF = math.inf

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>[-+*/(),])
    """,
    re.VERBOSE,
)


class ExprError(SectormonError):
    """A formula that does not parse; ``column`` is 0-based into ``text``."""

    def __init__(self, problem: str, text: str, column: int) -> None:
        super().__init__(f"{problem} at column {column} in {text!r}")
        self.problem = problem
        self.text = text
        self.column = column


# ---------------------------------------------------------------------------------------------
# Syntax tree: small frozen nodes; tests and tools may walk them.


@dataclass(frozen=True, slots=True)
class Num:
    value: float


@dataclass(frozen=True, slots=True)
class Name:
    name: str


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "-" only ("+" is dropped by the parser)
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # one of + - * /
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Call:
    func: str  # "min" | "max"
    args: tuple[Node, ...]


Node = Num | Name | Unary | Binary | Call


# ---------------------------------------------------------------------------------------------
# Tokenizer and recursive-descent parser.


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num | name | op | end
    text: str
    col: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup or ""
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def fail(self, tok: _Tok, expected: str = "") -> ExprError:
        if tok.kind == "end":
            what = "empty formula" if not self.text.strip() else "unexpected end of formula"
        else:
            what = f"unexpected {tok.text!r}"
        if expected:
            what += f" (expected {expected})"
        return ExprError(what, self.text, tok.col)

    def expect(self, text: str) -> _Tok:
        tok = self.take()
        if tok.kind != "op" or tok.text != text:
            raise self.fail(tok, repr(text))
        return tok

    def parse(self) -> Node:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise self.fail(tok)
        return node

    def expr(self) -> Node:
        node = self.term()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in "+-":
                self.take()
                node = Binary(tok.text, node, self.term())
            else:
                return node

    def term(self) -> Node:
        node = self.unary()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in "*/":
                self.take()
                node = Binary(tok.text, node, self.unary())
            else:
                return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text in "+-":
            self.take()
            operand = self.unary()
            return Unary("-", operand) if tok.text == "-" else operand
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            return Num(float(tok.text))
        if tok.kind == "name":
            nxt = self.peek()
            is_call = nxt.kind == "op" and nxt.text == "("
            if tok.text in FUNCTIONS:
                if not is_call:
                    raise ExprError(f"expected '(' after {tok.text!r}", self.text, nxt.col)
                return self.call(tok)
            if is_call:
                raise ExprError(
                    f"unknown function {tok.text!r} (only {' and '.join(FUNCTIONS)} exist)",
                    self.text,
                    tok.col,
                )
            return Name(tok.text)
        if tok.kind == "op" and tok.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        raise self.fail(tok, "a number, a name or '('")

    def call(self, func: _Tok) -> Node:
        self.expect("(")
        if self.peek().kind == "op" and self.peek().text == ")":
            raise ExprError(f"{func.text}() needs at least one argument", self.text, self.peek().col)
        args = [self.expr()]
        while True:
            tok = self.take()
            if tok.kind == "op" and tok.text == ",":
                args.append(self.expr())
            elif tok.kind == "op" and tok.text == ")":
                return Call(func.text, tuple(args))
            else:
                raise self.fail(tok, "',' or ')'")


# ---------------------------------------------------------------------------------------------
# Compilation to closures. A compiled leaf is either a constant (folded into its parent) or a
# callable taking the environment; a bare name compiles to ``operator.itemgetter`` (a C call).

_OPS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


# One closure factory per operator and operand kind: f = compiled subtree, n = name (a dict
# lookup inlined in the closure, the most common operand), c = constant. Specialising avoids a
# call per leaf: ``A / B`` runs as one closure doing two dict lookups and a division.
_Factory = Callable[[Any, Any], Callable[[Any], Any]]

_FACTORIES: dict[tuple[str, str], dict[str, _Factory]] = {
    ("f", "f"): {
        "+": lambda a, b: lambda env: a(env) + b(env),
        "-": lambda a, b: lambda env: a(env) - b(env),
        "*": lambda a, b: lambda env: a(env) * b(env),
        "/": lambda a, b: lambda env: a(env) / b(env),
    },
    ("f", "n"): {
        "+": lambda a, y: lambda env: a(env) + env[y],
        "-": lambda a, y: lambda env: a(env) - env[y],
        "*": lambda a, y: lambda env: a(env) * env[y],
        "/": lambda a, y: lambda env: a(env) / env[y],
    },
    ("n", "f"): {
        "+": lambda x, b: lambda env: env[x] + b(env),
        "-": lambda x, b: lambda env: env[x] - b(env),
        "*": lambda x, b: lambda env: env[x] * b(env),
        "/": lambda x, b: lambda env: env[x] / b(env),
    },
    ("n", "n"): {
        "+": lambda x, y: lambda env: env[x] + env[y],
        "-": lambda x, y: lambda env: env[x] - env[y],
        "*": lambda x, y: lambda env: env[x] * env[y],
        "/": lambda x, y: lambda env: env[x] / env[y],
    },
    ("f", "c"): {
        "+": lambda a, c: lambda env: a(env) + c,
        "-": lambda a, c: lambda env: a(env) - c,
        "*": lambda a, c: lambda env: a(env) * c,
        "/": lambda a, c: lambda env: a(env) / c,
    },
    ("c", "f"): {
        "+": lambda c, b: lambda env: c + b(env),
        "-": lambda c, b: lambda env: c - b(env),
        "*": lambda c, b: lambda env: c * b(env),
        "/": lambda c, b: lambda env: c / b(env),
    },
    ("n", "c"): {
        "+": lambda x, c: lambda env: env[x] + c,
        "-": lambda x, c: lambda env: env[x] - c,
        "*": lambda x, c: lambda env: env[x] * c,
        "/": lambda x, c: lambda env: env[x] / c,
    },
    ("c", "n"): {
        "+": lambda c, y: lambda env: c + env[y],
        "-": lambda c, y: lambda env: c - env[y],
        "*": lambda c, y: lambda env: c * env[y],
        "/": lambda c, y: lambda env: c / env[y],
    },
}


def _operand(node: Node) -> tuple[str, Any]:
    """The kind (f, n or c) and payload of a compiled operand."""
    if isinstance(node, Name):
        return "n", node.name
    compiled = _compile(node)
    if isinstance(compiled, float):
        return "c", compiled
    return "f", compiled


def _const(value: float) -> Compiled:
    return lambda env: value


def _compile(node: Node) -> Compiled | float:
    """A closure over the environment, or a float when the subtree is constant."""
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Name):
        return operator.itemgetter(node.name)
    if isinstance(node, Unary):
        inner = _compile(node.operand)
        if isinstance(inner, float):
            return -inner
        return lambda env: -inner(env)
    if isinstance(node, Binary):
        ka, a = _operand(node.left)
        kb, b = _operand(node.right)
        if ka == "c" and kb == "c":
            try:
                folded = _OPS[node.op](a, b)
            except ZeroDivisionError:
                folded = _INF  # not finite: left to fail at run time (n/a), like any 1/0
            if -_INF < folded < _INF:
                return folded
            ka, a = "f", _const(a)
        return _FACTORIES[(ka, kb)][node.op](a, b)
    # Call
    pick = min if node.func == "min" else max
    parts = [_compile(arg) for arg in node.args]
    fns: list[Compiled] = [_const(p) if isinstance(p, float) else p for p in parts]
    if len(fns) == 1:
        return parts[0]
    if len(fns) == 2:
        f, g = fns
        return lambda env: pick(f(env), g(env))
    return lambda env: pick([f(env) for f in fns])


def _name_order(node: Node) -> list[str]:
    """The names a tree reads, in the order they appear in its text (repeats included)."""
    if isinstance(node, Name):
        return [node.name]
    if isinstance(node, Unary):
        return _name_order(node.operand)
    if isinstance(node, Binary):
        return _name_order(node.left) + _name_order(node.right)
    if isinstance(node, Call):
        return [name for arg in node.args for name in _name_order(arg)]
    return []


def finish(value: object) -> float | None:
    """The public value of a raw closure result: a finite float, else ``None``."""
    if value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if -_INF < number < _INF else None


@dataclass(frozen=True)
class Expr:
    """A parsed formula: its source text, syntax tree, the names it reads and its compiled form."""

    text: str
    tree: Node
    names: frozenset[str]
    fn: Compiled = field(repr=False, compare=False)

    def evaluate(self, env: Env) -> float | None:
        """The value for ``env``; ``None`` when an input is missing/``None`` or the math is undefined."""
        try:
            value = self.fn(env)
        except EVAL_FAILURES:
            return None
        return finish(value)


@lru_cache(maxsize=4096)
def parse(text: str) -> Expr:
    """Parse and compile ``text``; raises :class:`ExprError` naming the column at fault."""
    try:
        tree = _Parser(text).parse()
        compiled = _compile(tree)
    except RecursionError:
        # A recursive-descent parser has a depth limit; no real formula comes near it.
        raise ExprError("formula nested too deeply", text, 0) from None
    fn = _const(compiled) if isinstance(compiled, float) else compiled
    return Expr(text=text, tree=tree, names=frozenset(_name_order(tree)), fn=fn)


class FormulaSyntaxError(ValueError):
    """A formula that is not numbers, names, + - * /, parentheses, min(...) and max(...)."""


def formula_names(formula: str) -> tuple[str, ...]:
    """The names a formula refers to (not ``min``/``max``), in order of first use.

    The grammar is the one :func:`parse` accepts, so a profile can never hold a formula the
    metrics engine rejects (or the other way round).
    """
    try:
        tree = parse(formula).tree
    except ExprError as exc:
        raise FormulaSyntaxError(exc.message) from exc
    return tuple(dict.fromkeys(_name_order(tree)))
