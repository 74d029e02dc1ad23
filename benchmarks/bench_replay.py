"""Replay speed: parse a synthetic 48-core recording, next to ``jq -c .`` on the same file.

Generates a recording of N minutes (default 60) of an A64FX-like session: 48 cores, 50 slices/s
(20 ms timeslices rotating the a64fx profile's groups), 48 readings per slice with their group's
per-PE events (6-8 each). It is written with :class:`RecordingWriter` into a temporary directory
(never the repo) and then measured in the same run:

- write: RecordingWriter lines/s (the recorder's cost on the sampler thread);
- parse: :func:`open_recording` iterated to :class:`Slice` and :class:`Mark` (JSON + validation),
  what replay reads, next to ``jq -c . FILE > /dev/null`` on the same file (the ratio is the
  target, >= 1x jq) and to bare ``json.loads`` per line (the floor);
- replay: the full replay to frames through today's engine (target <= 30 s for the hour), in one
  process, with one reader process (:mod:`sectormon.session.replay_worker`: JSON, checks and
  row sums in a second process beside the frames), which a large replay uses on 2 CPUs, and with
  the reader processes sectormon picks on 3+ CPUs (they share the file, span by span);
- final frame only: what ``compare`` does per side (the frames before the last are not built), in
  one process, with one reader process, and with as many as sectormon picks (every CPU reads).

jq also times the replay: the same-run ratio of each replay to ``jq -c .`` stays comparable when
the machine's speed changes (a shared VM's varies by 1.5x within an hour).

``--repeat N`` times jq, the parses and each replay mode N times, alternating, and reports the best with every
run: the best is what the code costs (timeit's reasoning: slower runs are other processes'
doing, not Python's variance), the list shows how much a shared machine took away.

Usage: ``python benchmarks/bench_replay.py [--minutes N] [--gzip] [--skip-jq] [--skip-parse] [--skip-replay]
[--repeat N]``; ``SECTORMON_ROWS=python`` times the Python row check where the compiled one is
built (the ``rows`` line says which ran).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sectormon.data.readings import Mark, Row, Slice
from sectormon.io import RecordingWriter, open_recording
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile

CORES = 48
RATE = 50  # slices per second
TIMESLICE = 1.0 / RATE
VARIANTS = 16  # distinct reading sets per group, cycled (keeps generation cheap, values varied)


def build_header(profile_dict: dict[str, Any]) -> dict[str, Any]:
    return {
        "sectormon": "bench",
        "created": "2024-01-01T00:00:00+00:00",
        "host": "bench",
        "kernel": "bench",
        "cpu": "A64FX (synthetic)",
        "topology": {
            "cpus": list(range(CORES)),
            "cmgs": {str(c): list(range(c * 12, c * 12 + 12)) for c in range(4)},
        },
        "profile": profile_dict,
        "source": {"kind": "sim"},
        "target": {"mode": "cpus"},
        "sector_config": {},
        "options": {"interval": 1.0, "timeslice": TIMESLICE, "recent_seconds": 10.0},
        "unavailable": {},
    }


def reading_pool(profile: Any, rng: random.Random) -> dict[str, list[tuple[Row, ...]]]:
    pool: dict[str, list[tuple[Row, ...]]] = {}
    for group in profile.groups:
        events = tuple(profile.pe_events(group))
        pool[group.name] = [
            tuple(_row(cpu, group.name, events, rng) for cpu in range(CORES)) for _ in range(VARIANTS)
        ]
    return pool


def _row(cpu: int, group: str, events: tuple[str, ...], rng: random.Random) -> Row:
    """One CPU's reading: a slice's ns enabled, running a little less (never more, as the kernel
    keeps it), and its counts."""
    te = int(TIMESLICE * 1e9) + rng.randrange(0, 5000)
    tr = te - rng.randrange(0, 5000)
    return Row(
        f"cpu:{cpu}",
        cpu,
        cpu // 12,
        group,
        te,
        tr,
        events,
        tuple(rng.randrange(10_000, 44_000_000) for _ in events),
    )


def generate(path: Path, minutes: float) -> tuple[int, float]:
    profile = load_profile("a64fx")
    rng = random.Random(42)
    pool = reading_pool(profile, rng)
    names = [g.name for g in profile.groups]
    n = int(minutes * 60 * RATE)
    start = time.perf_counter()
    with RecordingWriter(path, build_header(profile_to_dict(profile))) as w:
        for i in range(n):
            group = names[i % len(names)]
            readings = pool[group][(i // len(names)) % VARIANTS]
            w.write_slice(
                Slice(
                    t=round((i + 1) * TIMESLICE, 6),
                    index=i,
                    duration=TIMESLICE,
                    group=group,
                    rows=readings,
                    overhead_s=i * 2e-6,
                )
            )
        w.write_mark(Mark(t=round(n * TIMESLICE, 6), kind="end"))
        if w.failed:
            sys.exit(f"bench: {w.failed}")
    return n + 2, time.perf_counter() - start


def parse_only(path: Path) -> tuple[int, int, float]:
    start = time.perf_counter()
    slices = readings = 0
    with open_recording(path) as stream:
        for item in stream:
            if isinstance(item, Slice):
                slices += 1
                readings += len(item.rows)
    return slices, readings, time.perf_counter() - start


def json_only(path: Path) -> float:
    """Plain json.loads per line (the floor under parse_only), plain files only."""
    start = time.perf_counter()
    loads = json.loads
    with path.open("rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - start


def jq(path: Path) -> float | None:
    exe = shutil.which("jq")
    if exe is None:
        return None
    start = time.perf_counter()
    if path.suffix == ".gz":
        cmd = f"gzip -dc '{path}' | '{exe}' -c . > /dev/null"
        subprocess.run(cmd, shell=True, check=True)
    else:
        with open("/dev/null", "wb") as devnull:
            subprocess.run([exe, "-c", ".", str(path)], stdout=devnull, check=True)
    return time.perf_counter() - start


def alternated(
    modes: list[tuple[str, str]], measure: Callable[[str], float], repeat: int
) -> dict[str, list[float]]:
    """Each mode's times over ``repeat`` rounds; the modes take turns within a round, so every
    mode meets the machine's slow and fast phases alike."""
    runs: dict[str, list[float]] = {label: [] for label, _ in modes}
    for _ in range(repeat):
        for label, worker in modes:
            runs[label].append(measure(worker))
    return runs


def _of(runs: list[float]) -> str:
    """`` best of 3 (21.6, 27.4, 24.0 s)`` after a best time; nothing for a single run."""
    if len(runs) < 2:
        return ""
    return f" best of {len(runs)} ({', '.join(f'{t:.3g}' for t in runs)} s)"


def interpreter() -> str:
    """The interpreter and how it was built, since that alone moves every figure here: on this
    VM, pyenv's CPython 3.11.7 (the interpreter in libpython.so, no PGO) replayed 8-17 % slower
    than Debian's python3.11 (linked into the executable, PGO/LTO) in alternating runs
    (docs/perf-tuning.md, ninth pass)."""
    import platform
    import sysconfig

    config = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    parts = [f"{platform.python_implementation()} {platform.python_version()}"]
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            in_library = "libpython" in maps.read()
        parts.append(
            "interpreter in libpython.so" if in_library else "interpreter linked into the executable"
        )
    except OSError:
        pass
    parts += [
        flag
        for option, flag in (("--enable-optimizations", "PGO"), ("--with-lto", "LTO"))
        if option in config
    ]
    return ", ".join(parts)


def row_check() -> str:
    """Which check turns the readings into rows in this process and its reader processes
    (``SECTORMON_ROWS`` chooses, as :mod:`sectormon.io.native_rows` says)."""
    from sectormon.io import jsonl, native_rows

    return f"{native_rows.DESCRIPTIONS[jsonl.ROWS_PATH]} ({native_rows.ENV}={jsonl.ROWS_PATH})"


def _switch(worker: str) -> None:
    """``"0"``: one process; ``"N"``: N reader processes; ``""``: what sectormon picks here."""
    from sectormon.session import replay_worker

    if worker:
        os.environ[replay_worker.ENV_SWITCH] = worker
    else:
        os.environ.pop(replay_worker.ENV_SWITCH, None)


def replay(path: Path, worker: str) -> tuple[int, float]:
    """Full replay to frames (``worker`` as in :func:`_switch`)."""
    from sectormon.session.replay import replay_frames

    _switch(worker)
    start = time.perf_counter()
    frames = 0
    with open_recording(path) as stream:
        for _ in replay_frames(stream):
            frames += 1
    return frames, time.perf_counter() - start


def final_only(path: Path, worker: str) -> float:
    """What ``compare`` does per side: replay to the final frame, the frames before it unbuilt."""
    from sectormon.session.replay import final_frame

    _switch(worker)
    start = time.perf_counter()
    final_frame(path)
    return time.perf_counter() - start


def picked(path: Path, *, frames: bool) -> int:
    """How many reader processes sectormon picks for this file on this machine."""
    from sectormon.session import replay_worker

    _switch("")
    with open_recording(path) as stream:
        return replay_worker.readers(stream, frames=frames)


def reader_modes(path: Path, cpus: int, *, frames: bool) -> list[tuple[str, str]]:
    """(label, switch) of each mode to time: one process, one reader process, and the readers
    sectormon picks here when that is more than one."""
    modes = [("one process", "0")] + ([("reader process", "1")] if cpus > 1 else [])
    auto = picked(path, frames=frames)
    if auto > 1:
        modes.append((f"{auto} reader processes", str(auto)))
    return modes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="recording length (default 60)")
    parser.add_argument("--gzip", action="store_true", help="write .jsonl.gz instead of plain .jsonl")
    parser.add_argument("--skip-jq", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--skip-parse", action="store_true", help="only write and replay (repeat runs)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time jq, the parses and every replay mode N times, alternating, and report the best of N with "
        "every run (on a shared machine, the runs other tenants slowed show as such)",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    scale = 60.0 / args.minutes
    with tempfile.TemporaryDirectory(prefix="sectormon-bench-") as tmp:
        path = Path(tmp) / ("bench.jsonl.gz" if args.gzip else "bench.jsonl")
        lines, t_write = generate(path, args.minutes)
        size = path.stat().st_size
        shape = f"{args.minutes:g} min, {CORES} cores, {RATE} slices/s"
        print(f"recording: {shape}: {lines} lines, {size / 1e6:.1f} MB")
        print(f"python : {interpreter()}")
        print(f"rows   : {row_check()}")
        print(f"write  : {t_write:7.2f} s  {lines / t_write:9.0f} lines/s  (hour: {t_write * scale:.1f} s)")
        readings = (lines - 2) * CORES
        t_jq: float | None = None
        if not args.skip_parse:
            parse_runs: list[float] = []
            json_runs: list[float] = []
            for _ in range(args.repeat):  # alternated, as the replay modes
                _slices, readings, t = parse_only(path)
                parse_runs.append(t)
                if not args.gzip:
                    json_runs.append(json_only(path))
            t_parse = min(parse_runs)
            print(
                f"parse  : {t_parse:7.2f} s{_of(parse_runs)}  {lines / t_parse:9.0f} lines/s  "
                f"{readings / t_parse / 1e6:.2f} M readings/s  (hour: {t_parse * scale:.1f} s)"
            )
            if json_runs:
                t_json = min(json_runs)
                floor = f"{t_json:7.2f} s{_of(json_runs)}  {lines / t_json:9.0f} lines/s"
                print(f"json   : {floor}  (json.loads alone, the floor)")
        if not args.skip_jq:
            jq_runs = [t for t in (jq(path) for _ in range(args.repeat)) if t is not None]
            t_jq = min(jq_runs) if jq_runs else None
            if t_jq is None:
                print("jq     : not installed")
            else:
                print(f"jq -c .: {t_jq:7.2f} s{_of(jq_runs)}  {lines / t_jq:9.0f} lines/s")
                if not args.skip_parse:
                    print(f"ratio  : parse is {t_jq / t_parse:.2f}x jq's speed (target >= 1x)")
        if not args.skip_replay:
            cpus = len(os.sched_getaffinity(0))
            if cpus == 1:
                print("reader processes: not run, this machine has one CPU")
            modes = reader_modes(path, cpus, frames=True)
            frame_counts: list[int] = []

            def replay_time(worker: str) -> float:
                frames, t_replay = replay(path, worker)
                frame_counts.append(frames)
                return t_replay

            runs = alternated(modes, replay_time, args.repeat)
            frames = frame_counts[-1]
            times = [min(runs[label]) for label, _ in modes]
            for (label, _), t_replay in zip(modes, times, strict=True):
                print(
                    f"replay ({label}): {t_replay:7.2f} s{_of(runs[label])}  {frames} frames  "
                    f"{readings / t_replay / 1e6:.2f} M readings/s  (hour: {t_replay * scale:.1f} s, "
                    "target <= 30 s)"
                )
            for (label, _), t_replay in zip(modes[1:], times[1:], strict=True):
                print(f"ratio  : replay with {label} is {times[0] / t_replay:.2f}x one process's speed")
            if t_jq is not None:
                # jq only parses and prints; the replay also checks, sums and builds every frame.
                # The same-run ratio is what stays comparable when the machine's speed changes.
                for (label, _), t_replay in zip(modes, times, strict=True):
                    print(f"ratio  : replay to frames ({label}) is {t_jq / t_replay:.2f}x jq -c .'s speed")
            # compare builds only the final frame: this process is then idle, and every CPU can read.
            finals = reader_modes(path, cpus, frames=False)
            final_runs = alternated(finals, lambda worker: final_only(path, worker), args.repeat)
            final_times = [min(final_runs[label]) for label, _ in finals]
            for (label, _), t_final in zip(finals, final_times, strict=True):
                print(
                    f"final frame only ({label}): {t_final:7.2f} s{_of(final_runs[label])}  "
                    f"(hour: {t_final * scale:.1f} s)"
                )
            for (label, _), t_final in zip(finals[1:], final_times[1:], strict=True):
                speed = final_times[0] / t_final
                print(f"ratio  : final frame with {label} is {speed:.2f}x one process's speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
