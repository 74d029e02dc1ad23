"""`sectormon merge`, job replay and job compare, on four simulated hosts (Scenario A, two with the
sector cache on, two off)."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from sectormon.compare.sides import compare_paths
from sectormon.job.jobfile import open_job
from sectormon.job.replay import final_job_frame
from tests.e2e.helpers import read_jsonl, run_sectormon

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = {"node1": "on", "node2": "on", "node3": "off", "node4": "off"}
FRAMES = 8


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("nodes")
    out: dict[str, Path] = {}
    for host, sector in HOSTS.items():
        path = tmp / f"{host}.jsonl.gz"
        done = run_sectormon(
            "sim", "--json", "--count", str(FRAMES), "--sector-cache", sector, "--record", str(path),
            env={**os.environ, "SECTORMON_HOST": host},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out[host] = path
    return out


@pytest.fixture(scope="module")
def job(recordings: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("job") / "job.jsonl.gz"
    done = run_sectormon("merge", *map(str, recordings.values()), "-o", str(path))
    assert done.returncode == 0, done.stderr
    assert "merged 4 nodes (node1, node2, node3, node4)" in done.stderr
    assert "simulated nodes have no wall clock: they are aligned at their starts" in done.stderr
    return path


def replay_json(path: Path) -> list[dict[str, Any]]:
    done = run_sectormon("replay", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return read_jsonl(done.stdout)


def test_job_totals_are_the_sum_of_the_nodes_and_nodes_are_their_own_replay(
    job: Path, recordings: dict[str, Path]
) -> None:
    records = replay_json(job)
    header, frames = records[0], records[1:]
    assert [n["host"] for n in header["job"]["nodes"]] == list(HOSTS)
    own = {host: replay_json(path)[1:] for host, path in recordings.items()}
    assert len(frames) == FRAMES + 1
    for k, frame in enumerate(frames):
        nodes = {host: own[host][k] for host in HOSTS}
        assert frame["final"] == (k == FRAMES)
        for host, node_frame in nodes.items():
            # per node: exactly the node's own replay (total, CMGs, cores)
            assert frame["nodes"][host] == node_frame["total"]
            for cmg, stats in node_frame["cmgs"].items():
                assert frame["cmgs"][f"node:{host}/cmg:{cmg}"] == stats
            for core, stats in node_frame["cores"].items():
                assert frame["cores"][f"node:{host}/core:{core}"] == stats
        # job totals: the sum of the four, exactly (in the nodes' order)
        for event, count in frame["total"]["counts"].items():
            assert count == sum(nodes[h]["total"]["counts"][event] for h in HOSTS), event
        cycles = frame["total"]["counts"]["CPU_CYCLES"]
        insts = frame["total"]["counts"]["INST_RETIRED"]
        assert frame["total"]["metrics"]["IPC"] == insts / cycles


def test_the_job_file_keeps_each_recording_verbatim(job: Path, recordings: dict[str, Path]) -> None:
    with open_job(job) as alignment:
        for node in alignment.nodes:
            assert Path(node.path).read_bytes() == gzip.decompress(recordings[node.host].read_bytes())
        final = final_job_frame(alignment)
    assert set(final.nodes) == set(HOSTS)


def test_compare_two_on_hosts_with_two_off_hosts_gives_one_pairs_gain(
    job: Path, recordings: dict[str, Path], tmp_path: Path
) -> None:
    on, off = tmp_path / "on.jsonl.gz", tmp_path / "off.jsonl.gz"
    for path, hosts in ((on, ("node1", "node2")), (off, ("node3", "node4"))):
        done = run_sectormon("merge", *(str(recordings[h]) for h in hosts), "-o", str(path))
        assert done.returncode == 0, done.stderr
    pair = compare_paths(str(recordings["node3"]), str(recordings["node1"]), scopes=["total"])
    jobs = compare_paths(str(off), str(on))
    files = compare_paths(
        f"{recordings['node3']},{recordings['node4']}", f"{recordings['node1']},{recordings['node2']}"
    )
    gain = pair.scopes[0].ipc_improvement
    assert gain is not None and gain > 5  # the sector cache helps Scenario A
    for cmp in (jobs, files):
        scopes = {s.scope: s for s in cmp.scopes}
        total = scopes["total"].ipc_improvement
        assert total is not None and math.isclose(total, gain, rel_tol=0.01)
        # per node, paired in the order given (the hosts differ)
        assert {"node:1", "node:2"} <= set(scopes)
        assert math.isclose(scopes["node:1"].ipc_improvement or 0.0, gain, rel_tol=0.01)
        assert any(
            "nodes compared in the order given (node3 vs node1, node4 vs node2)" in w for w in cmp.warnings
        )


def _shifted(src: Path, dst: Path, wall_t0: float, *, cut_after: float | None = None) -> None:
    """A copy of a recording with a wall-clock start (as a live node's header has), optionally cut."""
    lines = gzip.decompress(src.read_bytes()).decode().splitlines()
    header = json.loads(lines[0])
    header["wall_t0"] = wall_t0
    kept = [json.dumps(header, separators=(",", ":"))]
    for line in lines[1:]:
        record = json.loads(line)
        if cut_after is not None and record.get("t", 0.0) > cut_after:
            break
        kept.append(line)
    dst.write_text("\n".join(kept) + "\n")


def _late_job(recordings: dict[str, Path], tmp_path: Path) -> Path:
    interval = json.loads(gzip.decompress(recordings["node1"].read_bytes()).splitlines()[0])["options"][
        "interval"
    ]
    late = 3 * interval
    paths = []
    for host, path in recordings.items():
        dst = tmp_path / f"{host}.jsonl"
        if host == "node4":
            _shifted(path, dst, 1000.0 + late)
        elif host == "node3":
            _shifted(path, dst, 1000.0, cut_after=4 * interval)
        else:
            _shifted(path, dst, 1000.0)
        paths.append(str(dst))
    job = tmp_path / "late.jsonl"
    done = run_sectormon("merge", *paths, "-o", str(job))
    assert done.returncode == 0, done.stderr
    assert "node node4 started" in done.stderr and "after the job" in done.stderr
    assert "node node3 ended" in done.stderr and "before the job" in done.stderr
    return job


def test_late_and_early_nodes_show_as_coverage_never_zeros(
    recordings: dict[str, Path], tmp_path: Path
) -> None:
    job = _late_job(recordings, tmp_path)
    frames = replay_json(job)[1:]
    first = frames[0]
    assert set(first["nodes"]) == {"node1", "node2", "node3"}  # node4 has not started
    # the job's counts are what the nodes there counted, not zero-filled for node4...
    assert first["total"]["counts"]["CPU_CYCLES"] == sum(
        first["nodes"][h]["counts"]["CPU_CYCLES"] for h in ("node1", "node2", "node3")
    )
    # ... and its missing time is coverage: three of four nodes counted CPU_CYCLES all interval
    assert math.isclose(first["total"]["coverage"]["CPU_CYCLES"], 0.75, rel_tol=1e-9)
    middle = [f for f in frames if len(f["nodes"]) == 4 and not f["final"]]
    assert middle and all(math.isclose(f["total"]["coverage"]["CPU_CYCLES"], 1.0) for f in middle)
    last = frames[-2]
    assert "node3" not in last["nodes"]  # ended early
    assert "node4" in last["nodes"]
    final = frames[-1]
    assert final["final"] and final["total"]["coverage"]["CPU_CYCLES"] < 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["merge", "a.jsonl", "-o", "j.jsonl"], "a.jsonl: no such file"),
    ],
)
def test_bad_merge_input_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    done = run_sectormon(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"sectormon: {message} (give one sectormon recording per node)"


def test_merge_refuses_what_is_not_one_job(recordings: dict[str, Path], job: Path, tmp_path: Path) -> None:
    one = run_sectormon("merge", str(recordings["node1"]), "-o", str(tmp_path / "j.jsonl"))
    assert one.returncode == 2 and "a job needs at least two node recordings" in one.stderr
    twice = run_sectormon(
        "merge", str(recordings["node1"]), str(recordings["node1"]), "-o", str(tmp_path / "j.jsonl")
    )
    assert twice.returncode == 2 and "host node1 appears in more than one recording" in twice.stderr
    nested = run_sectormon("merge", str(job), str(recordings["node1"]), "-o", str(tmp_path / "j.jsonl"))
    assert nested.returncode == 2 and "is a merged job already" in nested.stderr
    served = run_sectormon("replay", str(job), "--openmetrics", "0")
    assert served.returncode == 2 and "is a merged job; serve each node's own recording" in served.stderr


def test_nodes_with_different_intervals_are_refused(recordings: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl.gz"
    done = run_sectormon(
        "sim", "--json", "--count", "2", "--interval", "0.0005", "--record", str(other),
        env={**os.environ, "SECTORMON_HOST": "node9"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    mixed = run_sectormon("merge", str(recordings["node1"]), str(other), "-o", str(tmp_path / "j.jsonl"))
    assert mixed.returncode == 2 and "different --interval" in mixed.stderr
