"""Processes from the source through the sampler's slices into the frames' ``procs`` scope, and
thread coverage against the kernel's CPU time, on the deterministic fake source."""

from __future__ import annotations

import dataclasses
import json
import marshal
from collections.abc import Mapping, Sequence

import pytest

from sectormon.data.frames import Frame
from sectormon.data.readings import ProcessInfo, Slice, Unit
from sectormon.host.cpu_time import TargetCpu
from sectormon.io.jsonl import encode_slice, slice_from_record
from sectormon.metrics.batch import RowAggregator, unwire, wire
from sectormon.metrics.engine import MetricsEngine
from sectormon.perf.errors import TooManyOpenFiles
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from sectormon.session.frame_builder import FrameBuilder
from sectormon.session.frame_clock import FrameClock
from sectormon.sources.base import UnitsUpdate
from tests.rotation.fake_source import FakeGroup, FakeSource

RATE = 1000.0  # events per second of a thread's run time


def _profile() -> Profile:
    events = {"A": EventDef("A", "ra"), "B": EventDef("B", "rb")}
    return Profile("t", "test", 8, events, (GroupDef("G1", ("A",)), GroupDef("G2", ("B",))), ())


class _ProcessSource(FakeSource):
    """Threads of two processes (ranks 0 and 1); the kernel's CPU time is every thread's whole
    life, counted or not, as ``/proc/PID/stat`` would say."""

    def __init__(
        self,
        lifetimes: Mapping[str, tuple[Unit, float, float]],
        processes: Sequence[ProcessInfo],
        *,
        stop_at: float,
        fd_limit: int | None = None,
    ) -> None:
        super().__init__(lifetimes, {"A": RATE, "B": RATE}, stop_at=stop_at)
        self._processes = {p.pid: p for p in processes}
        self._announced: set[int] = set()
        self.fd_limit = fd_limit

    def poll_units(self) -> UnitsUpdate:
        update = super().poll_units()
        new = [self._processes[u.process] for u in update.alive if u.process not in self._announced]
        self._announced.update(p.pid for p in new)
        return UnitsUpdate(update.alive, update.ended, update.warnings, tuple(dict.fromkeys(new)))

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> FakeGroup:
        if self.fd_limit is not None and sum(not g.closed for g in self.groups) >= self.fd_limit:
            raise TooManyOpenFiles(f"cannot open {events[0].name} on {unit.key} (EMFILE): out of fds")
        return super().open_group(unit, events)

    def target_cpu(self) -> TargetCpu | None:
        return TargetCpu(sum(self.alive_span(unit, 0.0, self.t) for unit, _, _ in self.lifetimes.values()))


def _thread(tid: int, pid: int) -> Unit:
    return Unit("thread", tid, core=tid % 4, cmg=0, process=pid)


def _run(source: _ProcessSource) -> tuple[list[Slice], list[Frame]]:
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {})
    slices: list[Slice] = []
    sampler = Sampler(source, plan, timeslice=0.01, on_slice=slices.append, on_warning=lambda _m: None)
    source.start()
    sampler.run()
    engine = MetricsEngine(profile)
    frames = []
    for s in slices:
        engine.add_slice(s)
        if round(s.t * 100) % 20 == 0:
            frames.append(engine.frame(s.t))
    frames.append(engine.final_frame(slices[-1].t))
    return slices, frames


RANKS = (ProcessInfo(100, "app", parent=1, rank=0), ProcessInfo(200, "app", parent=1, rank=1))


def _two_ranks() -> _ProcessSource:
    units = {
        "thread:100": (_thread(100, 100), 0.0, 1.0),
        "thread:101": (_thread(101, 100), 0.0, 1.0),
        "thread:200": (_thread(200, 200), 0.0, 1.0),
    }
    return _ProcessSource({k: v for k, v in units.items()}, RANKS, stop_at=0.6)


def test_slices_carry_processes_once_and_each_threads_process() -> None:
    slices, _ = _run(_two_ranks())
    assert slices[0].processes == RANKS
    assert dict(slices[0].unit_processes) == {"thread:100": 100, "thread:101": 100, "thread:200": 200}
    assert all(not s.processes and not s.unit_processes for s in slices[1:])
    readings = [s.target_cpu_s for s in slices if s.target_cpu_s is not None]
    assert slices[0].target_cpu_s is not None and slices[-1].target_cpu_s is not None
    assert readings == sorted(readings) and len(readings) < len(slices) / 5  # read every 0.25 s


def test_procs_scope_sums_its_threads_and_names_pid_command_rank() -> None:
    _, frames = _run(_two_ranks())
    final = frames[-1]
    assert set(final.procs) == {"100", "200"}
    for pid in ("100", "200"):
        members = [tid for tid in final.threads if tid.startswith(pid[0])]
        for event in ("A", "B"):
            assert final.procs[pid].counts[event] == pytest.approx(
                sum(final.threads[t].counts[event] for t in members)
            )
    assert final.procs["100"].counts["A"] == pytest.approx(2 * final.procs["200"].counts["A"])
    assert final.processes["200"].rank == 1 and final.processes["100"].command == "app"
    data = json.loads(json.dumps(final.to_json()))
    assert data["procs"]["200"]["rank"] == 1
    assert data["procs"]["200"]["pid"] == 200
    assert data["procs"]["100"]["counts"]["A"] == pytest.approx(final.procs["100"].counts["A"])


def test_a_fully_counted_target_has_thread_coverage_one() -> None:
    _, frames = _run(_two_ranks())
    assert frames[-1].thread_coverage == pytest.approx(1.0, abs=1e-9)
    assert frames[-1].run.thread_time == frames[-1].thread_time
    interval = [f.thread_coverage for f in frames[:-1] if f.thread_coverage is not None]
    assert interval and all(c == pytest.approx(1.0, abs=1e-9) for c in interval)
    assert json.loads(json.dumps(frames[-1].to_json()))["thread_coverage"] == pytest.approx(1.0)


def test_threads_left_uncounted_for_want_of_fds_lower_thread_coverage_to_the_counted_share() -> None:
    """Two of four equally busy threads find no fd left: the frames say half the work was counted."""
    units = {
        f"thread:{tid}": (_thread(tid, 100), 0.0 if tid < 102 else 0.015, 1.0) for tid in range(100, 104)
    }
    source = _ProcessSource(units, RANKS[:1], stop_at=0.6, fd_limit=4)  # two threads, two groups each
    slices, frames = _run(source)
    counted = {key for s in slices for key, *_ in s.rows}
    assert counted == {"thread:100", "thread:101"}
    true_share = (2 * 0.6) / (2 * 0.6 + 2 * (0.6 - 0.015))
    assert frames[-1].thread_coverage == pytest.approx(true_share, rel=0.05)


def test_process_fields_survive_the_recording() -> None:
    slices, _ = _run(_two_ranks())
    for s in (slices[0], slices[-1]):
        assert slice_from_record(json.loads(encode_slice(s))) == s
    plain = Slice(1.0, 3, 0.01, "G1", ())
    assert set(json.loads(encode_slice(plain))) >= {"readings"}
    assert not {"processes", "unit_processes", "target_cpu_s"} & set(json.loads(encode_slice(plain)))


def test_frames_without_processes_keep_their_json_shape() -> None:
    units = {"thread:7": (Unit("thread", 7, core=0, cmg=0), 0.0, 1.0)}
    source = FakeSource(units, {"A": RATE, "B": RATE}, stop_at=0.3)
    profile = _profile()
    plan = plan_rotation(profile, select_groups(profile, None), {})
    engine = MetricsEngine(profile)
    Sampler(source, plan, timeslice=0.01, on_slice=engine.add_slice).run()
    data = engine.final_frame(0.3).to_json()
    assert "procs" not in data and "thread_coverage" not in data and "thread_coverage" not in data["run"]


def _frames_json(frames: Sequence[Frame]) -> list[str]:
    return [json.dumps(f.to_json(), sort_keys=True) for f in frames]


@pytest.mark.parametrize("restart_after", [None, 1])
def test_a_replays_reader_processes_give_the_same_procs_and_thread_coverage(
    restart_after: int | None,
) -> None:
    """The batch path (a reader process sums the rows) gives the frames of add_slice, bit for bit;
    a reader that takes over mid-run leaves out the one span it saw only part of."""
    slices, _ = _run(_two_ranks())
    direct = FrameBuilder(MetricsEngine(_profile()), 0.1)
    by_rows = [f for s in slices for f in direct.feed(s)] + [direct.finish()]
    clock = FrameClock(0.1)
    rows = RowAggregator()
    batched = FrameBuilder(MetricsEngine(_profile()), 0.1)
    by_batches: list[Frame] = []
    frames = 0
    for s in slices:
        rows.add(s)
        if clock.due(s.t):
            batch = unwire(marshal.loads(marshal.dumps(wire(rows.take(frame_due=True)))))
            by_batches += batched.feed_batch(batch)
            frames += 1
            if frames == restart_after:
                rows = RowAggregator()
    if rows.pending:
        by_batches += batched.feed_batch(rows.take(frame_due=False))
    by_batches.append(batched.finish())
    assert len(by_batches) == len(by_rows)
    if restart_after is None:
        assert _frames_json(by_batches) == _frames_json(by_rows)
    else:
        assert [f.procs for f in by_batches] == [f.procs for f in by_rows]
        assert by_batches[-1].thread_coverage == pytest.approx(1.0, abs=1e-9)
        run_rows, run_batches = by_rows[-1].thread_time, by_batches[-1].thread_time
        assert run_rows is not None and run_batches is not None
        assert run_batches.kernel_s < run_rows.kernel_s  # the span the new reader joined mid-way


def test_the_ended_processes_system_time_reaches_the_batch_path_too() -> None:
    """A kernel figure with an exit teardown in it (a tenth of it, all ended system time): the
    reader processes' path gives the frames of add_slice, teardown and all."""
    slices, _ = _run(_two_ranks())
    torn = [
        dataclasses.replace(s, target_cpu_s=s.target_cpu_s * 1.1, target_ended_system_s=s.target_cpu_s * 0.2)
        if s.target_cpu_s is not None
        else s
        for s in slices
    ]
    direct = FrameBuilder(MetricsEngine(_profile()), 0.1)
    by_rows = [f for s in torn for f in direct.feed(s)] + [direct.finish()]
    clock = FrameClock(0.1)
    rows = RowAggregator()
    batched = FrameBuilder(MetricsEngine(_profile()), 0.1)
    by_batches: list[Frame] = []
    for s in torn:
        rows.add(s)
        if clock.due(s.t):
            batch = unwire(marshal.loads(marshal.dumps(wire(rows.take(frame_due=True)))))
            by_batches += batched.feed_batch(batch)
    if rows.pending:
        by_batches += batched.feed_batch(rows.take(frame_due=False))
    by_batches.append(batched.finish())
    assert _frames_json(by_batches) == _frames_json(by_rows)
    final = by_rows[-1].thread_time
    assert final is not None and final.teardown_s == pytest.approx(final.kernel_s - final.counted_s)
    assert by_rows[-1].thread_coverage == pytest.approx(1.0)
