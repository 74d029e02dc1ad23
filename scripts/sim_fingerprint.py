"""Fingerprints of what the simulator produces end to end, to prove a change left every number alone.

For each shipped recording: ``sectormon replay --json``. For each kernel (and a few variants): the
simulated numbers of a fresh ``sectormon sim --summary`` (counts, metrics, per thread and CMG). For
Scenario A with the sector cache on and off: a fresh recording made with the shipped recordings'
options, its readings without the wall-clock fields. Each output is hashed; ``--save FILE`` stores
the hashes, ``--check FILE`` compares and exits 1 on a difference.

    .venv/bin/python scripts/sim_fingerprint.py --save /tmp/before.json   # before the change
    .venv/bin/python scripts/sim_fingerprint.py --check /tmp/before.json  # after it
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SECTORMON = str(Path(sys.executable).with_name("sectormon"))

SUMMARIES: dict[str, list[str]] = {
    "scenario-a": ["--kernel", "scenario-a"],
    "scenario-a off": ["--kernel", "scenario-a", "--sector-cache", "off"],
    "scenario-a no-prefetch": ["--kernel", "scenario-a", "--no-prefetch", "--threads", "1"],
    "scenario-a L2": ["--kernel", "scenario-a", "--size", "reused=4M,passes=4", "--threads", "1"],
    "scenario-b": ["--kernel", "scenario-b"],
    "scenario-b off 4 threads": ["--kernel", "scenario-b", "--sector-cache", "off", "--threads", "4"],
    "random": ["--kernel", "random"],
}
# Fresh recordings with the options the shipped ones were made with (their headers say so).
RECORDINGS: dict[str, list[str]] = {
    "scenario-a-sectors-on": ["--size", "passes=6000"],
    "scenario-a-sectors-off": ["--size", "passes=6000", "--sector-cache", "off"],
}
WALL_CLOCK = ("overhead_s", "created", "host", "kernel", "machine", "python")
# What a summary simulated (its other keys describe the run and may gain fields).
SIMULATED = ("seconds", "cycles", "counts", "metrics", "threads", "cmgs")


def _run(args: list[str]) -> str:
    proc = subprocess.run([SECTORMON, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"sectormon {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _recording_without_wall_clock(path: Path) -> str:
    lines = []
    with gzip.open(path, "rt") as handle:
        for line in handle:
            record = json.loads(line)
            for key in WALL_CLOCK:
                record.pop(key, None)
            lines.append(json.dumps(record, sort_keys=True))
    return "\n".join(lines)


def fingerprints() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted((REPO / "recordings").glob("*.jsonl.gz")):
        out[f"replay {path.name}"] = _digest(_run(["replay", str(path), "--json"]))
    for name, options in SUMMARIES.items():
        summary = json.loads(_run(["sim", *options, "--summary"]))
        out[f"sim --summary {name}"] = _digest(json.dumps({k: summary[k] for k in SIMULATED}))
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in RECORDINGS.items():
            path = Path(tmp) / f"{name}.jsonl.gz"
            _run(["sim", *options, "--json", "--record", str(path), "-o", str(Path(tmp) / "frames")])
            out[f"sim --record {name}"] = _digest(_recording_without_wall_clock(path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", metavar="FILE", help="store the fingerprints in FILE")
    what.add_argument("--check", metavar="FILE", help="compare with the fingerprints stored in FILE")
    args = parser.parse_args()
    now = fingerprints()
    if args.save:
        Path(args.save).write_text(json.dumps(now, indent=1) + "\n")
        print(f"saved {len(now)} fingerprints to {args.save}")
        return
    before = json.loads(Path(args.check).read_text())
    for name in sorted(set(before) | set(now)):
        same = before.get(name) == now.get(name)
        print(f"{'same     ' if same else 'DIFFERENT'} {name}")
    sys.exit(0 if before == now else 1)


if __name__ == "__main__":
    main()
