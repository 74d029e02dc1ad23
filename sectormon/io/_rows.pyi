"""Types of the compiled row check (_rows.c); the Python reference is jsonl._rows."""

from typing import Any, TypeVar

_R = TypeVar("_R", bound=tuple[Any, ...])

def slice_rows(
    raw: list[Any], layouts: list[tuple[str, ...]], row_type: type[_R], /
) -> tuple[_R, ...] | None: ...
