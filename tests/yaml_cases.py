"""Hostile YAML documents for the profile and theme loaders (tests/profiles, tests/ui): each with
the line a bounded loader names and the words it uses."""

from __future__ import annotations


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """``levels`` nested anchors, each ``width`` aliases of the one before: width**levels nodes."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


# (name, document after a first "primary"/"name" line, the line named, words of the problem)
HOSTILE: list[tuple[str, str, int, str]] = [
    ("alias bomb", alias_bomb(), 7, "expands to more than"),
    ("doubling bomb", alias_bomb(levels=40, width=2), 16, "expands to more than"),
    ("self-referencing alias", "x: &a [*a]\n", 2, "refers to a node that contains it"),
    ("self-referencing mapping", "x: &a\n  y: *a\n", 3, "refers to a node that contains it"),
    ("10k-deep nesting", "x: " + "[" * 10_000 + "]" * 10_000 + "\n", 2, "nesting deeper than"),
    ("100k-deep nesting", "x: " + "[" * 100_000 + "]" * 100_000 + "\n", 2, "nesting deeper than"),
    (
        "deep through aliases",
        "a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 40 + "*a" + "]" * 40 + "\n",
        3,
        "nesting deeper than",
    ),
    ("5001-digit integer", "x: " + "9" * 5001 + "\n", 2, "an integer of 5001 characters"),
]
