"""Types of the compiled core (_core.c); the Python reference is cache.SectorCache and thread.SimThread."""

from collections.abc import Callable, Sequence
from typing import Any

class Cache:
    nsets: int
    ways: int
    mask: int
    def __init__(self, nsets: int, ways: int, maxima: Sequence[int], enabled: bool) -> None: ...
    def fill(self, line: int, state: int) -> tuple[int, int]: ...
    def touch(self, line: int) -> None: ...
    def sector_of(self, line: int) -> int: ...
    def kind_of(self, line: int) -> int: ...
    def is_dirty(self, line: int) -> bool: ...
    def mark_dirty(self, line: int) -> None: ...
    def occupancy(self, set_index: int) -> list[int]: ...
    def lines(self) -> int: ...
    def set_maxima(self, maxima: Sequence[int], enabled: bool) -> None: ...
    def __contains__(self, line: object) -> bool: ...
    @property
    def sets(self) -> list[list[int]]: ...
    @property
    def tags(self) -> dict[int, int]: ...
    @property
    def counts(self) -> list[list[int]]: ...
    @property
    def maxima(self) -> list[int]: ...
    @property
    def enabled(self) -> bool: ...

class Thread:
    l1: Any
    l2: Any
    spec: Any
    sampler: Any
    done: bool
    tid: int
    cpu: int
    l2base: int
    window: int
    mib: int
    passes: int
    pass_start: int
    cyc: int
    acc: int
    l1_refill_pf: int
    l1_wb: int
    l1_miss_wait: int
    l2_other: int
    l2_refill_pf: int
    l2_wb: int
    swap_dm: int
    mibmch_prf: int
    wait_l1: int
    wait_l2: int
    fe_stall: int
    exits: int
    ifetch: int
    fcount: list[int]
    demand_misses: list[int]
    memory_reads: list[int]
    @property
    def recent(self) -> list[int]: ...
    @property
    def demand_total(self) -> int: ...
    @property
    def memory_total(self) -> int: ...
    def low_fcount(self) -> list[int]: ...
    def __init__(
        self,
        spec: Any,
        l1: Cache,
        l2: Cache,
        tid: int,
        cpu: int,
        l2base: int,
        l2_hit: int,
        memory: int,
        window: int,
        mib: int,
        mispredict: int,
        cpa: int,
        slots: int,
        prefetch: bool,
        pf_d1: int,
        pf_d2: int,
        pf_table: int,
        loop: bool,
    ) -> None: ...
    def run(self, limit: int, next_limit: Callable[[int], int] | None = None) -> None: ...
