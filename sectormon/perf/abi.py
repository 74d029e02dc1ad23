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
    # bits 15-16 hold precise_ip, a 2-bit field (see PRECISE_IP_SHIFT)
    "mmap_data": 17,
    "sample_id_all": 18,
    "exclude_host": 19,
    "exclude_guest": 20,
    "exclude_callchain_kernel": 21,
    "exclude_callchain_user": 22,
    "mmap2": 23,
    "comm_exec": 24,
    "use_clockid": 25,
    "context_switch": 26,
    "write_backward": 27,
    # bits 28-34: records and features sectormon does not use
    "inherit_thread": 35,
}
PRECISE_IP_SHIFT = 15
PRECISE_IP_MASK = 0b11 << PRECISE_IP_SHIFT

# --- sample_type bits (what a PERF_RECORD_SAMPLE carries, in this order) ---
PERF_SAMPLE_IP = 1 << 0
PERF_SAMPLE_TID = 1 << 1
PERF_SAMPLE_TIME = 1 << 2
PERF_SAMPLE_ADDR = 1 << 3
PERF_SAMPLE_READ = 1 << 4
PERF_SAMPLE_CALLCHAIN = 1 << 5
PERF_SAMPLE_ID = 1 << 6
PERF_SAMPLE_CPU = 1 << 7
PERF_SAMPLE_PERIOD = 1 << 8
PERF_SAMPLE_STREAM_ID = 1 << 9
PERF_SAMPLE_RAW = 1 << 10
PERF_SAMPLE_BRANCH_STACK = 1 << 11
PERF_SAMPLE_REGS_USER = 1 << 12
PERF_SAMPLE_STACK_USER = 1 << 13
PERF_SAMPLE_WEIGHT = 1 << 14
PERF_SAMPLE_DATA_SRC = 1 << 15
PERF_SAMPLE_IDENTIFIER = 1 << 16
PERF_SAMPLE_TRANSACTION = 1 << 17
PERF_SAMPLE_REGS_INTR = 1 << 18
PERF_SAMPLE_PHYS_ADDR = 1 << 19
PERF_SAMPLE_AUX = 1 << 20
PERF_SAMPLE_CGROUP = 1 << 21
PERF_SAMPLE_DATA_PAGE_SIZE = 1 << 22
PERF_SAMPLE_CODE_PAGE_SIZE = 1 << 23
PERF_SAMPLE_WEIGHT_STRUCT = 1 << 24

# --- record types in the ring buffer (perf_event_type) ---
PERF_RECORD_MMAP = 1
PERF_RECORD_LOST = 2
PERF_RECORD_COMM = 3
PERF_RECORD_EXIT = 4
PERF_RECORD_THROTTLE = 5
PERF_RECORD_UNTHROTTLE = 6
PERF_RECORD_FORK = 7
PERF_RECORD_READ = 8
PERF_RECORD_SAMPLE = 9
PERF_RECORD_MMAP2 = 10
PERF_RECORD_AUX = 11
PERF_RECORD_ITRACE_START = 12
PERF_RECORD_LOST_SAMPLES = 13
PERF_RECORD_SWITCH = 14
PERF_RECORD_SWITCH_CPU_WIDE = 15

# --- perf_event_header.misc ---
PERF_RECORD_MISC_CPUMODE_MASK = 7
PERF_RECORD_MISC_KERNEL = 1
PERF_RECORD_MISC_USER = 2
PERF_RECORD_MISC_HYPERVISOR = 3
PERF_RECORD_MISC_MMAP_DATA = 1 << 13
PERF_RECORD_MISC_COMM_EXEC = 1 << 13
PERF_RECORD_MISC_EXACT_IP = 1 << 14
PERF_RECORD_MISC_MMAP_BUILD_ID = 1 << 14

# --- perf_event_open flags argument ---
PERF_FLAG_FD_NO_GROUP = 1 << 0
PERF_FLAG_FD_OUTPUT = 1 << 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3

# --- ioctls ---
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_RESET = 0x2403
PERF_EVENT_IOC_SET_OUTPUT = 0x2405
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

    @property
    def precise_ip(self) -> int:
        """The skid constraint (0 arbitrary skid .. 3 zero skid), a 2-bit field of ``flags``."""
        return (self.flags & PRECISE_IP_MASK) >> PRECISE_IP_SHIFT

    @precise_ip.setter
    def precise_ip(self, level: int) -> None:
        if not 0 <= level <= 3:
            raise ValueError(f"precise_ip must be 0..3, not {level}")
        self.flags = (self.flags & ~PRECISE_IP_MASK) | (level << PRECISE_IP_SHIFT)


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
    sample_period: int = 0,
    sample_type: int = 0,
    wakeup: int = 0,
    clockid: int = 0,
) -> PerfEventAttr:
    """A zeroed attr of the full VER8 size with the given event and flags (unset fields stay 0).

    ``sample_period`` is the union ``sample_period``/``sample_freq`` (the ``freq`` flag says which);
    ``wakeup`` is the union ``wakeup_events``/``wakeup_watermark`` (the ``watermark`` flag says which).
    """
    attr = PerfEventAttr()
    attr.type = type_
    attr.size = ATTR_SIZE
    attr.config = config
    attr.config1 = config1
    attr.config2 = config2
    attr.config3 = config3
    attr.read_format = read_format
    attr.sample_period = sample_period
    attr.sample_type = sample_type
    attr.wakeup_events = wakeup
    attr.clockid = clockid
    for name, on in (flags or {}).items():
        attr.set_flag(name, on)
    return attr


class PerfEventHeader(ctypes.Structure):
    """``struct perf_event_header``: every record in the ring buffer starts with one (8 bytes)."""

    type: int
    misc: int
    size: int

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("misc", ctypes.c_uint16),
        ("size", ctypes.c_uint16),
    ]


class PerfEventMmapPage(ctypes.Structure):
    """``struct perf_event_mmap_page``: the first page of a sampling event's mapping.

    The ring buffer proper follows it. The kernel advances ``data_head`` as it writes records; the
    reader copies ``[data_tail, data_head)`` and then stores the new ``data_tail``, which frees the
    space (see :mod:`sectormon.perf.ring` for the barriers this needs). The capability bit field is
    one ``capabilities`` u64, like the attr's flags.
    """

    version: int
    compat_version: int
    lock: int
    index: int
    offset: int
    time_enabled: int
    time_running: int
    capabilities: int
    pmc_width: int
    time_shift: int
    time_mult: int
    time_offset: int
    time_zero: int
    size: int
    reserved_1: int
    time_cycles: int
    time_mask: int
    reserved: ctypes.Array[ctypes.c_uint8]
    data_head: int
    data_tail: int
    data_offset: int
    data_size: int
    aux_head: int
    aux_tail: int
    aux_offset: int
    aux_size: int

    _fields_ = [
        ("version", ctypes.c_uint32),
        ("compat_version", ctypes.c_uint32),
        ("lock", ctypes.c_uint32),
        ("index", ctypes.c_uint32),
        ("offset", ctypes.c_int64),
        ("time_enabled", ctypes.c_uint64),
        ("time_running", ctypes.c_uint64),
        ("capabilities", ctypes.c_uint64),
        ("pmc_width", ctypes.c_uint16),
        ("time_shift", ctypes.c_uint16),
        ("time_mult", ctypes.c_uint32),
        ("time_offset", ctypes.c_uint64),
        ("time_zero", ctypes.c_uint64),
        ("size", ctypes.c_uint32),
        ("reserved_1", ctypes.c_uint32),
        ("time_cycles", ctypes.c_uint64),
        ("time_mask", ctypes.c_uint64),
        ("reserved", ctypes.c_uint8 * (116 * 8)),
        ("data_head", ctypes.c_uint64),
        ("data_tail", ctypes.c_uint64),
        ("data_offset", ctypes.c_uint64),
        ("data_size", ctypes.c_uint64),
        ("aux_head", ctypes.c_uint64),
        ("aux_tail", ctypes.c_uint64),
        ("aux_offset", ctypes.c_uint64),
        ("aux_size", ctypes.c_uint64),
    ]


DATA_HEAD_OFFSET: int = PerfEventMmapPage.data_head.offset  # type: ignore[attr-defined]
DATA_TAIL_OFFSET: int = PerfEventMmapPage.data_tail.offset  # type: ignore[attr-defined]
if (DATA_HEAD_OFFSET, DATA_TAIL_OFFSET) != (1024, 1032):  # pragma: no cover - a broken ctypes layout
    raise ImportError(f"perf_event_mmap_page laid out with data_head at {DATA_HEAD_OFFSET}, expected 1024")
