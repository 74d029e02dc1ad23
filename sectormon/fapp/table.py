"""Plain-text tables of the fapp report: metrics as rows, threads as columns, CMG total last.

Twelve threads and a total do not fit next to the long metric names in 160 columns, so the value
columns are wrapped into blocks that each repeat the metric names; the CMG total is always in the
last block.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

NA = "n/a"
SPLIT_MARK = "*"


def format_value(value: float | int | None) -> str:
    """A compact, exact-enough rendering: integers in full up to 12 digits, floats to 5 significant digits."""
    if value is None:
        return NA
    if isinstance(value, int):
        text = str(value)
        return text if len(text) <= 12 else f"{value:.5e}"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-4 <= magnitude < 1e9:
        return f"{value:.5g}" if magnitude < 1e5 else f"{value:.0f}"
    return f"{value:.4e}"


def render_table(
    title: str,
    rows: Sequence[str],
    columns: Sequence[tuple[str, Mapping[str, float | int | None]]],
    *,
    width: int = 160,
    units: Mapping[str, str] | None = None,
    split: Sequence[str] = (),
    marks: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """Rows = metric names, columns = (header, {metric: value}); wrapped to ``width`` columns.

    ``marks``: a note mark per row (``[2]``), after the name; ``notes``: the lines those marks
    point to, printed under the table (wrapped, continuation lines indented).
    """
    units = units or {}
    marks = marks or {}
    split_set = set(split)

    def label(name: str) -> str:
        text = f"{name} ({units[name]})" if units.get(name) else name
        text += f" {SPLIT_MARK}" if name in split_set else ""
        return text + (f" {marks[name]}" if name in marks else "")

    labels = [label(name) for name in rows]
    name_width = max([len(t) for t in labels] + [len("metric")])
    cells = [[format_value(values.get(name)) for name in rows] for _, values in columns]
    col_widths = [
        max(len(header), *(len(c) for c in col)) if col else len(header)
        for (header, _), col in zip(columns, cells, strict=True)
    ]
    blocks: list[list[int]] = []
    current: list[int] = []
    used = name_width
    for index, w in enumerate(col_widths):
        if current and used + 2 + w > width:
            blocks.append(current)
            current, used = [], name_width
        current.append(index)
        used += 2 + w
    if current:
        blocks.append(current)
    out: list[str] = textwrap.wrap(title, width) or [""]
    for block in blocks:
        header = "metric".ljust(name_width) + "".join(
            "  " + columns[i][0].rjust(col_widths[i]) for i in block
        )
        out.append(header)
        out.append("-" * len(header))
        for r, text in enumerate(labels):
            out.append(
                text.ljust(name_width) + "".join("  " + cells[i][r].rjust(col_widths[i]) for i in block)
            )
        out.append("")
    if split_set & set(rows):
        out += textwrap.wrap(
            f"{SPLIT_MARK} inputs from different runs (event sets): see 'split' in --json", width
        )
        out.append("")
    for note in notes:
        out += textwrap.wrap(note, width, subsequent_indent="    ", break_on_hyphens=False)
    if notes:
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
