"""--proxy through the installed command: on the simulated 48-core A64FX (four CMGs of twelve
cores, one stand-in each) against a full count of the same run, and with the real syscalls on a
homogeneous threaded target against the kernel's own CPU time of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon, workload

pytestmark = pytest.mark.e2e

ROTATING = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "generic-rotating.yaml"

# The simulated kernel runs the same loop on every core, so a CMG's cores do the same work: one
# core times twelve lands within the model's core-to-core spread (under 0.2 % measured; 2 % is
# ten times that, and a scaling slip of a single core is 1/12 = 8 %).
SIM_TOLERANCE = 0.02


def _sim(tmp_path: Path, *options: str) -> list[dict]:
    out = tmp_path / f"sim{len(options)}.jsonl"
    proc = run_sectormon(
        "sim", "--threads", "48", "--once", "--count", "3", "--json", "-o", str(out), *options, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return read_jsonl(out.read_text())


@pytest.mark.slow
def test_proxy_1_on_the_48_core_sim_scales_one_core_per_cmg(tmp_path: Path) -> None:
    recording = tmp_path / "proxy.jsonl.gz"
    header, *frames = _sim(tmp_path, "--proxy", "1", "--record", str(recording))
    _, *full_frames = _sim(tmp_path)
    proxy = header["proxy"]
    assert proxy["per_cmg"] == 1 and proxy["reference"] == "units"
    assert proxy["described"] == "proxy 1/CMG: tid 0 (CMG0), tid 1 (CMG1), tid 2 (CMG2), tid 3 (CMG3)"
    final, full = frames[-1], full_frames[-1]
    proxied = set(proxy["events"])
    assert {"CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL"} <= proxied
    assert "L2_MISS_COUNT" not in proxied  # CMG-wide: counted once per CMG as without --proxy
    stand_in_cores = {str(12 * cmg) for cmg in range(4)}  # threads 0-3 run on the first core of each CMG
    for scope, reference in [(final["total"], full["total"])] + [
        (final["cmgs"][c], full["cmgs"][c]) for c in ("0", "1", "2", "3")
    ]:
        for event in ("CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL", "L2D_CACHE"):
            assert scope["counts"][event] == pytest.approx(reference["counts"][event], rel=SIM_TOLERANCE)
            assert event in scope["proxy"]
        assert scope["metrics"]["IPC"] == pytest.approx(reference["metrics"]["IPC"], rel=SIM_TOLERANCE)
        assert "IPC" in scope["proxy"]
        assert not proxied & set(scope["counts"]) - set(scope["proxy"])  # every estimate is flagged
        assert scope["counts"]["L2_MISS_COUNT"] == reference["counts"]["L2_MISS_COUNT"]
        assert "L2_MISS_COUNT" not in scope["proxy"]
    for core, stats in final["cores"].items():
        if core in stand_in_cores:
            assert stats["counts"]["INST_RETIRED"] > 0 and "proxy" not in stats
        else:
            assert "INST_RETIRED" not in stats["counts"] and stats["metrics"]["IPC"] is None
    assert len(stand_in_cores) == 4 and len(final["cores"]) == 48
    # the recording carries the setting: its replay is the live session's frames
    replay = run_sectormon("replay", "--json", str(recording), timeout=300)
    assert replay.returncode == 0, replay.stderr
    replay_header, *replayed = read_jsonl(replay.stdout)
    assert replay_header["proxy"] == proxy
    assert replayed[-1]["total"] == final["total"] and replayed[-1]["cmgs"] == final["cmgs"]
    with gzip.open(recording, "rt") as lines:
        assert json.loads(lines.readline())["proxy"] == proxy


# The kernel's CPU time of the target (thread_time.kernel_s) is /proc's utime + stime, in 10 ms
# ticks read at 0.25 s steps: 5 % of a run's seconds, or 50 ms in a short interval, is several ticks
# and read steps; a stand-in not scaled (1/8 or 1/5) or scaled by presence next to a waiting thread
# (5/4) fails it by far.
KERNEL_TIME_TOLERANCE = {"rel": 0.05, "abs": 0.05}


@pytest.mark.syscall
def test_proxy_1_on_real_threads_estimates_the_task_time_the_kernel_reports(tmp_path: Path) -> None:
    """Eight threads hash in parallel; the main thread alone counts the rotating groups (software
    events rotated like counter events) and stands in for all eight. The profile has no always-on
    event, so --proxy opens task-clock on every thread as the reference: the estimate is the stand-in's
    count per second of its task time times the threads' task time, whatever share of the CPUs each
    thread got (on a loaded machine the shares are unequal, and scaling by presence was 21 % high).
    The task-clock estimate is then the kernel's CPU time of the target in the same run."""
    out = tmp_path / "proxy.jsonl"
    proc = run_sectormon(
        "--json", "-o", str(out), "--profile", str(ROTATING), "--proxy", "1", "--interval", "1",
        "--", *workload("hashing.py", 8, 3),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    header, *frames = read_jsonl(out.read_text())
    pid = header["target"]["pid"]
    assert header["proxy"]["described"] == f"proxy 1/CMG: tid {pid}"
    assert header["proxy"]["stand_ins"] == [f"thread:{pid}"]
    assert header["proxy"]["reference"] == "task-time"
    final = frames[-1]
    total = final["total"]
    assert {"TASK_CLOCK", "PAGE_FAULTS", "cpu_utilization"} <= set(total["proxy"])
    kernel_s = final["thread_time"]["kernel_s"]
    assert total["counts"]["TASK_CLOCK"] / 1e9 == pytest.approx(kernel_s, **KERNEL_TIME_TOLERANCE)
    threads = final["threads"]
    assert len(threads) == 8 and threads[str(pid)]["counts"]["TASK_CLOCK"] > 0
    for tid, stats in threads.items():
        if tid != str(pid):
            assert "TASK_CLOCK" not in stats["counts"] and stats["metrics"]["cpu_utilization"] is None
    # the reference event is no figure of the session: it never shows in a frame
    assert not any("proxy task time" in json.dumps(frame) for frame in frames)


def test_proxy_needs_a_whole_number_of_at_least_one() -> None:
    proc = run_sectormon("sim", "--proxy", "0", "--json", "--count", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "--proxy" in proc.stderr


@pytest.mark.syscall
def test_proxy_1_hands_an_idle_main_threads_role_to_a_worker(tmp_path: Path) -> None:
    """The main thread starts four hashing workers and waits. It is the only thread at the start,
    so it stands in first; it runs nearly nothing, so a worker takes its role over within the first
    windows, with a warning naming both. Every thread's task time is the scaling reference, so the
    waiting main thread weighs what it ran: the last interval is estimated from a worker, and the
    whole run's estimate, which holds both stand-ins, is the kernel's CPU time of the target (the
    idle main thread's count scaled as a sample of the workers would fail it by far). An interval in
    which the main thread stood in and ran nothing while the workers ran has no estimate (n/a). An
    interval's kernel time spans /proc's reads, 0.3 s apart, not the interval: the run's is the one
    over the same span as the estimate."""
    out = tmp_path / "proxy.jsonl"
    proc = run_sectormon(
        "--json", "-o", str(out), "--profile", str(ROTATING), "--proxy", "1", "--interval", "1",
        "--", *workload("hashing.py", 4, 4, "--main-waits"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    header, *frames = read_jsonl(out.read_text())
    pid = header["target"]["pid"]
    assert header["proxy"]["stand_ins"] == [f"thread:{pid}"]
    handed = [w for w in proc.stderr.splitlines() if f"in place of thread {pid}, which ran" in w]
    assert len(handed) == 1, proc.stderr
    successor = handed[0].split()[4]  # "sectormon: warning: proxy: thread TID stands in ..."
    assert successor != str(pid) and frames[-1]["threads"][successor]["counts"]["TASK_CLOCK"] > 0
    *intervals, run = frames  # the final frame is the run's
    last = intervals[-1]["total"]
    assert "TASK_CLOCK" in last["proxy"] and last["counts"]["TASK_CLOCK"] > 0
    assert "TASK_CLOCK" in run["total"]["proxy"]
    estimate_s = run["total"]["counts"]["TASK_CLOCK"] / 1e9
    assert estimate_s == pytest.approx(run["thread_time"]["kernel_s"], **KERNEL_TIME_TOLERANCE)


@pytest.mark.syscall
def test_proxy_2_on_real_threads_gives_each_estimate_its_error_bound(tmp_path: Path) -> None:
    """Two stand-ins of eight hashing threads: every proxied figure of the run's total carries
    its error bound in ``proxy_error`` (the relative half-width of its 95 % interval, from how the
    two stand-ins' rates differ), a number above 0 for task-clock (six threads were not counted);
    the interval frames carry bounds for the same figures they flag."""
    out = tmp_path / "proxy2.jsonl"
    proc = run_sectormon(
        "--json", "-o", str(out), "--profile", str(ROTATING), "--proxy", "2", "--interval", "1",
        "--", *workload("hashing.py", 8, 3),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    header, *frames = read_jsonl(out.read_text())
    assert header["proxy"]["per_cmg"] == 2
    total = frames[-1]["total"]
    assert set(total["proxy_error"]) == set(total["proxy"]) >= {"TASK_CLOCK", "PAGE_FAULTS"}
    bound = total["proxy_error"]["TASK_CLOCK"]
    assert isinstance(bound, float) and bound > 0.0
    assert all(b is None or b >= 0.0 for b in total["proxy_error"].values())
    for frame in frames:
        assert set(frame["total"].get("proxy_error", {})) == set(frame["total"].get("proxy", []))


@pytest.mark.slow
def test_proxy_3_on_the_48_core_sim_bounds_each_estimate_and_the_bound_holds(tmp_path: Path) -> None:
    """Three stand-ins of each CMG's twelve simulated cores: every CMG's and the total's proxied
    counts carry a bound (the cores' spread around their common rate), and the full count of the
    same run lies within it for at least 18 of the 20 (scope, event) pairs (a 95 % interval: all
    20 measured, the closest CMG 0's cycles, off by 0.21 % within ±0.23 %); with one stand-in (the
    test above) the bound is unknown (null)."""
    header, *frames = _sim(tmp_path, "--proxy", "3")
    _, *full_frames = _sim(tmp_path)
    final, full = frames[-1], full_frames[-1]
    assert header["proxy"]["per_cmg"] == 3
    held = []
    for scope, reference in [(final["total"], full["total"])] + [
        (final["cmgs"][c], full["cmgs"][c]) for c in ("0", "1", "2", "3")
    ]:
        assert set(scope["proxy_error"]) == set(scope["proxy"])
        for event in ("CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL", "L2D_CACHE"):
            bound = scope["proxy_error"][event]
            assert isinstance(bound, float) and bound > 0.0
            held.append(
                abs(scope["counts"][event] - reference["counts"][event]) <= bound * scope["counts"][event]
            )
    assert len(held) == 20 and sum(held) >= 18, held
    one = _sim(tmp_path, "--proxy", "1")[-1]
    assert one["cmgs"]["0"]["proxy_error"]["CPU_CYCLES"] is None
