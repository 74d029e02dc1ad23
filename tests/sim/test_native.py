"""The compiled core (sectormon/sim/_core.c) against the Python model: the same numbers, samples and
final cache contents on any workload, and bad input raised as an error, never a crash.

The golden cases (test_golden.py) pin both cores on the model's every path; here hypothesis
draws the workloads and configurations nobody wrote down: tiny line ranges (hits, set conflicts),
every flag, loop exits and ifetches, several threads on one L2, odd timing and prefetch settings,
sector changes between quanta, and every refill sampled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.errors import UsageError
from sectormon.sim import native
from sectormon.sim.config import ModelConfig, Prefetch, SectorConfig, Timing
from sectormon.sim.engine import Machine
from sectormon.sim.sampling import RefillSampler
from sectormon.sim.stream import FL_EXIT, FL_IFETCH, Chunks, Record, ThreadSpec, flags
from tests.sim.cores import CACHES, NOT_BUILT
from tests.sim.golden_cases import machine_state

needs_core = pytest.mark.skipif(native.compiled is None, reason=NOT_BUILT)


def test_the_compiled_core_is_built() -> None:
    assert native.compiled is not None, (
        "sectormon/sim/_core.c was not built: reinstall with a C compiler and the Python headers "
        "(pip install -e .); without it the simulator runs its Python model, several times slower"
    )


@st.composite
def _records(draw: st.DrawFn, objects: int) -> list[Record]:
    span = draw(st.sampled_from([40, 300, 5000, 1 << 20]))
    access = st.tuples(
        st.integers(0, span),
        st.integers(1, 5),
        st.builds(
            flags, st.integers(0, 3), st.booleans(), st.booleans(), st.booleans(), st.integers(0, objects - 1)
        ),
    )
    exit_ = st.tuples(st.integers(-4, -2), st.just(0), st.just(FL_EXIT))
    ifetch = st.tuples(st.integers(-9, -1), st.just(0), st.just(FL_IFETCH))
    run = st.builds(
        lambda start, length, fl: [(start + i, 2, fl) for i in range(length)],
        st.integers(0, span),
        st.integers(2, 60),
        st.sampled_from([0, flags(1, False, True, False), flags(2, True, True, True)]),
    )
    pieces = draw(
        st.lists(
            st.one_of(access.map(lambda r: [r]), exit_.map(lambda r: [r]), ifetch.map(lambda r: [r]), run),
            max_size=120,
        )
    )
    return [record for piece in pieces for record in piece]


def _stream(records: list[Record], size: int) -> Callable[[], Chunks]:
    def make() -> Chunks:
        for i in range(0, len(records), size):
            yield records[i : i + size]

    return make


_MAXIMA_L1 = st.tuples(*[st.integers(0, 4)] * 4)
_MAXIMA_L2 = st.tuples(*[st.integers(0, 16)] * 4)
_SECTORS = st.builds(
    SectorConfig, st.booleans(), _MAXIMA_L1, _MAXIMA_L2, st.sampled_from([(0,), (0, 1), (1,)])
)
_CONFIG = st.builds(
    ModelConfig,
    l2_ways=st.integers(1, 16),
    timing=st.builds(
        Timing,
        l2_hit=st.integers(1, 60),
        memory=st.integers(1, 400),
        window=st.integers(1, 64),
        l1_mib=st.integers(1, 12),
        mispredict=st.integers(0, 30),
    ),
    prefetch=st.builds(Prefetch, st.booleans(), st.integers(0, 8), st.integers(0, 64), st.integers(0, 40)),
    sectors=_SECTORS,
    quantum=st.integers(50, 3000),
)


@st.composite
def _machines(
    draw: st.DrawFn,
) -> tuple[ModelConfig, list[ThreadSpec], list[tuple[float, SectorConfig]], int, bool]:
    config = draw(_CONFIG)
    cpus = draw(st.lists(st.sampled_from([0, 1, 2, 12, 13]), min_size=1, max_size=3, unique=True))
    specs = []
    for tid, cpu in enumerate(cpus):
        objects = draw(st.integers(1, 3))
        records = draw(_records(objects))
        specs.append(
            ThreadSpec(
                tid,
                cpu,
                _stream(records, draw(st.integers(1, 50))),
                draw(st.sampled_from([0.25, 1.0, 1.5, 3.0])),
                2.0,
                tuple(f"obj{i}" for i in range(objects)),
            )
        )
    changes = draw(st.lists(st.tuples(st.floats(0, 5e4), _SECTORS), max_size=3))
    return (
        config,
        specs,
        sorted(changes, key=lambda c: c[0]),
        draw(st.sampled_from([1, 3, 17])),
        draw(st.booleans()),
    )


def _run(
    core: str,
    config: ModelConfig,
    specs: list[ThreadSpec],
    changes: list[tuple[float, SectorConfig]],
    period: int,
    loop: bool,
) -> dict[str, Any]:
    machine = Machine(config, specs, loop=loop, core=core)
    assert machine.core == core
    samplers = []
    for t in machine.threads:
        t.sampler = RefillSampler(period, demand=True, prefetch=True, seed=t.tid + 1)
        samplers.append(t.sampler)
    for at, sectors in changes:
        machine.run_until(at)
        machine.request_sectors(sectors)
    if loop:
        machine.run_until((changes[-1][0] if changes else 0) + 2e4)
    else:
        machine.run_to_completion()
    state = machine_state(machine)
    state["samples"] = [s.taken for s in samplers]
    state["recent"] = [list(t.recent) for t in machine.threads]
    state["objects"] = [t.object_counts() for t in machine.threads]
    state["done"] = [t.done for t in machine.threads]
    return state


@needs_core
@settings(max_examples=150, deadline=None)
@given(case=_machines())
def test_both_cores_simulate_the_same_machine(
    case: tuple[ModelConfig, list[ThreadSpec], list[tuple[float, SectorConfig]], int, bool],
) -> None:
    assert _run("c", *case) == _run("python", *case)


@needs_core
@pytest.mark.parametrize(
    ("record", "error"),
    [
        ("not a record", ValueError),
        ((1, 2), ValueError),
        ((1.5, 1, 0), TypeError),
        ((1, 1, 1 << 20), IndexError),
        ((1 << 70, 1, 0), OverflowError),
    ],
)
def test_a_bad_record_is_an_error_not_a_crash(record: object, error: type[Exception]) -> None:
    machine = Machine(ModelConfig(), [ThreadSpec(0, 0, lambda: iter([[(5, 1, 0), record]]))], core="c")  # type: ignore[list-item]
    with pytest.raises(error):
        machine.run_to_completion()


def test_the_core_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "python")
    assert native.choose() == "python"
    assert native.choose("c" if native.compiled is not None else "python") in native.CORES
    monkeypatch.setenv(native.ENV, "fortran")
    with pytest.raises(UsageError, match="SECTORMON_SIM_CORE=fortran: not a simulator core"):
        native.choose()
    monkeypatch.setattr(native, "compiled", None)
    monkeypatch.setenv(native.ENV, "c")
    with pytest.raises(UsageError, match="not built"):
        native.choose()
    monkeypatch.delenv(native.ENV)
    assert native.choose() == "python"


@pytest.mark.parametrize("make", CACHES)
def test_a_caches_accessors_read_the_packed_state(make: Any) -> None:
    cache = make(4, 2, (2, 2, 2, 2), True)
    cache.fill(9, (7 << 4) | (1 << 2) | 2)  # ready 7, kind 1, sector 2, clean
    assert (cache.sector_of(9), cache.kind_of(9), cache.is_dirty(9)) == (2, 1, False)
    cache.mark_dirty(9)
    assert cache.is_dirty(9) and cache.tags == {9: (7 << 4) | 8 | 4 | 2}
    cache.fill(13, 1)
    cache.touch(9)
    assert cache.sets[1] == [13, 9] and cache.lines() == 2 and cache.occupancy(1) == [0, 1, 1, 0]
    with pytest.raises(KeyError):
        cache.sector_of(10)
