"""How a profile's faults are reported: each one with its line and a fix, all of them at once.

Composing, building and checking a profile each find faults; they collect :class:`Problem` records
instead of raising at the first, so a bad profile names every fault in one ``FILE:LINE: problem
(fix)`` list. A fault's place is a key path into the document (``("metrics", "IPC", "formula")``);
the composed YAML turns it into a line, and a profile read back from a recording has no lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sectormon.errors import DataError

KeyPath = tuple[Any, ...]
LineOf = Callable[[KeyPath], "int | None"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One fault in a profile: where, what, and how to fix it."""

    line: int | None
    problem: str
    fix: str = ""

    def render(self, path: str) -> str:
        where = f"{path}:{self.line}" if self.line is not None else path
        return f"{where}: {self.problem}" + (f" ({self.fix})" if self.fix else "")


class ProfileError(DataError):
    """A profile that cannot be used; the message has one ``FILE:LINE: problem (fix)`` line per fault."""

    def __init__(self, path: str, problems: Sequence[Problem]) -> None:
        ordered = sorted(problems, key=lambda p: (p.line is None, p.line or 0))
        first = ordered[0] if ordered else Problem(None, "invalid profile")
        super().__init__(path, first.line, first.problem, first.fix)
        self.problems = tuple(ordered) or (first,)
        text = "\n".join(p.render(path) for p in self.problems)
        self.message = text
        self.args = (text,)


def suggest(name: str, known: Iterable[str]) -> str:
    """A fix for a misspelt name: the closest known one, or "" when none is close."""
    import difflib  # only a misspelt name needs it, not every start

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]}?" if close else ""
