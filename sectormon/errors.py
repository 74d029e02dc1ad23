"""The error type every user-facing failure derives from.

The CLI prints ``sectormon: <message>`` on one line and exits with ``exit_code``; messages name the
file, line or option at fault and the fix. Modules define subclasses for their own failures.
"""

from __future__ import annotations


class SectormonError(Exception):
    """A failure the user can act on; its message is shown as one line, without a traceback."""

    exit_code = 2
    unit_gone = False  # True: the thread/CPU counted on no longer exists (not an error while sampling)
    out_of_fds = False  # True: the file-descriptor limit is reached (a new thread mid-run is skipped)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(SectormonError):
    """A bad option or combination of options."""


class DataError(SectormonError):
    """A bad input file (profile, recording, fapp CSV, theme, trace): names file and line."""

    def __init__(self, path: str, line: int | None, problem: str, fix: str = "") -> None:
        where = f"{path}:{line}" if line is not None else path
        text = f"{where}: {problem}"
        if fix:
            text += f" ({fix})"
        super().__init__(text)
        self.path = path
        self.line = line
        self.problem = problem
        self.fix = fix
