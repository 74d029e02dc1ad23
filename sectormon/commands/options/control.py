"""``--control fifo:CTL[,ACK]`` / ``fd:CTL[,ACK]`` and ``--delay MS`` (``-D``): perf stat's options.

The descriptors are opened and checked while the command line is read, so a wrong path or a
closed descriptor is a one-line error (exit 2) before anything is launched. As perf does, a FIFO is
opened read-write and non-blocking: the open does not wait for the script's end, and the script
may open and close its end once per command. What the commands do: docs/control.md.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import stat

from sectormon.commands.options.numbers import DELAY_MS
from sectormon.errors import UsageError
from sectormon.files.text import is_ascii_digits, printable
from sectormon.session.control_channel import ControlFds
from sectormon.session.options import UNTIL_ENABLED

EXAMPLE = "e.g. --control fifo:ctl.fifo,ack.fifo (mkfifo both first) or --control fd:10,11"


def add_control_options(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--control",
        metavar="fifo:CTL[,ACK]|fd:CTL[,ACK]",
        help="perf stat's control protocol: read 'enable', 'disable', 'enable NAME', 'disable NAME' "
        "(NAME: a profile group, event or perf event spec), 'ping' and 'stop' from the named pipe CTL "
        "(or inherited descriptor), and write 'ack' to ACK once each is done on the counters; only "
        "enabled spans count (docs/control.md)",
    )
    parser.add_argument(
        "-D",
        "--delay",
        type=DELAY_MS.parser("--delay"),
        metavar="MS",
        help=DELAY_MS.help(
            "start counting MS milliseconds after the session starts (-1: only when 'enable' "
            "arrives on --control), as perf stat -D"
        ),
    )


def control_fds(text: str | None) -> ControlFds | None:
    """``--control``'s descriptors, open, or its one-line error."""
    if text is None:
        return None
    kind, colon, rest = text.partition(":")
    ctl, comma, ack = rest.partition(",")
    if not colon or kind not in ("fifo", "fd") or not ctl or (comma and not ack):
        raise UsageError(f"--control {printable(text)!r}: write fifo:CTL[,ACK] or fd:CTL[,ACK], {EXAMPLE}")
    if kind == "fd":
        ctl_fd = _inherited(text, ctl, os.O_RDONLY)
        ack_fd = _inherited(text, ack, os.O_WRONLY) if ack else None
        return ControlFds(ctl_fd, ack_fd, owned=False, shown=text)
    ctl_fd = _fifo(text, ctl)
    try:
        ack_fd = _fifo(text, ack) if ack else None
    except BaseException:
        os.close(ctl_fd)
        raise
    return ControlFds(ctl_fd, ack_fd, owned=True, shown=text)


def delay_seconds(ms: float | None) -> float | None:
    """``--delay MS`` in seconds (``-1``: :data:`UNTIL_ENABLED`; 0 or none: ``None``, no delay)."""
    if ms is None or ms == 0:
        return None
    return UNTIL_ENABLED if ms < 0 else ms / 1000.0


def _fifo(option: str, path: str) -> int:
    """The named pipe ``path`` opened read-write, non-blocking (as perf opens it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(
            f"--control {printable(option)}: cannot open {printable(path)} ({exc.strerror or exc}); "
            f"create the named pipe first with mkfifo {printable(path)}"
        ) from None
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(
            f"--control {printable(option)}: {printable(path)} is not a named pipe; "
            f"create one with mkfifo, or use fd:N for an open descriptor"
        )
    return fd


def _inherited(option: str, text: str, access: int) -> int:
    """Descriptor ``text`` as handed down to sectormon, open for ``access``."""
    if not is_ascii_digits(text) or int(text) > 1 << 20:
        raise UsageError(
            f"--control {printable(option)}: {printable(text)!r} is not a descriptor number; {EXAMPLE}"
        )
    fd = int(text)
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        raise UsageError(
            f"--control {printable(option)}: descriptor {fd} is not open in sectormon "
            f"(open it in the shell that starts sectormon, e.g. exec {fd}<>ctl.fifo)"
        ) from None
    mode = flags & os.O_ACCMODE
    if mode != os.O_RDWR and mode != access:
        verb = "reading" if access == os.O_RDONLY else "writing"
        raise UsageError(f"--control {printable(option)}: descriptor {fd} is not open for {verb}")
    return fd
