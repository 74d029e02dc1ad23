"""TUI frame cost: time from posting a frame to the screen being composited, and memory over a
long replay.

Runs the real app headless at 160x50 on the deterministic A64FX fixture (48 cores + unbound,
4 CMGs), so nothing here depends on the host's counters.

1. Latency: frames posted at 10 frames/s; for each, the time from ``post_message`` to the frame
   being drawn (all messages handled, layout done, compositor update written to the headless
   driver). Reported as p50 / p99 / max, with the baseline (delta) view as a second case and, as a
   peer measured in the same run, the cost of the same cycle for a single Static text update.
   Target: p99 <= 30 ms.
2. Memory: a 10-minute replay at 20x speed (6000 frames of 0.1 s, delivered at 200 frames/s from a
   pipeline thread); RSS at start and end, frames drawn and frames dropped as stale.

Usage: ``python benchmarks/bench_ui.py [--frames N] [--long N] [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from textual.app import App, ComposeResult
from textual.widgets import Static

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ui"))

from fake_controller import FakeSession  # noqa: E402
from frames_fixture import a64fx_frames, a64fx_header  # noqa: E402

from sectormon.ui.app import make_app  # noqa: E402
from sectormon.ui.messages import FrameArrived  # noqa: E402

SIZE = (160, 50)
RATE = 10.0
TARGET_P99_MS = 30.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def settle(app: App[Any], pilot: Any) -> None:
    """Wait until every pending message is handled, then composite and write the screen."""
    await pilot._wait_for_screen()
    app.screen._on_timer_update()


async def measure_frames(frames: int, *, baseline: bool) -> list[float]:
    session = FakeSession(a64fx_header(), a64fx_frames(40, sector_from=20))
    app = make_app(session)
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        session.emit(3)
        if baseline:
            await pilot.press("b")
        session.emit(1)
        await settle(app, pilot)
        period = 1.0 / RATE
        for seq in range(frames):
            frame = session.next_frame()
            start = time.perf_counter()
            app.post_message(FrameArrived(frame, 10_000 + seq))
            await settle(app, pilot)
            elapsed = time.perf_counter() - start
            times.append(elapsed * 1000.0)
            await asyncio.sleep(max(0.0, period - elapsed))
    return times


class PeerApp(App[None]):
    """The peer: one Static of the same size updated with new text per frame."""

    def compose(self) -> ComposeResult:
        yield Static("", id="text")


async def measure_peer(frames: int) -> list[float]:
    app = PeerApp()
    times: list[float] = []
    lines = [" ".join(f"{(i * 7 + j) % 1000:6d}" for j in range(22)) for i in range(48)]
    async with app.run_test(size=SIZE) as pilot:
        static = app.query_one(Static)
        for seq in range(frames):
            start = time.perf_counter()
            static.update("\n".join(f"{seq:5d} {line}" for line in lines))
            await settle(app, pilot)
            times.append((time.perf_counter() - start) * 1000.0)
            await asyncio.sleep(max(0.0, 1.0 / RATE - times[-1] / 1000.0))
    return times


async def long_replay(frames: int, rate: float) -> dict[str, float]:
    session = FakeSession(a64fx_header("replay"), a64fx_frames(40, sector_from=20))
    app = make_app(session)
    process = psutil.Process()
    async with app.run_test(size=SIZE) as pilot:
        session.emit(2)
        await settle(app, pilot)
        rss_start = process.memory_info().rss
        done = threading.Event()

        def pipeline() -> None:
            period = 1.0 / rate
            next_t = time.perf_counter()
            for _ in range(frames):
                session.emit(1)
                next_t += period
                time.sleep(max(0.0, next_t - time.perf_counter()))
            done.set()

        thread = threading.Thread(target=pipeline, name="bench-pipeline")
        started = time.perf_counter()
        thread.start()
        rss_mid = 0
        while not done.is_set():
            await asyncio.sleep(0.05)
            if not rss_mid and time.perf_counter() - started > (frames / rate) / 2:
                rss_mid = process.memory_info().rss
        thread.join()
        await settle(app, pilot)
        wall = time.perf_counter() - started
        rss_end = process.memory_info().rss
        return {
            "frames": frames,
            "wall_s": wall,
            "drawn": app.frames_received,
            "dropped": app.frames_skipped,
            "rss_start_mb": rss_start / 2**20,
            "rss_mid_mb": rss_mid / 2**20,
            "rss_end_mb": rss_end / 2**20,
        }


def report(name: str, times: list[float]) -> tuple[float, float]:
    p50, p99 = statistics.median(times), percentile(times, 0.99)
    print(f"{name:<34} n={len(times):4d}  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  max {max(times):6.2f} ms")
    return p50, p99


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200, help="frames per latency case (default 200)")
    parser.add_argument("--long", type=int, default=6000, help="frames of the long replay (default 6000)")
    parser.add_argument("--long-rate", type=float, default=200.0, help="frames/s of the long replay (default 200)")
    parser.add_argument("--quick", action="store_true", help="50 frames per case, 600-frame replay")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.long = 50, 600
    print(f"sectormon TUI benchmark: {SIZE[0]}x{SIZE[1]}, 48 cores + unbound, 4 CMGs, {RATE:g} frames/s")
    live = asyncio.run(measure_frames(args.frames, baseline=False))
    delta = asyncio.run(measure_frames(args.frames, baseline=True))
    peer = asyncio.run(measure_peer(args.frames))
    _, live_p99 = report("dashboard, values", live)
    _, delta_p99 = report("dashboard, baseline deltas", delta)
    peer_p50, _ = report("peer: one Static text update", peer)
    print(f"ratio dashboard/peer (p50): {statistics.median(live) / peer_p50:.1f}x")
    worst = max(live_p99, delta_p99)
    verdict = "OK" if worst <= TARGET_P99_MS else "OVER TARGET"
    print(f"target p99 <= {TARGET_P99_MS:g} ms: {verdict} (worst p99 {worst:.2f} ms)")
    result = asyncio.run(long_replay(args.long, args.long_rate))
    print(
        f"long replay: {result['frames']:.0f} frames at {args.long_rate:g}/s in {result['wall_s']:.1f} s; "
        f"drawn {result['drawn']:.0f}, dropped as stale {result['dropped']:.0f}"
    )
    growth = result["rss_end_mb"] - result["rss_start_mb"]
    print(
        f"RSS start {result['rss_start_mb']:.1f} MB, middle {result['rss_mid_mb']:.1f} MB, "
        f"end {result['rss_end_mb']:.1f} MB (growth {growth:+.1f} MB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
