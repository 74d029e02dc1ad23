"""Where this host's procfs and sysfs are mounted: the one root every reader in host/ starts from.

sectormon reads /proc and /sys, and only through host/. Tests, and ``sectormon check``'s hidden
``--procfs-root``/``--sysfs-root`` options, point every one of those readers at a fake tree at once
with :func:`use`. The roots are module attributes, read at each call, as psutil's ``PROCFS_PATH``
is: where procfs lives is a fact of the process, not an argument each caller should carry from
the command line down to the sampler's per-timeslice reads. :func:`use` moves psutil's root too,
so what psutil reads follows the same tree.
"""

from __future__ import annotations

import os

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


def use(
    *, procfs: str | os.PathLike[str] | None = None, sysfs: str | os.PathLike[str] | None = None
) -> _Moved:
    """Read procfs and/or sysfs from the given folders until the ``with`` block ends (then the
    roots that were in use before come back)."""
    return _Moved(procfs, sysfs)


class _Moved:
    """:func:`use`'s context: a class, not :mod:`contextlib` (whose import is most of the cost of
    this module, which ``sectormon stat``'s quick start reads)."""

    def __init__(self, procfs: str | os.PathLike[str] | None, sysfs: str | os.PathLike[str] | None) -> None:
        self._procfs = procfs
        self._sysfs = sysfs
        self._before: tuple[str, str, str] | None = None

    def __enter__(self) -> None:
        import psutil  # here, not at the top: only a moved root needs it, and replay reads host/ too

        global PROCFS_PATH, SYSFS_PATH
        self._before = PROCFS_PATH, SYSFS_PATH, psutil.PROCFS_PATH
        if self._procfs is not None:
            PROCFS_PATH = psutil.PROCFS_PATH = os.fspath(self._procfs)
        if self._sysfs is not None:
            SYSFS_PATH = os.fspath(self._sysfs)

    def __exit__(self, *_exc: object) -> None:
        import psutil

        global PROCFS_PATH, SYSFS_PATH
        assert self._before is not None
        PROCFS_PATH, SYSFS_PATH, psutil.PROCFS_PATH = self._before
