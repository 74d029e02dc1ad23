"""Read the emulated A64FX's serial console (scripts/a64fx-emulated.sh): print the guest's JSON summary
and exit 1 with one line per failed check, or with the console's tail when the guest gave no summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from guest_checks import SUMMARY_BEGIN, SUMMARY_END

PREFIX = "a64fx-emulated:"


def find_summary(console: str) -> dict[str, Any] | None:
    """The last complete summary on the console (None when the guest never printed one)."""
    lines = [line.rstrip("\r") for line in console.splitlines()]
    ends = [i for i, line in enumerate(lines) if line == SUMMARY_END]
    for end in reversed(ends):
        if end >= 2 and lines[end - 2] == SUMMARY_BEGIN:
            try:
                data: dict[str, Any] = json.loads(lines[end - 1])
            except json.JSONDecodeError:
                return None
            return data
    return None


def render(summary: dict[str, Any]) -> str:
    """The summary as JSON with one line per top-level key and per check: readable in a CI log."""
    lines = []
    for key, value in summary.items():
        if key == "checks":
            rows = ",\n".join(f"  {json.dumps(check)}" for check in value)
            lines.append(f' "checks": [\n{rows}\n ]')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def verdict(summary: dict[str, Any] | None, console: str) -> tuple[int, list[str]]:
    """(exit status, lines for stderr)."""
    if summary is None:
        tail = [line for line in console.splitlines() if line.strip()][-25:]
        return 1, [f"{PREFIX} FAILED: the guest printed no summary; the console ended with:", *tail]
    failed = [c for c in summary["checks"] if not c["ok"]]
    count = f"{PREFIX} {len(summary['checks']) - len(failed)} passed, {len(failed)} failed"
    if failed or not summary["ok"]:
        named = [f"{PREFIX} FAILED check {c['name']}: {c['detail']}" for c in failed]
        return 1, [*(named or [f"{PREFIX} FAILED: the summary is not ok and names no failed check"]), count]
    return 0, [count]


def main(argv: list[str]) -> int:
    console = Path(argv[1]).read_text(errors="replace")
    summary = find_summary(console)
    if summary is not None:
        print(render(summary))
    status, lines = verdict(summary, console)
    print("\n".join(lines), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
