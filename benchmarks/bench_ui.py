"""TUI frame cost: time from posting a frame to the screen being composited, and memory over a
long replay.

Runs the real app headless at 160x50 on the deterministic A64FX fixture (48 cores + unbound,
4 CMGs), so nothing here depends on the host's counters.

1. Latency: frames posted at 10 frames/s; for each, the time from ``post_message`` until the
   composited screen update is written to the (headless) driver by Textual's own refresh timer
   (so the wall time includes up to one refresh period, 1/60 s, of waiting). Wall and CPU time,
   p50 / p99 / max, for the values view and the baseline (delta) view; as a peer measured in the
   same run, the same cycle for one Static text update of the same size. Target: p99 <= 30 ms.
2. Memory: a 10-minute replay at 20x speed (6000 frames of 0.1 s, delivered at 200 frames/s from a
   pipeline thread); RSS at start and end, frames drawn and frames dropped as stale.

Usage: ``python benchmarks/bench_ui.py [--frames N] [--long N] [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from textual.app import App, ComposeResult
from textual.widgets import Static

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sectormon.ui.app import make_app
from sectormon.ui.messages import FrameArrived
from tests.ui.fake_controller import FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header

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


def hook_display(app: Any) -> asyncio.Event:
    """An event set each time the app writes a composited screen update to its driver."""
    shown = asyncio.Event()
    display = app._display

    def display_and_signal(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        shown.set()

    app._display = display_and_signal
    return shown


async def timed_cycle(shown: asyncio.Event, post: Any) -> tuple[float, float]:
    """Wall and CPU ms from ``post()`` to the next screen write (Textual's own refresh timer)."""
    shown.clear()
    start, start_cpu = time.perf_counter(), time.process_time()
    post()
    await shown.wait()
    return (time.perf_counter() - start) * 1000.0, (time.process_time() - start_cpu) * 1000.0


async def measure_frames(frames: int, *, baseline: bool) -> tuple[list[float], list[float]]:
    """Per frame: wall and CPU ms from post_message to the composited screen being written."""
    session = FakeSession(a64fx_header(), a64fx_frames(40, sector_from=20))
    app = make_app(session)
    wall: list[float] = []
    cpu: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        session.emit(3)
        if baseline:
            await pilot.press("b")
        session.emit(1)
        await settle(app, pilot)
        await asyncio.sleep(0.2)
        shown = hook_display(app)
        for seq in range(frames):
            frame = session.next_frame()
            message = FrameArrived(frame, 10_000 + seq)
            elapsed, used = await timed_cycle(shown, lambda m=message: app.post_message(m))
            wall.append(elapsed)
            cpu.append(used)
            await asyncio.sleep(max(0.0, 1.0 / RATE - elapsed / 1000.0))
    return wall, cpu


class PeerApp(App[None]):
    """The peer: one Static of the same size updated with new text per frame."""

    def compose(self) -> ComposeResult:
        yield Static("", id="text")


async def measure_peer(frames: int) -> tuple[list[float], list[float]]:
    app = PeerApp()
    wall: list[float] = []
    cpu: list[float] = []
    lines = [" ".join(f"{(i * 7 + j) % 1000:6d}" for j in range(22)) for i in range(48)]
    async with app.run_test(size=SIZE) as pilot:
        static = app.query_one(Static)
        await settle(app, pilot)
        shown = hook_display(app)
        for seq in range(frames):
            text = "\n".join(f"{seq:5d} {line}" for line in lines)
            elapsed, used = await timed_cycle(shown, lambda t=text: static.update(t))
            wall.append(elapsed)
            cpu.append(used)
            await asyncio.sleep(max(0.0, 1.0 / RATE - elapsed / 1000.0))
    return wall, cpu


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


def report(name: str, times: tuple[list[float], list[float]]) -> tuple[float, float, float]:
    wall, cpu = times
    p50, p99 = statistics.median(wall), percentile(wall, 0.99)
    cpu50, cpu99 = statistics.median(cpu), percentile(cpu, 0.99)
    print(
        f"{name:<30} n={len(wall):4d}  wall p50 {p50:6.2f} p99 {p99:6.2f} max {max(wall):6.2f} ms"
        f"   cpu p50 {cpu50:6.2f} p99 {cpu99:6.2f} ms"
    )
    return p50, p99, cpu99


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200, help="frames per latency case (default 200)")
    parser.add_argument("--long", type=int, default=6000, help="frames of the long replay (default 6000)")
    parser.add_argument("--long-rate", type=float, default=200.0, help="frames/s of the long replay")
    parser.add_argument("--quick", action="store_true", help="50 frames per case, 600-frame replay")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.long = 50, 600
    print(f"sectormon TUI benchmark: {SIZE[0]}x{SIZE[1]}, 48 cores + unbound, 4 CMGs, {RATE:g} frames/s")
    live = asyncio.run(measure_frames(args.frames, baseline=False))
    delta = asyncio.run(measure_frames(args.frames, baseline=True))
    peer = asyncio.run(measure_peer(args.frames))
    live_p50, live_p99, live_cpu99 = report("dashboard, values", live)
    _, delta_p99, delta_cpu99 = report("dashboard, baseline deltas", delta)
    peer_p50, _, _ = report("peer: one Static text update", peer)
    print(f"ratio dashboard/peer (wall p50): {live_p50 / peer_p50:.1f}x")
    worst = max(live_p99, delta_p99)
    verdict = "OK" if worst <= TARGET_P99_MS else "OVER TARGET"
    print(
        f"target p99 <= {TARGET_P99_MS:g} ms: {verdict} (worst wall p99 {worst:.2f} ms, "
        f"worst cpu p99 {max(live_cpu99, delta_cpu99):.2f} ms; load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} CPUs: wall times include waiting for other processes)"
    )
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
