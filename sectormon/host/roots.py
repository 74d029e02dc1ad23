"""Where this host's procfs and sysfs are mounted: the one root every reader in host/ starts from.

sectormon reads /proc and /sys, and only through host/. Tests, and ``sectormon check``'s hidden
``--procfs-root``/``--sysfs-root`` options, point every one of those readers at a fake tree at once
with :func:`use`. The roots are module attributes, read at each call, as psutil's ``PROCFS_PATH``
is: where procfs lives is a fact of the process, not an argument each caller should carry from
the command line down to the sampler's per-timeslice reads. :func:`use` moves psutil's root too,
so what psutil reads follows the same tree.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

REAL_PROCFS = "/proc"
REAL_SYSFS = "/sys"

PROCFS_PATH = REAL_PROCFS
"""The procfs root readers use now (change it with :func:`use`)."""

SYSFS_PATH = REAL_SYSFS
"""The sysfs root readers use now (change it with :func:`use`)."""


def procfs(*parts: str | int) -> str:
    """A path under the procfs root: ``procfs(pid, "stat")`` is ``/proc/PID/stat`` on a real host.

    A plain string join: the sampler builds such paths every timeslice, where pathlib costs
    several times the read itself.
    """
    return os.path.join(PROCFS_PATH, *map(str, parts))


def sysfs(*parts: str | int) -> str:
    """A path under the sysfs root: ``sysfs("devices/system/cpu/online")``."""
    return os.path.join(SYSFS_PATH, *map(str, parts))


def real_procfs() -> bool:
    """Whether procfs is the kernel's own (descriptors of its files, pidfds and /proc/self name
    real processes; in a fake tree a pid is only a folder name)."""
    return PROCFS_PATH == REAL_PROCFS


@contextlib.contextmanager
def use(
    *, procfs: str | os.PathLike[str] | None = None, sysfs: str | os.PathLike[str] | None = None
) -> Iterator[None]:
    """Read procfs and/or sysfs from the given folders until the block ends (then the roots that
    were in use before come back)."""
    import psutil  # here, not at the top: only a moved root needs it, and replay reads host/ too

    global PROCFS_PATH, SYSFS_PATH
    before = PROCFS_PATH, SYSFS_PATH, psutil.PROCFS_PATH
    if procfs is not None:
        PROCFS_PATH = psutil.PROCFS_PATH = os.fspath(procfs)
    if sysfs is not None:
        SYSFS_PATH = os.fspath(sysfs)
    try:
        yield
    finally:
        PROCFS_PATH, SYSFS_PATH, psutil.PROCFS_PATH = before
