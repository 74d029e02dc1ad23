"""Fitting the header's fields into the terminal's width: shorten, then drop, the least important.

A header line cut at its end lost whatever came last (at 80 columns: the target, the window, the
overhead). Instead each field has a priority and may have a shorter form: while the line is too
wide, the least important field still in it is shortened, or, when it has no shorter form left,
dropped; fields that must stay (``keep``) are only shortened. Then what a less important field
gave up is given back where it fits again. What is left keeps its order. Pure data, no Textual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SEPARATOR = 2
"""Columns between two fields."""


@dataclass(frozen=True, slots=True)
class Field:
    """One header field: an optional dim ``key`` (``target``), its ``value`` and a shorter form.

    ``role`` names the value's style (``None``: plain). ``priority``: higher stays longer.
    """

    value: str
    key: str = ""
    role: str | None = None
    priority: int = 0
    short: str | None = None
    keep: bool = False

    def width(self, value: str) -> int:
        return (len(self.key) + 1 if self.key else 0) + len(value)


def fit(fields: Sequence[Field], width: int) -> list[tuple[Field, str]]:
    """The fields that fit in ``width`` columns, each with the value to show, in their order.

    A line of kept fields alone that is still too wide is returned whole (the widget crops it).
    """
    chosen: dict[int, str] = {i: f.value for i, f in enumerate(fields)}

    def total() -> int:
        shown = [fields[i].width(v) for i, v in chosen.items()]
        return sum(shown) + SEPARATOR * max(0, len(shown) - 1)

    order = sorted(range(len(fields)), key=lambda i: (fields[i].priority, -i))
    for i in order:
        if total() <= width:
            break
        field = fields[i]
        if field.short is not None and field.short != field.value:
            chosen[i] = field.short
            if total() <= width:
                break
        if not field.keep:
            del chosen[i]
    # What a less important field gave up may fit again now that a more important one is short.
    for i in reversed(order):
        field = fields[i]
        for value in (field.value, field.short):
            if value is None or chosen.get(i) == field.value:
                break
            before = chosen.get(i)
            chosen[i] = value
            if total() <= width:
                break
            if before is None:
                del chosen[i]
            else:
                chosen[i] = before
    return [(fields[i], chosen[i]) for i in sorted(chosen)]
