"""What a counted process is: its command, parent and MPI rank, read from procfs.

MPI launchers tell each rank who it is through its environment; reading ``/proc/PID/environ``
once, when a process is first seen, names it by rank in frames without any help from the job.
"""

from __future__ import annotations

from sectormon.data.readings import ProcessInfo
from sectormon.files.text import is_ascii_digits
from sectormon.host import roots

RANK_VARIABLES = (
    "OMPI_COMM_WORLD_RANK",  # Open MPI (and Fujitsu MPI, which is built on it)
    "PMIX_RANK",  # PMIx launchers (Open MPI 5, Slurm with PMIx)
    "PMI_RANK",  # MPICH, Intel MPI (Hydra)
    "SLURM_PROCID",  # a task of a Slurm step
)
"""Environment variables that carry a process's MPI rank, the most specific first."""


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return None


def parse_environ(environ: bytes) -> dict[str, str]:
    """The variables of a ``/proc/PID/environ`` image (NUL-separated ``NAME=value``)."""
    values: dict[str, str] = {}
    for entry in environ.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep:
            values[name.decode(errors="replace")] = value.decode(errors="replace")
    return values


def environ_of(pid: int) -> dict[str, str] | None:
    """The environment process ``pid`` started with; ``None`` when it has gone or is not ours to read."""
    environ = _read(roots.procfs(pid, "environ"))
    return parse_environ(environ) if environ is not None else None


def rank_of(environ: bytes) -> int | None:
    """The MPI rank in a ``/proc/PID/environ`` image (NUL-separated ``NAME=value``), if any."""
    values = parse_environ(environ)
    for variable in RANK_VARIABLES:
        text = values.get(variable, "").strip()
        if is_ascii_digits(text):
            return int(text)
    return None


def parent_of(status: bytes) -> int | None:
    """The ``PPid:`` of a ``/proc/PID/status`` image."""
    for line in status.splitlines():
        if line.startswith(b"PPid:"):
            text = line[5:].strip()
            return int(text) if text.isdigit() else None
    return None


def read_process_info(pid: int) -> ProcessInfo | None:
    """The process ``pid`` as procfs shows it now; ``None`` when it has gone."""
    comm = _read(roots.procfs(pid, "comm"))
    if comm is None:
        return None
    status = _read(roots.procfs(pid, "status"))
    environ = _read(roots.procfs(pid, "environ"))
    return ProcessInfo(
        pid=pid,
        command=comm.decode(errors="replace").strip() or str(pid),
        parent=parent_of(status) if status is not None else None,
        rank=rank_of(environ) if environ is not None else None,
    )
