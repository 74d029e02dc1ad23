"""``--sample`` end to end: the installed command's frames carry hot spots, live on this host (page
faults of a C program whose faults are known exactly) and on the simulated A64FX; recordings
replay them, and compare shows how the shares moved."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import (
    first_frame,
    in_sigwait,
    jsonl_records,
    read_jsonl,
    run_sectormon,
    sectormon_command,
    wait_until,
    workload,
)
from tests.e2e.test_hotspots import ARRAYS, FUNCTIONS, build, by_name, expected_shares

pytestmark = [pytest.mark.e2e]


def frames_of(proc_stdout: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *frames = read_jsonl(proc_stdout)
    return header, frames


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("arrays"), initialised=True)


@pytest.mark.syscall
def test_live_page_faults_are_attributed_to_the_three_arrays_and_replay_the_same(
    program: Path, tmp_path: Path
) -> None:
    recording = tmp_path / "arrays.jsonl"
    proc = run_sectormon(
        "--json", "--sample", "page-faults:1", "--record", str(recording), "--", str(program)
    )
    assert proc.returncode == 0, proc.stderr
    header, frames = frames_of(proc.stdout)
    assert header["hotspots"]["event"] == {"name": "page-faults", "spec": "page-faults"}
    final = frames[-1]
    assert final["final"]
    run = final["hotspots"]["run"]
    assert run["samples"] + run["lost_samples"] == run["counted_total"], "every fault sampled or counted lost"
    objects = by_name(run["objects"])
    counts = {name: objects[name]["samples"] for name in ARRAYS}
    # A lost sample is missing from one array's share: under load the ring can overflow while one
    # array faults, which moves each share by at most lost / samples.
    skew = run["lost_samples"] / run["samples"]
    for name, share in expected_shares(run["samples"], counts).items():
        assert objects[name]["share"] == pytest.approx(share, abs=0.02 + skew), name
    assert objects["big_array"]["share"] > 0.75 - skew and objects["mid_array"]["share"] > 0.18 - skew
    functions = by_name(run["functions"])
    for function, array in FUNCTIONS.items():
        assert functions[function]["samples"] == pytest.approx(objects[array]["samples"], abs=2), function
    replay = run_sectormon("replay", "--json", str(recording))
    assert replay.returncode == 0, replay.stderr
    _, replayed = frames_of(replay.stdout)
    assert [f.get("hotspots") for f in replayed] == [f.get("hotspots") for f in frames]


@pytest.mark.syscall
def test_a_running_process_is_sampled_from_the_moment_it_is_attached() -> None:
    """``--pid``: the target's anonymous pages fault while sectormon watches; every frame window
    gets the faults of its own time, and the whole run accounts for every counted fault.

    The target, already running with its region mapped, starts faulting once sectormon has
    written its header (its counters and samplers run by then). Attaching in the middle of a burst
    of faults can put a few of them between the enabling of the counting and the sampling fds,
    which are separate (docs/hotspots.md, "Attaching to a running process"): exactness is asserted
    from the attach on."""
    target = subprocess.Popen(
        workload("pagefaults.py", 30_000, 3, "--after-sigusr1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        # SIGUSR1 would kill the target before it blocks the signal to wait for it.
        wait_until(lambda: in_sigwait(target.pid), "the target waits for SIGUSR1")
        command = [sectormon_command(), "--pid", str(target.pid), "--json", "--interval", "0.5"]
        with subprocess.Popen(
            [*command, "--sample", "page-faults:1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as monitor:
            assert monitor.stdout is not None
            header = monitor.stdout.readline()
            assert '"schema"' in header, monitor.stderr.read() if monitor.stderr else ""
            target.send_signal(signal.SIGUSR1)
            rest, errors = monitor.communicate(timeout=60)
        assert monitor.returncode == 0, errors
    finally:
        target.kill()
        target.wait(timeout=60)
    _, frames = frames_of(header + rest)
    run = frames[-1]["hotspots"]["run"]
    assert run["samples"] + run["lost_samples"] == run["counted_total"] > 10_000
    assert run["objects"][0]["name"] == "[anon]" and run["objects"][0]["share"] > 0.9
    windows = [f["hotspots"]["interval"] for f in frames[:-1]]
    busy = [w for w in windows if w["counted_total"] > 1000]
    assert len(busy) >= 3
    assert sum(w["samples"] for w in busy) > 0.5 * sum(w["counted_total"] for w in busy)


def test_a_simulated_run_recorded_and_replayed_gives_identical_hot_spot_tables(tmp_path: Path) -> None:
    recording = tmp_path / "sim.jsonl.gz"
    args = ("--sector-cache", "off", "--size", "passes=600", "--interval", "0.0001")
    proc = run_sectormon(
        "sim", "--json", *args, "--sample", "L1D_CACHE_REFILL:31", "--record", str(recording)
    )
    assert proc.returncode == 0, proc.stderr
    header, frames = frames_of(proc.stdout)
    assert len(frames) > 3
    assert header["hotspots"]["period"] == 31
    for frame in frames:
        interval = frame["hotspots"]["interval"]
        assert interval["latency_buckets"] == ["L1 hit", "L2 hit", "memory"]
        assert sum(sum(r["latency_buckets"]) for r in interval["objects"]) == interval["samples"]
    objects = by_name(frames[-1]["hotspots"]["run"]["objects"])
    assert set(objects) >= {"reused", "stream"}
    replay = run_sectormon("replay", "--json", str(recording))
    assert replay.returncode == 0, replay.stderr
    _, replayed = frames_of(replay.stdout)
    assert [f["hotspots"] for f in replayed] == [f["hotspots"] for f in frames]


def test_compare_shows_how_each_arrays_share_moved(tmp_path: Path) -> None:
    paths = {}
    for state in ("off", "on"):
        paths[state] = tmp_path / f"{state}.jsonl"
        proc = run_sectormon(
            "sim",
            "--json",
            "--sector-cache",
            state,
            "--size",
            "passes=600",
            "--sample",
            "L1D_CACHE_REFILL:31",
            "--record",
            str(paths[state]),
        )
        assert proc.returncode == 0, proc.stderr
    proc = run_sectormon("compare", "--json", str(paths["off"]), str(paths["on"]))
    assert proc.returncode == 0, proc.stderr
    shift = json.loads(proc.stdout)["hotspots"]
    moves = by_name(shift["objects"])
    # Sectors off: the stream evicts the reused array, both miss alike. On: only the stream misses.
    assert moves["reused"]["share_base"] == pytest.approx(0.5, abs=0.05)
    assert moves["reused"]["share_other"] < 0.01
    assert moves["stream"]["share_other"] > 0.98
    assert moves["reused"]["share_delta"] == pytest.approx(
        moves["reused"]["share_other"] - moves["reused"]["share_base"]
    )
    text = run_sectormon("compare", str(paths["off"]), str(paths["on"]), "--scope", "total")
    assert text.returncode == 0, text.stderr
    assert "Hot spots: share of the sampled events" in text.stdout
    assert any(line.split()[:1] == ["reused"] for line in text.stdout.splitlines())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sim", "--json", "--sample", "CPU_CYCLES"), "--sample CPU_CYCLES: not an L1D refill event"),
        (("sim", "--json", "--sample-top", "3"), "--sample-top 3 sets the rows of --sample's hot spots"),
        (("sim", "--json", "--sample", "L1D_CACHE_REFILL:0"), "give the period as a whole number from 1 to"),
        (("sim", "--summary", "--sample", "L1D_CACHE_REFILL"), "--summary prints one JSON object"),
        (("--json", "--sample", "no-such-event", "--", "true"), "--sample no-such-event: not an event"),
    ],
)
def test_bad_sample_options_are_one_line_and_status_2(args: tuple[str, ...], message: str) -> None:
    proc = run_sectormon(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    errors = [
        line for line in proc.stderr.splitlines() if line.startswith("sectormon: ") and "warning" not in line
    ]
    assert len(errors) == 1 and "Traceback" not in proc.stderr


SHORT_LIVED = r"""
#include <stdlib.h>
#include <sys/prctl.h>
int main(void) {
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    size_t n = 8 << 20;
    char *p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    return p[4096] - 1;
}
"""


@pytest.mark.slow
@pytest.mark.syscall
def test_each_window_of_short_lived_children_reconciles_samples_lost_and_count(tmp_path: Path) -> None:
    """20 short processes one after the other, sampled at every fault: in every frame's window the
    samples plus the lost ones are the window's counted total (the rings and the counters are
    read together; a window is handed over once its samples are resolved)."""
    source = tmp_path / "short.c"
    source.write_text(SHORT_LIVED)
    exe = tmp_path / "short"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(source)], check=True, capture_output=True)
    loop = f"for i in $(seq 20); do {exe} >/dev/null; done"
    proc = run_sectormon("--json", "--sample", "page-faults:1", "--interval", "0.2", "--", "sh", "-c", loop)
    assert proc.returncode == 0, proc.stderr
    _, frames = frames_of(proc.stdout)
    windows = [f["hotspots"]["interval"] for f in frames if "interval" in f.get("hotspots", {})]
    assert windows and windows[-1]["samples"] > 20 * 2048
    for window in windows:
        # Reading the rings and then the counters leaves microseconds in which an event is counted
        # in one window and sampled in the next.
        assert window["samples"] + window["lost_samples"] == pytest.approx(window["counted_total"], abs=8)
    run = frames[-1]["hotspots"]["run"]
    assert run["samples"] + run["lost_samples"] == run["counted_total"]


# The target loads a library, moves its folder away and puts a FIFO at the library's path: an
# open() of that path for symbols blocks until a writer comes, which never happens.
FIFO_TARGET = """
import ctypes, os, sys, time
lib, go, swapped = sys.argv[1:4]
ctypes.CDLL(lib)
while not os.path.exists(go):
    time.sleep(0.01)
folder = os.path.dirname(lib)
os.rename(folder, folder + '.old')
os.mkdir(folder)
os.mkfifo(lib)
open(swapped, 'w').close()
end = time.time() + 60
while time.time() < end:
    x = [0] * 10**6
"""


def _libm() -> Path | None:
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libm.so" in path or "/libm-" in path:
            return Path(path)
    return None


@pytest.mark.slow
@pytest.mark.syscall
def test_sigterm_ends_a_sample_session_even_when_symbolizing_blocks(tmp_path: Path) -> None:
    """SIGTERM always ends a live ``--sample`` session: with a FIFO planted where the target's
    library was, symbolizing could block for ever (sectormon ignored SIGTERM). It ends with its
    final frame (exit 0) or, blocked past the grace, with one line and exit 143; the launched
    command does not outlive it."""
    libm = _libm()
    if libm is None:
        pytest.skip("no libm mapped in this interpreter")
    folder = tmp_path / "d"
    folder.mkdir()
    lib = folder / libm.name
    lib.write_bytes(libm.read_bytes())
    go, swapped, out = tmp_path / "go", tmp_path / "swapped", tmp_path / "frames.jsonl"
    marker = str(tmp_path)
    monitor = subprocess.Popen(
        [sectormon_command(), "--json", "-o", str(out), "--profile", "generic", "--interval", "0.3",
         "--sample", "page-faults", "--", sys.executable, "-c", FIFO_TARGET, str(lib), str(go), str(swapped)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first_frame(out)
        go.touch()
        wait_until(swapped.exists, "the target planted its FIFO")
        count = len(jsonl_records(out))
        wait_until(lambda: len(jsonl_records(out)) > count or monitor.poll() is not None, "a frame after")
        monitor.send_signal(signal.SIGTERM)
        _, stderr = monitor.communicate(timeout=60)
    finally:
        if monitor.poll() is None:
            monitor.kill()
            monitor.wait()
    assert "Traceback" not in stderr
    if monitor.returncode == 0:
        assert jsonl_records(out)[-1]["final"] is True
    else:
        assert monitor.returncode == 128 + signal.SIGTERM, stderr
        assert stderr.strip().splitlines()[-1] == (
            "sectormon: the session did not end within 10 s of SIGTERM: ending without the final frame"
        )

    def target_gone() -> bool:
        return not any(p.name.isdigit() and marker.encode() in _cmdline(p) for p in Path("/proc").iterdir())

    wait_until(target_gone, "the launched command ended with sectormon", timeout=30)


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
