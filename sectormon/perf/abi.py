"""The perf_event_open ABI as data: ``struct perf_event_attr``, flag bits, read formats, ioctls.

Kept free of behaviour so the layout can be checked field by field against the kernel's uapi header
(``linux/perf_event.h``); everything that calls the kernel lives in :mod:`sectormon.perf.syscall`.
"""

from __future__ import annotations

import ctypes

# --- event types (perf_type_id) ---
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_TRACEPOINT = 2
PERF_TYPE_HW_CACHE = 3
PERF_TYPE_RAW = 4
PERF_TYPE_BREAKPOINT = 5

# --- generic hardware events (perf_hw_id) ---
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_HW_CACHE_REFERENCES = 2
PERF_COUNT_HW_CACHE_MISSES = 3
PERF_COUNT_HW_BRANCH_INSTRUCTIONS = 4
PERF_COUNT_HW_BRANCH_MISSES = 5
PERF_COUNT_HW_BUS_CYCLES = 6
PERF_COUNT_HW_STALLED_CYCLES_FRONTEND = 7
PERF_COUNT_HW_STALLED_CYCLES_BACKEND = 8
PERF_COUNT_HW_REF_CPU_CYCLES = 9

# --- software events (perf_sw_ids) ---
PERF_COUNT_SW_CPU_CLOCK = 0
PERF_COUNT_SW_TASK_CLOCK = 1
PERF_COUNT_SW_PAGE_FAULTS = 2
PERF_COUNT_SW_CONTEXT_SWITCHES = 3
PERF_COUNT_SW_CPU_MIGRATIONS = 4
PERF_COUNT_SW_PAGE_FAULTS_MIN = 5
PERF_COUNT_SW_PAGE_FAULTS_MAJ = 6
PERF_COUNT_SW_ALIGNMENT_FAULTS = 7
PERF_COUNT_SW_EMULATION_FAULTS = 8
PERF_COUNT_SW_DUMMY = 9

# --- read_format bits ---
PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
PERF_FORMAT_ID = 1 << 2
PERF_FORMAT_GROUP = 1 << 3
PERF_FORMAT_LOST = 1 << 4

GROUP_READ_FORMAT = (
    PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID
)

# --- bit positions inside the u64 flags word at offset 40 ---
FLAG_BITS: dict[str, int] = {
    "disabled": 0,
    "inherit": 1,
    "pinned": 2,
    "exclusive": 3,
    "exclude_user": 4,
    "exclude_kernel": 5,
    "exclude_hv": 6,
    "exclude_idle": 7,
    "mmap": 8,
    "comm": 9,
    "freq": 10,
    "inherit_stat": 11,
    "enable_on_exec": 12,
    "task": 13,
    "watermark": 14,
}

# --- perf_event_open flags argument ---
PERF_FLAG_FD_NO_GROUP = 1 << 0
PERF_FLAG_FD_OUTPUT = 1 << 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3

# --- ioctls ---
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_RESET = 0x2403
PERF_EVENT_IOC_ID = 0x80082407
PERF_IOC_FLAG_GROUP = 1

# --- attr sizes by ABI version ---
PERF_ATTR_SIZE_VER0 = 64
PERF_ATTR_SIZE_VER1 = 72
PERF_ATTR_SIZE_VER2 = 80
PERF_ATTR_SIZE_VER3 = 96
PERF_ATTR_SIZE_VER4 = 104
PERF_ATTR_SIZE_VER5 = 112
PERF_ATTR_SIZE_VER6 = 120
PERF_ATTR_SIZE_VER7 = 128
PERF_ATTR_SIZE_VER8 = 136

# --- syscall numbers (the only per-architecture fact the wrapper needs) ---
SYSCALL_NUMBERS: dict[str, int] = {
    "x86_64": 298,
    "amd64": 298,
    "aarch64": 241,
    "arm64": 241,
}


class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` at VER8 size (136 bytes), unions flattened to their first name.

    The 64 single-bit flags are one ``flags`` u64 (bit numbers in :data:`FLAG_BITS`): ctypes bitfield
    layout is compiler-defined, a plain integer with explicit bit numbers is not.
    """

    # Declared for type checkers; ctypes creates the real descriptors from _fields_.
    type: int
    size: int
    config: int
    sample_period: int
    sample_type: int
    read_format: int
    flags: int
    wakeup_events: int
    bp_type: int
    config1: int
    config2: int
    branch_sample_type: int
    sample_regs_user: int
    sample_stack_user: int
    clockid: int
    sample_regs_intr: int
    aux_watermark: int
    sample_max_stack: int
    reserved_2: int
    aux_sample_size: int
    reserved_3: int
    sig_data: int
    config3: int

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved_2", ctypes.c_uint16),
        ("aux_sample_size", ctypes.c_uint32),
        ("reserved_3", ctypes.c_uint32),
        ("sig_data", ctypes.c_uint64),
        ("config3", ctypes.c_uint64),
    ]

    def set_flag(self, name: str, on: bool = True) -> None:
        """Set or clear one named flag bit (``disabled``, ``exclude_kernel``, ...)."""
        bit = 1 << FLAG_BITS[name]
        self.flags = (self.flags | bit) if on else (self.flags & ~bit)

    def flag(self, name: str) -> bool:
        return bool(self.flags & (1 << FLAG_BITS[name]))


ATTR_SIZE = ctypes.sizeof(PerfEventAttr)
if ATTR_SIZE != PERF_ATTR_SIZE_VER8:  # pragma: no cover - would mean a broken ctypes layout
    raise ImportError(f"perf_event_attr laid out as {ATTR_SIZE} bytes, expected {PERF_ATTR_SIZE_VER8}")


def make_attr(
    type_: int,
    config: int,
    *,
    config1: int = 0,
    config2: int = 0,
    config3: int = 0,
    read_format: int = 0,
    flags: dict[str, bool] | None = None,
) -> PerfEventAttr:
    """A zeroed attr of the full VER8 size with the given event and flags (unset fields stay 0)."""
    attr = PerfEventAttr()
    attr.type = type_
    attr.size = ATTR_SIZE
    attr.config = config
    attr.config1 = config1
    attr.config2 = config2
    attr.config3 = config3
    attr.read_format = read_format
    for name, on in (flags or {}).items():
        attr.set_flag(name, on)
    return attr
