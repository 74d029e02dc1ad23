"""perf_event_attr layout, flag bits and syscall numbers against the documented ABI."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sectormon.perf import abi
from sectormon.perf.errors import UnsupportedArchitecture
from sectormon.perf.syscall import syscall_number

# (field, offset, size) from the kernel's uapi linux/perf_event.h at PERF_ATTR_SIZE_VER8.
DOCUMENTED = [
    ("type", 0, 4),
    ("size", 4, 4),
    ("config", 8, 8),
    ("sample_period", 16, 8),
    ("sample_type", 24, 8),
    ("read_format", 32, 8),
    ("flags", 40, 8),
    ("wakeup_events", 48, 4),
    ("bp_type", 52, 4),
    ("config1", 56, 8),
    ("config2", 64, 8),
    ("branch_sample_type", 72, 8),
    ("sample_regs_user", 80, 8),
    ("sample_stack_user", 88, 4),
    ("clockid", 92, 4),
    ("sample_regs_intr", 96, 8),
    ("aux_watermark", 104, 4),
    ("sample_max_stack", 108, 2),
    ("reserved_2", 110, 2),
    ("aux_sample_size", 112, 4),
    ("reserved_3", 116, 4),
    ("sig_data", 120, 8),
    ("config3", 128, 8),
]


def test_struct_is_ver8_size() -> None:
    assert ctypes.sizeof(abi.PerfEventAttr) == 136 == abi.PERF_ATTR_SIZE_VER8 == abi.ATTR_SIZE


@pytest.mark.parametrize(("name", "offset", "size"), DOCUMENTED)
def test_field_offsets(name: str, offset: int, size: int) -> None:
    descriptor = getattr(abi.PerfEventAttr, name)
    assert descriptor.offset == offset
    assert descriptor.size == size


def test_every_field_is_documented() -> None:
    assert [f[0] for f in abi.PerfEventAttr._fields_] == [d[0] for d in DOCUMENTED]


def test_fields_cover_struct_without_gaps() -> None:
    end = 0
    for _, offset, size in DOCUMENTED:
        assert offset == end
        end = offset + size
    assert end == 136


@pytest.mark.parametrize(
    ("flag", "bit"),
    [
        ("disabled", 0),
        ("inherit", 1),
        ("pinned", 2),
        ("exclusive", 3),
        ("exclude_user", 4),
        ("exclude_kernel", 5),
        ("exclude_hv", 6),
        ("exclude_idle", 7),
        ("inherit_stat", 11),
        ("enable_on_exec", 12),
    ],
)
def test_flag_bits_land_at_offset_40(flag: str, bit: int) -> None:
    attr = abi.PerfEventAttr()
    attr.set_flag(flag)
    raw = bytes(attr)
    assert int.from_bytes(raw[40:48], sys.byteorder) == 1 << bit
    assert attr.flag(flag)
    assert not any(raw[:40]) and not any(raw[48:])
    attr.set_flag(flag, False)
    assert attr.flags == 0


def test_make_attr_sets_size_event_and_flags() -> None:
    attr = abi.make_attr(
        abi.PERF_TYPE_RAW,
        0x11,
        config1=7,
        read_format=abi.GROUP_READ_FORMAT,
        flags={"disabled": True, "exclude_kernel": True, "exclude_hv": True},
    )
    assert (attr.type, attr.size, attr.config, attr.config1) == (4, 136, 0x11, 7)
    assert attr.read_format == 1 | 2 | 4 | 8
    assert attr.flags == (1 << 0) | (1 << 5) | (1 << 6)


def test_ioctl_and_read_format_constants() -> None:
    assert (abi.PERF_EVENT_IOC_ENABLE, abi.PERF_EVENT_IOC_DISABLE, abi.PERF_EVENT_IOC_RESET) == (
        0x2400,
        0x2401,
        0x2403,
    )
    assert abi.PERF_EVENT_IOC_ID == 0x80082407
    assert abi.PERF_IOC_FLAG_GROUP == 1
    assert abi.GROUP_READ_FORMAT == 15


def test_syscall_numbers() -> None:
    assert syscall_number("x86_64") == 298
    assert syscall_number("aarch64") == 241
    with pytest.raises(UnsupportedArchitecture, match="riscv64"):
        syscall_number("riscv64")


C_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include <linux/perf_event.h>
#define P(f) printf(#f " %zu\n", offsetof(struct perf_event_attr, f));
int main(void) {
  P(type) P(size) P(config) P(sample_period) P(sample_type) P(read_format) P(wakeup_events)
  P(bp_type) P(config1) P(config2) P(branch_sample_type) P(sample_regs_user) P(sample_stack_user)
  P(clockid) P(sample_regs_intr) P(aux_watermark) P(sample_max_stack)
  struct perf_event_attr a = {0};
  a.disabled = 1; a.inherit = 1; a.exclude_kernel = 1; a.inherit_stat = 1; a.enable_on_exec = 1;
  unsigned long long w; __builtin_memcpy(&w, (char *)&a + 40, 8);
  printf("flags %llu\n", w);
  return 0;
}
"""


def test_layout_matches_system_header(tmp_path: Path) -> None:
    """Cross-check against the C compiler's view of the installed uapi header (when present)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not Path("/usr/include/linux/perf_event.h").exists():
        pytest.skip("no C compiler or linux/perf_event.h to cross-check against")
    src = tmp_path / "layout.c"
    src.write_text(C_PROGRAM)
    exe = tmp_path / "layout"
    subprocess.run([cc, "-o", str(exe), str(src)], check=True, capture_output=True)
    out = dict(
        line.split()
        for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    )
    for name, offset in out.items():
        if name == "flags":
            attr = abi.make_attr(
                0,
                0,
                flags={
                    n: True
                    for n in ("disabled", "inherit", "exclude_kernel", "inherit_stat", "enable_on_exec")
                },
            )
            assert attr.flags == int(offset)
        else:
            assert getattr(abi.PerfEventAttr, name).offset == int(offset), name


SAMPLING_C_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include <linux/perf_event.h>
#define P(f) printf("page." #f " %zu\n", offsetof(struct perf_event_mmap_page, f));
#define H(f) printf("header." #f " %zu\n", offsetof(struct perf_event_header, f));
#define C(name) printf("const." #name " %llu\n", (unsigned long long)(name));
#define F(bit) { struct perf_event_attr a = {0}; a.bit = 1; unsigned long long w;                \
                 __builtin_memcpy(&w, (char *)&a + 40, 8); printf("flag." #bit " %llu\n", w); }
int main(void) {
  P(version) P(compat_version) P(lock) P(index) P(offset) P(time_enabled) P(time_running)
  P(capabilities) P(pmc_width) P(time_shift) P(time_mult) P(time_offset) P(time_zero) P(size)
  P(time_cycles) P(time_mask) P(data_head) P(data_tail) P(data_offset) P(data_size)
  P(aux_head) P(aux_tail) P(aux_offset) P(aux_size)
  printf("sizeof.page %zu\n", sizeof(struct perf_event_mmap_page));
  H(type) H(misc) H(size)
  printf("sizeof.header %zu\n", sizeof(struct perf_event_header));
  C(PERF_SAMPLE_IP) C(PERF_SAMPLE_TID) C(PERF_SAMPLE_TIME) C(PERF_SAMPLE_ADDR) C(PERF_SAMPLE_ID)
  C(PERF_SAMPLE_CPU) C(PERF_SAMPLE_PERIOD) C(PERF_SAMPLE_STREAM_ID) C(PERF_SAMPLE_WEIGHT)
  C(PERF_SAMPLE_IDENTIFIER) C(PERF_SAMPLE_DATA_SRC) C(PERF_SAMPLE_WEIGHT_STRUCT)
  C(PERF_RECORD_MMAP) C(PERF_RECORD_LOST) C(PERF_RECORD_COMM) C(PERF_RECORD_EXIT)
  C(PERF_RECORD_THROTTLE) C(PERF_RECORD_UNTHROTTLE) C(PERF_RECORD_FORK) C(PERF_RECORD_SAMPLE)
  C(PERF_RECORD_MMAP2) C(PERF_RECORD_LOST_SAMPLES)
  C(PERF_RECORD_MISC_CPUMODE_MASK) C(PERF_RECORD_MISC_KERNEL) C(PERF_RECORD_MISC_USER)
  C(PERF_RECORD_MISC_MMAP_DATA) C(PERF_RECORD_MISC_COMM_EXEC) C(PERF_RECORD_MISC_EXACT_IP)
  C(PERF_EVENT_IOC_SET_OUTPUT) C(PERF_FORMAT_LOST)
  F(mmap) F(comm) F(freq) F(task) F(watermark) F(mmap_data) F(sample_id_all) F(mmap2)
  F(comm_exec) F(use_clockid) F(inherit) F(inherit_thread)
  { struct perf_event_attr a = {0}; a.precise_ip = 3; unsigned long long w;
    __builtin_memcpy(&w, (char *)&a + 40, 8); printf("flag.precise_ip %llu\n", w); }
  return 0;
}
"""


def _compile_and_run(tmp_path: Path, program: str) -> dict[str, int]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not Path("/usr/include/linux/perf_event.h").exists():
        pytest.skip("no C compiler or linux/perf_event.h to cross-check against")
    src = tmp_path / "sampling.c"
    src.write_text(program)
    exe = tmp_path / "sampling"
    subprocess.run([cc, "-o", str(exe), str(src)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {key: int(value) for key, value in (line.split() for line in out.splitlines())}


def test_sampling_layout_matches_system_header(tmp_path: Path) -> None:
    """perf_event_mmap_page, perf_event_header, sample_type bits, record types, misc bits and the
    sampling flag bits, each against the C compiler's view of the installed uapi header."""
    found = _compile_and_run(tmp_path, SAMPLING_C_PROGRAM)
    page = abi.PerfEventMmapPage
    for key, value in found.items():
        kind, _, name = key.partition(".")
        if kind == "page":
            assert getattr(page, name).offset == value, name
        elif kind == "header":
            assert getattr(abi.PerfEventHeader, name).offset == value, name
        elif kind == "const":
            assert getattr(abi, name) == value, name
        elif kind == "flag" and name == "precise_ip":
            attr = abi.PerfEventAttr()
            attr.precise_ip = 3
            assert attr.flags == value and attr.precise_ip == 3
        elif kind == "flag":
            assert 1 << abi.FLAG_BITS[name] == value, name
    assert found["sizeof.page"] == ctypes.sizeof(page) == 1088
    assert found["sizeof.header"] == ctypes.sizeof(abi.PerfEventHeader) == 8
    assert (found["page.data_head"], found["page.data_tail"]) == (abi.DATA_HEAD_OFFSET, abi.DATA_TAIL_OFFSET)


def test_precise_ip_is_a_two_bit_field() -> None:
    attr = abi.make_attr(0, 0, flags={"disabled": True, "mmap_data": True})
    attr.precise_ip = 2
    assert attr.precise_ip == 2 and attr.flag("disabled") and attr.flag("mmap_data")
    assert attr.flags == (1 << 0) | (2 << 15) | (1 << 17)
    with pytest.raises(ValueError, match=r"0\.\.3"):
        attr.precise_ip = 4


def test_make_attr_sampling_fields_land_in_the_unions() -> None:
    attr = abi.make_attr(1, 2, sample_period=97, sample_type=abi.PERF_SAMPLE_IP, wakeup=4096, clockid=1)
    raw = bytes(attr)
    assert int.from_bytes(raw[16:24], sys.byteorder) == 97  # sample_period / sample_freq
    assert int.from_bytes(raw[24:32], sys.byteorder) == abi.PERF_SAMPLE_IP
    assert int.from_bytes(raw[48:52], sys.byteorder) == 4096  # wakeup_events / wakeup_watermark
    assert int.from_bytes(raw[92:96], sys.byteorder) == 1  # clockid
