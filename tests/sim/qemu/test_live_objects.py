"""A running program's heap sites and stacks named as its threads meet them (live_objects.py and
the live reader of reader.c): ids in the order met, one per name, the cap, a reader that waits
for events still to come; one capture read live and after the run giving each object the same
accesses; and a real program run live against its --summary run and its recording, both cores."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from sectormon.errors import UsageError
from sectormon.sim.config import ModelConfig
from sectormon.sim.engine import Machine
from sectormon.sim.objects import OTHER
from sectormon.sim.qemu import live_objects
from sectormon.sim.qemu.capture import TracedRun
from sectormon.sim.qemu.live_objects import LiveObjects, check_live_assign
from sectormon.sim.qemu.target import SHIM
from sectormon.sim.qemu.workload import LiveProgram, flag_table, program_workload
from sectormon.sim.stream import FL_IFETCH, FL_WRITE, OBJECT_SHIFT
from tests.e2e.helpers import run_sectormon
from tests.sim.cores import CORES
from tests.sim.qemu.ring_writer import ALLOC, END, STACK, Event, RingWriter
from tests.sim.qemu.test_live_threads import _records, _seen
from tests.sim.qemu.test_workload import FakeRun

PROGRAMS = Path(__file__).parent / "programs"
LINE = 256
_STORED = struct.Struct("=qii")  # records.h's Stored: address, n, kind
_EVENT = struct.Struct("=QQQQ")  # records.h's Event: kind | vcpu << 8, then three words
KIND_READ, KIND_WRITE, KIND_SYNC = 0, 1, 3
N = 8192  # heap_sites.c's doubles per array


def test_sites_get_ids_in_the_order_met_and_one_name_is_one_object() -> None:
    live = LiveObjects("/nonexistent/prog", 0x1000, (OTHER, "table"))
    assert live.site(0x5000) == 2  # no image: outside the program, as the summary names it
    assert live.site(0x6000) == 2  # another site of that name: the same object
    assert live.stack(1) == 3
    assert live.stack(1) == 3
    assert live.names == [OTHER, "table", "heap:lib", "stack:1"]
    assert live.note() is None


def test_past_the_cap_sites_and_stacks_are_other_and_the_note_says_how_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(live_objects, "LIVE_OBJECTS", 1)
    live = LiveObjects("/nonexistent/prog", None, (OTHER,))
    assert (live.stack(0), live.stack(1), live.stack(2), live.stack(2)) == (1, 0, 0, 0)
    assert live.names == [OTHER, "stack:0"] and live.capacity == 2
    assert (note := live.note()) is not None and note.startswith("2 heap allocation site(s) and stacks")


class CountingNames:
    """A live namer that counts the questions the reader asks."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def site(self, address: int) -> int:
        self.asked.append(("site", address))
        return 1

    def stack(self, vcpu: int) -> int:
        self.asked.append(("stack", vcpu))
        return 2


def test_a_live_reader_asks_once_per_site_and_waits_for_events_still_to_come(tmp_path: Path) -> None:
    from sectormon.sim.qemu._capture import Reader

    block, stack, site = 0x100000, 0x700000, 0x4010
    # Both files written as the test goes, as the capture writes them while the program runs.
    with (
        open(tmp_path / "records", "wb+", buffering=0) as records,
        open(tmp_path / "events", "wb+", buffering=0) as events,
    ):
        records.write(_STORED.pack(block, 1, KIND_READ) + _STORED.pack(2, 0, KIND_SYNC))
        records.write(_STORED.pack(block, 2, KIND_WRITE) + _STORED.pack(stack + 8, 1, KIND_READ))
        names = CountingNames()
        table = flag_table(3, False, False, None)
        reader = Reader(records.fileno(), (), (), (), table, events.fileno(), live=names)
        first = reader.chunk(64)
        assert first is not None and not isinstance(first, tuple)
        assert list(struct.iter_unpack("=qqq", first)) == [(block // LINE, 1, 0)]  # then the sync: waits
        assert reader.chunk(64) is None and names.asked == []
        events.write(
            _EVENT.pack(ALLOC, block, 4096, site) + _EVENT.pack(STACK | 3 << 8, stack, stack + 4096, 0)
        )
        records.write(_STORED.pack(3, 0, KIND_SYNC))
        events.write(_EVENT.pack(ALLOC, block + 8192, 64, site))  # the same site again: not asked
        records.write(_STORED.pack(block + 8192, 1, KIND_READ))
        rest = reader.chunk(64)
        assert rest is not None and not isinstance(rest, tuple)
        assert list(struct.iter_unpack("=qqq", rest)) == [
            (block // LINE, 2, 1 << OBJECT_SHIFT | FL_WRITE),
            ((stack + 8) // LINE, 1, 2 << OBJECT_SHIFT),
            ((block + 8192) // LINE, 1, 1 << OBJECT_SHIFT),
        ]
        assert names.asked == [("site", site), ("stack", 3)]


def test_a_live_namer_giving_an_object_without_flags_is_an_error(tmp_path: Path) -> None:
    from sectormon.sim.qemu._capture import Reader

    records = tmp_path / "records"
    records.write_bytes(_STORED.pack(1, 0, KIND_SYNC))
    events = tmp_path / "events"
    events.write_bytes(_EVENT.pack(ALLOC, 0x1000, 64, 0x4010))
    names = CountingNames()
    with open(records, "rb") as r, open(events, "rb") as e:
        reader = Reader(r.fileno(), (), (), (), flag_table(1, False, False, None), e.fileno(), live=names)
        with pytest.raises(ValueError, match=r"live.site\(\): object 1 has no flags"):
            reader.chunk(64)


def _environment(core: str) -> dict[str, str]:
    """One environment for both runs (its size moves the program's stack: test_example.py), and
    the simulator core."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    return {**env, "SECTORMON_SIM_CORE": core}


def _line_of(marker: str) -> int:
    source = (PROGRAMS / "heap_sites.c").read_text().splitlines()
    return next(i for i, text in enumerate(source, 1) if marker in text)


def _sampled_objects(stdout: str) -> dict[str, int]:
    """Per data object: the refills sampled over every frame's interval."""
    out: dict[str, int] = {}
    for line in stdout.splitlines():
        if not line.startswith('{"schema":"sectormon/frame/'):
            continue
        hotspots: dict[str, Any] | None = json.loads(line).get("hotspots")
        for row in hotspots["interval"]["objects"] if hotspots else ():
            out[row["name"]] = out.get(row["name"], 0) + row["samples"]
    return out


# Per architecture: QEMU, the compiler and its flags (no SVE: QEMU 7.2 does not report SVE
# contiguous accesses, docs/sim.md).
ARCHES = {
    "x86_64": ("qemu-x86_64", "gcc", "-O2", "-g"),
    "aarch64": ("qemu-aarch64", "aarch64-linux-gnu-gcc", "-O2", "-g", "-march=armv8.2-a"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("core", CORES)
def test_a_live_run_names_heap_sites_and_stacks_with_the_summarys_counts_and_its_recording_too(
    tmp_path: Path, core: str, arch: str
) -> None:
    qemu, compiler, *flags = ARCHES[arch]
    if shutil.which(qemu) is None or shutil.which(compiler) is None:
        pytest.skip(f"{qemu} or {compiler} missing (qemu-user, gcc-aarch64-linux-gnu)")
    if not Path(str(SHIM).format(arch=arch)).is_file():
        pytest.skip(f"the {arch} shim is not built (pip install -e . with {compiler})")
    program = tmp_path / "heap_sites"
    subprocess.run([compiler, *flags, "-o", str(program), str(PROGRAMS / "heap_sites.c")], check=True)
    env = _environment(core)
    # Every L1D demand refill sampled (period 1): per object, the summary's l1d_demand_refills.
    recording = tmp_path / "live.jsonl"
    live = run_sectormon(
        "sim",
        "--json",
        "--record",
        str(recording),
        "--sample",
        "L1D_CACHE_REFILL_DM:1",
        "--",
        str(program),
        env=env,
    )
    assert live.returncode == 0, live.stderr
    summary = run_sectormon("sim", "--summary", "--", str(program), env=env)
    assert summary.returncode == 0, summary.stderr
    objects = json.loads(summary.stdout.strip().splitlines()[-1])["objects"]
    sampled = _sampled_objects(live.stdout)
    sites = {f"heap:main:{_line_of(f'site: {name}')}" for name in ("grid", "table", "reuse")}
    assert sites | {"stack:0"} <= set(sampled), sampled
    for name, row in objects.items():
        assert sampled.get(name, 0) == row["l1d_demand_refills"], name
    assert set(sampled) <= set(objects)
    replay = run_sectormon("replay", "--json", str(recording))
    assert replay.returncode == 0, replay.stderr
    assert _sampled_objects(replay.stdout) == sampled  # the recording keeps the names


def test_assigning_a_heap_site_in_a_live_run_is_one_line_naming_the_fix() -> None:
    with pytest.raises(UsageError, match=r"--assign heap:main:17=1: .* sim --summary or --advise"):
        check_live_assign({"table": "1", "heap:main:17": "1"})
    check_live_assign({"table": "1"})  # a global is checked against the program's symbols


def _accesses_by_name(machine: Machine) -> dict[str, int]:
    out: dict[str, int] = {}
    for thread in machine.threads:
        # A live thread's counters have room past the names met: those slots counted nothing.
        counts = thread.object_counts()
        assert all(c == (0, 0, 0) for c in counts[len(thread.spec.objects) :])
        for name, (accesses, _refills, _reads) in zip(thread.spec.objects, counts, strict=False):
            out[name] = out.get(name, 0) + accesses
    return out


@pytest.mark.e2e
@pytest.mark.parametrize("core", CORES)
def test_one_capture_read_live_and_after_the_run_gives_each_object_the_same_accesses(
    tmp_path: Path, core: str
) -> None:
    if shutil.which("qemu-x86_64") is None or shutil.which("gcc") is None:
        pytest.skip("qemu-x86_64 or gcc missing (qemu-user, gcc)")
    program = tmp_path / "heap_sites"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(PROGRAMS / "heap_sites.c")], check=True)
    with open(os.devnull, "w") as quiet:
        run = TracedRun([str(program)], live=True, stdio=(None, quiet.fileno(), None))
        try:
            run.wait_started()
            live = LiveProgram(run, False, False, run.objects, None)
            traced = run.result()  # the live readers read the same files after the end
            live_machine = Machine(ModelConfig(), live.new_specs(), core=core)
            live_machine.run_to_completion()
            after = Machine(
                ModelConfig(), list(program_workload(traced, False, False, traced.objects).specs), core=core
            )
            after.run_to_completion()
        finally:
            run.close()
    named_live, named_after = _accesses_by_name(live_machine), _accesses_by_name(after)
    assert {"heap:lib", "stack:0"} <= set(named_live)
    assert {name: n for name, n in named_live.items() if n} == {
        name: n for name, n in named_after.items() if n
    }
    grid = f"heap:main:{_line_of('site: grid')}"
    assert named_live[grid] == 9 * N  # N stores, then 3 N loads and stores, then 2 N loads by reuse


@pytest.mark.e2e
def test_each_threads_stack_and_a_shared_block_are_named_in_a_live_run(tmp_path: Path) -> None:
    if shutil.which("qemu-x86_64") is None or shutil.which("gcc") is None:
        pytest.skip("qemu-x86_64 or gcc missing (qemu-user, gcc)")
    program = tmp_path / "stacks"
    source = PROGRAMS / "stacks.c"
    subprocess.run(["gcc", "-O2", "-g", "-pthread", "-o", str(program), str(source)], check=True)
    live = run_sectormon("sim", "--json", "--sample", "L1D_CACHE_REFILL:1", "--", str(program))
    assert live.returncode == 0, live.stderr
    shared = next(i for i, text in enumerate(source.read_text().splitlines(), 1) if "site: shared" in text)
    assert {"stack:0", "stack:1", f"heap:main:{shared}"} <= set(_sampled_objects(live.stdout))


@pytest.fixture
def ring() -> Iterator[RingWriter]:
    writer = RingWriter()
    yield writer
    writer.release()


def test_a_later_thread_on_an_ended_threads_vcpu_sees_the_blocks_allocated_before_it(
    ring: RingWriter,
) -> None:
    block, site = 0x100000, 0x4010
    ring.batch(0, [Event(ALLOC, (block, 4096, site)), (block, 8, False), Event(END)], 0)
    run = FakeRun()
    run.events_fd = ring.capture.live_events()
    try:
        _seen(ring, run)
        live = LiveProgram(cast(TracedRun, run), False, False, None, None)
        (ended,) = live.new_specs()
        assert _records(ended.stream()) == [(block // LINE, 1, 1 << OBJECT_SHIFT)]
        assert live.names == [OTHER, "heap:lib"]  # no image: the summary's name too
        ring.batch(0, [(block + 8, 8, True)], 2)  # QEMU gave vCPU 0 to a thread created later
        _seen(ring, run)
        (later,) = live.new_specs()
        run.steps = [lambda r: setattr(r, "ended", True)]
        later_records = _records(later.stream())
        assert later_records == [(block // LINE, 1, 1 << OBJECT_SHIFT | FL_WRITE), (-1 - 2, 0, FL_IFETCH)]
    finally:
        os.close(run.events_fd)
        for _vcpu, descriptor in run.seen:
            os.close(descriptor)
