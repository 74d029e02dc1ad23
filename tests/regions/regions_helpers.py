"""What the region tests share: building marked programs as a user would, and playing sectormon.

Programs are compiled with ``sectormon markers --cflags`` / ``--libs`` (the installed command), so
the flags users copy are the ones tested. :func:`counting` stands in for the live session: a
:class:`MarkerEndpoint` whose opener opens a page-faults + task-clock group on each marking thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from sectormon.data.frames import RegionStats
from sectormon.data.regions import RegionSnapshot
from sectormon.metrics.formulas import MetricSet
from sectormon.metrics.regions import RegionScopes
from sectormon.perf.errors import PerfError
from sectormon.perf.events import parse_event
from sectormon.perf.group import PerfGroup
from sectormon.profiles.resolve import load_profile
from sectormon.regions.endpoint import MarkerEndpoint

PROGRAMS = Path(__file__).resolve().parent / "programs"
SECTORMON = Path(sys.executable).parent / "sectormon"
EVENTS = ("page-faults", "task-clock")

# A gfortran program whose fapp region ("kernel", 1) touches {pages} fresh pages.
FORTRAN = """\
program kernel_pages
  implicit none
  integer, parameter :: pages = {pages}, stride = {stride}
  real(8), allocatable :: a(:)
  integer :: i
  allocate(a(pages * stride))
  call fapp_start("kernel", 1, 0)
  do i = 1, pages
    a((i - 1) * stride + 1) = i
  end do
  call fapp_stop("kernel", 1, 0)
  print *, sum(a(1:pages * stride:stride))
end program kernel_pages
"""


def marker_flags(which: str) -> list[str]:
    out = subprocess.run([str(SECTORMON), "markers", which], capture_output=True, text=True, check=True)
    return out.stdout.split()


def need_compiler(name: str = "cc") -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"needs {name} (Debian: apt-get install {'gfortran' if name == 'gfortran' else 'gcc'})")
    return path


def build(
    source: Path,
    output: Path,
    *flags: str,
    compiler: str = "cc",
    link: bool = True,
    extra: Sequence[str] = (),
) -> Path:
    """Compile ``source`` as a user would: ``cc $(sectormon markers --cflags) ... $(... --libs)``."""
    command = [need_compiler(compiler), "-O2", *flags, *marker_flags("--cflags"), str(source), *extra]
    command += ["-o", str(output), "-pthread"]
    if link:
        command += marker_flags("--libs")
    subprocess.run(command, check=True, capture_output=True, text=True)
    return output


def need_perf() -> None:
    try:
        with PerfGroup([parse_event(e) for e in EVENTS], pid=0):
            pass
    except PerfError as exc:
        pytest.skip(f"perf_event_open is not available here: {exc}")


class SoftwareOpener:
    """Opens page-faults + task-clock (user space) on the asking thread, enabled; closes them all."""

    def __init__(self, groups_per_thread: int = 1, enabled: bool = True) -> None:
        self.groups_per_thread = groups_per_thread
        self.enabled = enabled
        self.opened: list[PerfGroup] = []

    def __call__(self, tid: int) -> list[PerfGroup]:
        groups = []
        for _ in range(self.groups_per_thread):
            group = PerfGroup([parse_event(e) for e in EVENTS], pid=tid, names=EVENTS)
            if self.enabled:
                group.enable()
            groups.append(group)
        self.opened.extend(groups)
        return groups

    def close(self) -> None:
        for group in self.opened:
            group.close()


@contextmanager
def counting(
    opener: Callable[[int], Sequence[PerfGroup]] | None = None, *, level: int = 0, rotated: bool = False
) -> Iterator[MarkerEndpoint]:
    need_perf()
    software = SoftwareOpener()
    endpoint = MarkerEndpoint(opener or software, level=level, rotated=rotated)
    try:
        yield endpoint
    finally:
        endpoint.close()
        software.close()


def run_marked(
    endpoint: MarkerEndpoint | None, program: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SECTORMON_")}
    if endpoint is not None:
        environment.update(endpoint.environment())
    environment.update(env or {})
    return subprocess.run(
        [str(program), *args], env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def faults(snapshot: RegionSnapshot, name: str, number: int = 0) -> list[float]:
    return [r.counts()["page-faults"] for r in snapshot.of(name, number)]


def region_totals(snapshot: RegionSnapshot) -> dict[str, RegionStats]:
    """Each region over its threads, as frames give it (no CMG-wide events here)."""
    return RegionScopes(MetricSet(load_profile("generic")), (), {}).build(snapshot.threads)
