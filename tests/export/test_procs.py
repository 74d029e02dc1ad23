"""The procs scope in a scrape: pid, comm and rank labels, bounded, thread coverage as a gauge."""

from __future__ import annotations

import dataclasses

from sectormon.data.frames import Frame, ProcessScope, ThreadTime
from sectormon.export.collector import FrameCollector
from sectormon.export.scopes import exported_procs
from tests.export.frames import frame, header, scope
from tests.export.test_collector import names, scrape, value


def _with_procs(t: float, *, cycles: float = 100.0, extra: int = 0) -> Frame:
    processes = {
        "300": ProcessScope(300, "app", parent=1, rank=1),
        "200": ProcessScope(200, "app", parent=1, rank=0),
        "100": ProcessScope(100, "mpiexec", parent=1),
    }
    for n in range(extra):
        processes[str(1000 + n)] = ProcessScope(1000 + n, "helper", parent=100)
    return dataclasses.replace(
        frame(t, cycles),
        procs={pid: scope(1.0 + int(pid) / 1000, cycles) for pid in processes},
        processes=processes,
        thread_time=ThreadTime(counted_s=0.9, kernel_s=1.0),
    )


def test_processes_carry_pid_comm_and_rank_labels() -> None:
    collector = FrameCollector(header())
    collector.publish(_with_procs(1.0))
    collector.publish(_with_procs(2.0))
    samples = scrape(collector)
    ipc = "sectormon_ipc_instructions_per_cycle"
    assert value(samples, ipc, scope="proc", pid="200", comm="app", rank="0") == 1.2
    assert value(samples, ipc, scope="proc", pid="300", rank="1") == 1.3
    # rank only when known: the launcher's is empty, which Prometheus stores as no label at all
    launcher = [labels for (name, labels), _ in samples.items() if name == ipc and ("pid", "100") in labels]
    assert len(launcher) == 1 and dict(launcher[0]).get("rank", "") == ""
    # counters add up per process over the frames
    assert value(samples, "sectormon_events_total", scope="proc", pid="200", event="CPU_CYCLES") == 200.0
    # the other scopes have no process labels
    assert value(samples, ipc, scope="total") == 2.0
    assert value(samples, "sectormon_thread_coverage_ratio") == 0.9


def test_the_number_of_processes_is_bounded_ranked_ones_first() -> None:
    busy = _with_procs(1.0, extra=10)
    assert exported_procs(busy, 3) == ["200", "300", "100"]
    assert exported_procs(busy, 0) == []
    collector = FrameCollector(header(), procs=4)
    collector.publish(busy)
    samples = scrape(collector)
    pids = {
        dict(labels).get("pid") for (name, labels), _ in samples.items() if name.startswith("sectormon_ipc")
    }
    assert pids == {"", "200", "300", "100", "1000"}  # "": the other scopes


def test_without_processes_the_scrape_is_unchanged() -> None:
    plain, none = FrameCollector(header()), FrameCollector(header(), procs=0)
    plain.publish(frame(1.0))
    none.publish(_with_procs(1.0))
    for samples in (scrape(plain), scrape(none)):
        assert not any("pid" in dict(labels) for _, labels in samples)
    assert "sectormon_thread_coverage_ratio" not in names(scrape(plain))
