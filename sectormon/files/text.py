"""Text from input made safe to print: one line, no terminal control sequences.

A recording, a profile or a path can hold ESC/OSC sequences, carriage returns and newlines; printed
raw they fake extra ``sectormon:`` lines or retitle the terminal. Every message that quotes input
goes through :func:`printable` (:func:`print_message` and :func:`print_warning` print with it),
which escapes what is not printable the way ``repr`` would and leaves ordinary text (accents, CJK,
symbols) as it is.
"""

from __future__ import annotations

import sys


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every non-printable character (C0/C1 controls, DEL, line and paragraph
    separators, lone surrogates, format characters) written as a ``\\x``/``\\u`` escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


SHOWN = 80
"""Characters of an input text quoted in a message (a 4,000-character path is not one line)."""


def clipped(text: str, limit: int = SHOWN) -> str:
    """:func:`printable` ``text``, cut to ``limit`` characters with ``...`` when longer."""
    shown = printable(text)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def is_ascii_digits(text: str) -> bool:
    """True for a non-empty run of ``0``-``9`` only: ``str.isdigit`` also accepts ``²`` and ``２``."""
    return text.isascii() and text.isdigit()


def print_message(message: str) -> None:
    """``sectormon: MESSAGE`` on stderr, one line. Messages quote input (labels, paths, host names,
    command lines from files and profiles): control characters are escaped, so a file cannot fake
    more ``sectormon:`` lines, move the cursor or retitle the terminal."""
    print(f"sectormon: {printable(message)}", file=sys.stderr, flush=True)


def print_warning(message: str) -> None:
    """``sectormon: warning: MESSAGE`` on stderr, one line (as :func:`print_message`)."""
    print_message(f"warning: {message}")
