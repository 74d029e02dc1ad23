"""The region table's binary layout and the handshake's messages, as the marker library writes them.

sectormon/regions/markers_internal.h is the other half: its structs and this module describe the same bytes
(``tests/regions`` compares them through the library's ``sectormon_markers_layout``). Everything is
native-endian and 8-byte aligned; the table is a file in shared memory that sectormon creates, sized
by the header's bounds, and the library maps. Kept free of behaviour so it can be read against the C
structs line by line.
"""

from __future__ import annotations

import struct

MAGIC = 0x31524B52414D4D53  # "SMMARKR1"
VERSION = 1
MAX_GROUPS = 8
MAX_EVENTS = 16
ROW = MAX_EVENTS + 2  # values, time_enabled, time_running
NAME_BYTES = 128

LIBRARY_NAME = "sectormon-markers"
"""The marker library: ``lib/libsectormon-markers.so`` in this package (:mod:`.library`)."""

# The environment a marked program reads (set by sectormon for the program it runs).
ENV_SOCKET = "SECTORMON_MARKERS"
ENV_TABLE = "SECTORMON_MARKERS_TABLE"
ENV_LEVEL = "SECTORMON_REGION_LEVEL"

HEADER_BYTES = 256
# magic, version, header_size, thread_size, slot_size, max_threads, max_slots, max_groups,
# max_events, nthreads, nslots, overflow, reserved, unpaired, dropped
HEADER = struct.Struct("=Q12I2Q")

THREAD = struct.Struct(f"=I3i2I{MAX_GROUPS}IQ")  # seq, tid, pid, rank, ngroups, state, nevents[], reserved
THREAD_COUNTING, THREAD_EXITED, THREAD_UNCOUNTED = 1, 2, 3

# seq, thread, number, cpu, tid, pid, open, flags, calls, wall_ns, start_wall_ns, cpu_ns, start_cpu_ns, name
SLOT_HEAD = struct.Struct(f"=2I4i2I5Q{NAME_BYTES}s")
SLOT_ROWS = struct.Struct(f"={MAX_GROUPS * ROW}Q")  # acc or start: [group][values..., te, tr]
SLOT_BYTES = SLOT_HEAD.size + 2 * SLOT_ROWS.size
SLOT_LONG_NAME = 8

# overflow bits of the header: which bound was met
OVERFLOW_BITS = {
    1: "regions",  # more (region, thread) pairs than slots
    2: "threads",  # more marking threads than thread records
    4: "groups",  # sectormon sent groups the library cannot hold
    8: "names",  # a name longer than NAME_BYTES - 1, truncated
    16: "no counters",  # a thread got no counters (sectormon refused or was unreachable)
}

REQUEST = struct.Struct("=Q2i")  # magic, tid, pid
# magic, status, ngroups, flags, reserved, nevents, ids
REPLY = struct.Struct(f"=Q4I{MAX_GROUPS}I{MAX_GROUPS * MAX_EVENTS}Q")
REPLY_OK, REPLY_REFUSED = 0, 1
REPLY_ROTATED = 1  # flag: sectormon enables and disables the groups, so the library times the thread


def table_bytes(max_threads: int, max_slots: int) -> int:
    """The size of a table with these bounds."""
    return HEADER_BYTES + max_threads * THREAD.size + max_slots * SLOT_BYTES
