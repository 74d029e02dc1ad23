"""Group read buffers: the pure decoder, including hypothesis-generated buffers."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.perf.errors import GroupReadError
from sectormon.perf.group import (
    GroupReadDecoder,
    GroupValues,
    group_read_size,
    parse_group_read,
)
from tests.perf.perf_helpers import build_group_read

u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


def test_known_buffer() -> None:
    # nr=2, enabled=1000, running=900, {value 5, id 71}, {value 7, id 70}
    buf = struct.pack("=7Q", 2, 1000, 900, 5, 71, 7, 70)
    values = parse_group_read(buf, [70, 71])
    assert values.values == (7, 5)
    assert (values.time_enabled, values.time_running) == (1000, 900)


def test_size() -> None:
    assert group_read_size(3) == 72


@given(
    st.lists(st.tuples(u64, u64), min_size=1, max_size=12, unique_by=lambda p: p[1]),
    u64,
    u64,
    st.randoms(use_true_random=False),
)
def test_roundtrip_any_kernel_order(
    pairs: list[tuple[int, int]], enabled: int, running: int, rnd: random.Random
) -> None:
    values = [v for v, _ in pairs]
    ids = [i for _, i in pairs]
    kernel_order = list(range(len(pairs)))
    rnd.shuffle(kernel_order)
    buf = build_group_read(
        [values[k] for k in kernel_order], [ids[k] for k in kernel_order], enabled, running
    )
    out = parse_group_read(buf, ids)
    assert out.values == tuple(values)
    assert (out.time_enabled, out.time_running) == (enabled, running)


@given(st.binary(max_size=200), st.lists(u64, min_size=1, max_size=6, unique=True))
def test_garbage_never_crashes_differently(buf: bytes, ids: list[int]) -> None:
    try:
        out = parse_group_read(buf, ids)
    except GroupReadError:
        return
    assert len(out.values) == len(ids)
    assert len(buf) == group_read_size(len(ids))


@given(st.lists(u64, min_size=1, max_size=6, unique=True), st.integers(min_value=1, max_value=15))
def test_truncated_buffer_rejected(ids: list[int], cut: int) -> None:
    buf = build_group_read([1] * len(ids), ids, 10, 10)
    with pytest.raises(GroupReadError):
        parse_group_read(buf[: len(buf) - cut], ids)


def test_wrong_count_rejected() -> None:
    buf = build_group_read([1, 2], [1, 2], 10, 10)
    with pytest.raises(GroupReadError, match="lists 2 events, the group has 3"):
        parse_group_read(buf, [1, 2, 3])


def test_unknown_id_rejected() -> None:
    buf = build_group_read([1, 2], [1, 2], 10, 10)
    with pytest.raises(GroupReadError, match="lacks event id 9"):
        parse_group_read(buf, [1, 9])


def test_duplicate_id_rejected() -> None:
    buf = struct.pack("=7Q", 2, 10, 10, 1, 4, 2, 4)
    with pytest.raises(GroupReadError, match="repeats"):
        parse_group_read(buf, [4, 5])


def _outcome(fn: Callable[[], GroupValues]) -> GroupValues | type[Exception]:
    try:
        return fn()
    except GroupReadError:
        return GroupReadError


@given(
    st.lists(u64, min_size=1, max_size=9, unique=True),
    st.lists(st.tuples(st.lists(u64, min_size=9, max_size=9), u64, u64, st.randoms(use_true_random=False))),
    st.lists(st.binary(max_size=120), max_size=3),
)
def test_decoder_matches_pure_parser(
    ids: list[int],
    reads: list[tuple[list[int], int, int, random.Random]],
    garbage: list[bytes],
) -> None:
    """The cached fast path must agree with parse_group_read on every buffer, whatever came before."""
    decoder = GroupReadDecoder(ids)
    buffers: list[bytes] = []
    for values, enabled, running, rnd in reads:
        order = list(range(len(ids)))
        rnd.shuffle(order)
        buffers.append(
            build_group_read([values[k] for k in order], [ids[k] for k in order], enabled, running)
        )
        buffers.append(buffers[-1])  # a repeat takes the cached path
    buffers[1:1] = garbage
    for buf in buffers:
        assert _outcome(partial(decoder.decode, buf)) == _outcome(partial(parse_group_read, buf, ids))


def test_decoder_single_event() -> None:
    decoder = GroupReadDecoder([42])
    buf = build_group_read([7], [42], 3, 2)
    assert decoder.decode(buf) == decoder.decode(buf) == GroupValues((7,), 3, 2)
