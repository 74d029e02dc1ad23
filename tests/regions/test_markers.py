"""A C program marked with fapp and LIKWID calls: unchanged alone, exact region counts under sectormon.

The program (programs/marked.c) touches known numbers of fresh pages: fapp_pages 4 x 6,000,
likwid_pages 1,500, three pthreads 800 each under LIKWID's ``worker``, and unmarked pages before
and after. Under the endpoint each region's page faults must be within 1 % of its pages, per thread
(the marker's own first-call faults are none: the library touches its slot before the first read,
docs/regions.md).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import pytest

from sectormon.regions import layout
from sectormon.regions.library import LIBRARY_FILE
from tests.regions.regions_helpers import (
    FORTRAN,
    PROGRAMS,
    SECTORMON,
    build,
    counting,
    faults,
    need_compiler,
    region_totals,
    run_marked,
)

pytestmark = pytest.mark.syscall


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("marked")
    return build(PROGRAMS / "marked.c", out / "marked", "-DLIKWID_PERFMON")


def test_the_library_writes_the_layout_the_reader_reads() -> None:
    lib = ctypes.CDLL(str(LIBRARY_FILE))
    out = (ctypes.c_uint32 * 6)()
    lib.sectormon_markers_layout(out)
    assert list(out) == [
        layout.VERSION,
        layout.HEADER.size,
        layout.THREAD.size,
        layout.SLOT_BYTES,
        layout.MAX_GROUPS,
        layout.MAX_EVENTS,
    ]
    assert layout.HEADER.size <= layout.HEADER_BYTES


def test_run_alone_the_marked_program_behaves_as_the_unmarked_one(marked: Path, tmp_path: Path) -> None:
    plain = build(PROGRAMS / "marked.c", tmp_path / "plain", "-DUNMARKED", link=False)
    alone, without = run_marked(None, marked), run_marked(None, plain)
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, without.stdout, "")
    assert without.returncode == 0


def test_each_region_counts_its_own_pages_exactly_per_thread(marked: Path) -> None:
    with counting() as endpoint:
        run = run_marked(endpoint, marked)
        assert (run.returncode, run.stderr) == (0, "")
        snapshot = endpoint.read()
    pid = snapshot.of("fapp_pages", 1)[0].pid
    (fapp,) = snapshot.of("fapp_pages", 1)
    assert (fapp.calls, fapp.open, fapp.tid, fapp.rank) == (4, False, pid, None)
    assert faults(snapshot, "fapp_pages", 1)[0] == pytest.approx(24_000, rel=0.01)
    (likwid,) = snapshot.of("likwid_pages")
    assert (likwid.calls, likwid.tid) == (1, pid)
    assert faults(snapshot, "likwid_pages")[0] == pytest.approx(1_500, rel=0.01)
    workers = snapshot.of("worker")
    assert len({w.tid for w in workers}) == 3 and pid not in {w.tid for w in workers}
    assert all(w.calls == 1 and not w.open and w.thread_exited for w in workers)
    assert faults(snapshot, "worker") == [pytest.approx(800, rel=0.01)] * 3
    worker = region_totals(snapshot)["worker"]
    assert worker.calls == 3 and worker.thread_count == 3
    assert worker.total.counts["page-faults"] == pytest.approx(2_400, rel=0.01)
    assert {e: worker.total.coverage[e] for e in ("page-faults", "task-clock")} == {
        "page-faults": 1.0,
        "task-clock": 1.0,
    }
    assert snapshot.of("too_deep", 1) == ()  # level 1 above the default level 0
    assert (snapshot.overflow, snapshot.unpaired, snapshot.dropped) == (frozenset(), 0, 0)


def test_a_higher_region_level_lets_deeper_calls_count(marked: Path) -> None:
    with counting(level=1) as endpoint:
        assert run_marked(endpoint, marked).returncode == 0
        (deep,) = endpoint.read().of("too_deep", 1)
    assert (deep.calls, deep.open) == (1, False)


def test_openmp_threads_each_count_their_own_share(tmp_path: Path) -> None:
    try:
        program = build(PROGRAMS / "openmp.c", tmp_path / "openmp", "-fopenmp", "-DLIKWID_PERFMON")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"no OpenMP here (gcc -fopenmp: {exc.stderr.strip()})")
    with counting() as endpoint:
        run = run_marked(endpoint, program, env={"OMP_WAIT_POLICY": "passive"})
        assert (run.returncode, run.stdout, run.stderr) == (0, "done\n", "")
        snapshot = endpoint.read()
    shares = sorted(faults(snapshot, "omp"))
    assert shares == [pytest.approx(200 * (i + 1), rel=0.01) for i in range(4)]
    assert len({r.tid for r in snapshot.of("omp")}) == 4


def test_a_gfortran_program_gets_its_regions_exact_faults(tmp_path: Path) -> None:
    need_compiler("gfortran")
    pages = 5_000
    source = tmp_path / "kernel.f90"
    source.write_text(FORTRAN.format(pages=pages, stride=os.sysconf("SC_PAGESIZE") // 8))
    program = build(source, tmp_path / "kernel", compiler="gfortran")
    assert run_marked(None, program).returncode == 0
    with counting() as endpoint:
        run = run_marked(endpoint, program)
        assert (run.returncode, run.stderr) == (0, "")
        (kernel,) = endpoint.read().of("kernel", 1)
    assert kernel.calls == 1 and not kernel.open
    # malloc may hand the array out with its first page already touched (its header)
    assert kernel.counts()["page-faults"] == pytest.approx(pages, rel=0.01)


def test_the_shipped_pkg_config_file_gives_the_same_flags(tmp_path: Path) -> None:
    pkg_config = need_compiler("pkg-config")
    pc_path = subprocess.run(
        [str(SECTORMON), "markers", "--pc-path"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    flags = subprocess.run(
        [pkg_config, "--cflags", "--libs", "sectormon-markers"],
        env={"PKG_CONFIG_PATH": pc_path, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    program = tmp_path / "pc"
    command = [need_compiler("cc"), "-DLIKWID_PERFMON", str(PROGRAMS / "marked.c"), "-o", str(program)]
    subprocess.run([*command, "-pthread", *flags], check=True)
    assert run_marked(None, program).returncode == 0
