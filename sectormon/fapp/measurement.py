"""A fapp measurement folder read whole: its export files (CSV or XML), ``info.json``, one region.

A folder holds one export per run (event set): the CPU PA report's ``pa1`` .. ``pa17`` or any
``event_raw`` sets (the PMU document's ``sc1`` .. ``sc5``), each as ``.csv`` or ``.xml``. When a
set has both (the document's section 6.4 writes both), the CSV is read. CNTFRQ comes from
``info.json`` (``cntfrq_hz``), else from a FAPP-info section, else the A64FX's 100 MHz with a
warning: every time-based metric depends on it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sectormon.errors import DataError
from sectormon.fapp.csvread import parse_cpupa
from sectormon.fapp.model import (
    CPU_CYCLES_CODE,
    DEFAULT_CNTFRQ_HZ,
    DEFAULT_VECTOR_LENGTH_BITS,
    TIME_SET,
    U64_MAX,
    EventSet,
    Measurement,
    shown,
    valid_cmg,
)
from sectormon.fapp.names import a64fx_profile
from sectormon.fapp.xmlread import parse_cpupa_xml
from sectormon.files.lines import MIB
from sectormon.files.regular import is_regular, open_input
from sectormon.files.text import printable

SUFFIXES = (".csv", ".xml")
"""Export formats, in order of preference when a set has both."""
INFO_FILE = "info.json"
_SET_RE = re.compile(r"^pa(\d+)$")
_NATURAL_RE = re.compile(r"(\d+)")


def _natural_key(stem: str) -> tuple[object, ...]:
    """``sc2`` before ``sc10``: digit runs compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in _NATURAL_RE.split(stem))


EXPORT_CAP = 64 * MIB
"""The largest export read: a fapp CSV of 48 threads x 100 regions is under 2 MiB; a bigger file is
not an export (``/dev/zero`` linked in, a cut binary) and would only fill memory."""
INFO_CAP = 1 * MIB
INFO_DEPTH = 32
"""How deep info.json may nest: its keys are flat numbers and strings; a recording carries it whole,
and a reader of recordings refuses deeper nesting."""


def event_set_files(directory: Path) -> tuple[list[Path], list[str]]:
    """The export files of a measurement folder: ``pa<N>`` by N when there are any, else every
    set by name (digits as numbers); per set its ``.csv``, else its ``.xml``. Second: one line per
    export-named entry that is not a regular file (a FIFO, a device, a folder), which is skipped:
    it cannot be read to an end, and it is said, not silently left out."""
    by_stem: dict[str, dict[str, Path]] = {}
    skipped: list[str] = []
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        raise DataError(str(directory), None, f"cannot list the folder ({exc.strerror or exc})") from None
    for p in entries:
        suffix = p.suffix.lower()
        if suffix not in SUFFIXES:
            continue
        if is_regular(str(p)):
            by_stem.setdefault(p.stem, {})[suffix] = p
        else:
            skipped.append(f"skipped {_not_regular(p)}")
    stems = [s for s in by_stem if _SET_RE.match(s)] or list(by_stem)
    stems.sort(key=_natural_key)
    files = [next(by_stem[s][suffix] for suffix in SUFFIXES if suffix in by_stem[s]) for s in stems]
    return files, skipped


def _not_regular(path: Path) -> str:
    """Why ``path`` is no export, in the words of the shared input rule (``... is a named pipe``)."""
    try:
        open_input(str(path), "export").close()
    except DataError as exc:
        return str(exc)
    return f"{printable(str(path))}: not a regular file"


def _read_capped(path: Path, what: str, cap: int) -> bytes:
    """A regular file's bytes (never a FIFO or device: :func:`open_input`), at most ``cap``."""
    with open_input(str(path), what) as stream:
        try:
            data = stream.read(cap + 1)
        except OSError as exc:
            raise DataError(printable(str(path)), None, f"cannot read ({exc.strerror or exc})") from None
    if len(data) > cap:
        raise DataError(
            printable(str(path)),
            None,
            f"larger than {cap // MIB} MiB",
            "check the file",
        )
    return data


def read_export(path: str | Path) -> EventSet:
    """Read one export file (CSV or XML, by its suffix); the set is named by the file's stem."""
    p = Path(path)
    data = _read_capped(p, "export", EXPORT_CAP)
    if p.suffix.lower() == ".xml":
        return parse_cpupa_xml(data, str(p), p.stem)
    return parse_cpupa(data, str(p), p.stem)


def _literal_line(text: str, literal: str) -> int:
    """The line of the first ``literal`` outside a JSON string (the json module does not say)."""
    in_string = escaped = False
    line = 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == literal[0] and text.startswith(literal, i):
            return line
    return 1


class _NotJson(Exception):
    """A value Python's json accepts but JSON (and so a recording) cannot hold: NaN, Infinity, a
    number out of range. ``args``: (the literal as written, the problem)."""


def _refuse_constant(name: str) -> float:
    raise _NotJson(name, f"{name} is not a JSON number")


def _bounded_int(text: str) -> int:
    """A JSON integer within 64 bits: a longer one is no count or setting, and would overflow
    every float it meets (cntfrq_hz, cpu_frequency_ghz)."""
    digits = text.lstrip("-")
    if len(digits) > 20 or int(digits) > U64_MAX:
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(digits)} digits)"
        raise _NotJson(text, f"{shown} does not fit in 64 bits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(text, f"{text[:24]} is out of range for a number")
    return value


def _check_tree(value: object, path: Path, where: str, depth: int = 0) -> None:
    """Refuse what a recording could not carry: lone surrogates (not Unicode text) and nesting
    deeper than :data:`INFO_DEPTH`."""
    if depth > INFO_DEPTH:
        raise DataError(str(path), None, f"nested deeper than {INFO_DEPTH} levels", "fix or remove info.json")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError(
                str(path),
                None,
                f"the string {printable(where) or 'at the top'} holds a lone surrogate "
                f"({printable(value[:40])}): not Unicode text",
                "write the character itself, or a valid \\ud83d\\ude00 pair",
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_tree(key, path, f"key {key}", depth + 1)
            _check_tree(item, path, f"{where}.{key}" if where else key, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_tree(item, path, f"{where}[{index}]", depth + 1)


def read_info(directory: Path) -> dict[str, Any]:
    """``info.json`` of a folder (``{}`` without one); strict JSON, a leading UTF-8 BOM allowed.

    Only what a recording can carry is accepted (an import copies info.json into its header):
    numbers finite and integers within 64 bits, strings of Unicode text, at most 32 levels deep.
    An ``info.json`` that is no regular file (a FIFO, a folder) is an error, not skipped.
    """
    path = directory / INFO_FILE
    if not os.path.lexists(path):
        return {}
    data = _read_capped(path, INFO_FILE, INFO_CAP)
    text = ""
    try:
        text = data.decode("utf-8-sig")
        info = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float
        )
    except json.JSONDecodeError as exc:
        raise DataError(str(path), exc.lineno, f"bad JSON ({exc.msg})", "fix or remove info.json") from None
    except _NotJson as exc:
        literal, problem = exc.args
        raise DataError(str(path), _literal_line(text, literal), problem, "write a number or null") from None
    except RecursionError:
        raise DataError(str(path), None, "bad JSON (nested too deeply)", "fix or remove info.json") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            str(path), None, f"not UTF-8 text ({exc.reason})", "fix or remove info.json"
        ) from None
    if not isinstance(info, dict):
        raise DataError(str(path), 1, "info.json is not a JSON object", "fix or remove info.json")
    _check_tree(info, path, "")
    return info


CNTFRQ_RANGE_HZ = (1e3, 1e10)
"""Timer frequencies taken as real: the A64FX's is 100 MHz, Arm's generic timers run at 1 MHz to 1 GHz."""


def _plausible_cntfrq(hz: float) -> bool:
    return CNTFRQ_RANGE_HZ[0] <= hz <= CNTFRQ_RANGE_HZ[1]


_FREQ_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*(hz|khz|mhz|ghz)?\s*$", re.IGNORECASE)
_FREQ_UNITS = {None: 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def _info_frequency(sets: Mapping[str, EventSet]) -> float | None:
    """CNTFRQ from a FAPP-info section (``Timer clock frequency``), if any file has a positive one."""
    for event_set in sets.values():
        for key, value in event_set.info.items():
            lowered = key.lower()
            if ("timer" in lowered and "freq" in lowered) or "cntfrq" in lowered:
                match = _FREQ_RE.match(value)
                if match:
                    unit = match.group(2).lower() if match.group(2) else None
                    hz = float(match.group(1)) * _FREQ_UNITS[unit]
                    if _plausible_cntfrq(hz):
                        return hz
    return None


def valid_vector_length(bits: float) -> bool:
    """SVE vector lengths: multiples of 128 bits up to 2048 (512 on the A64FX)."""
    return float(bits).is_integer() and 128 <= bits <= 2048 and bits % 128 == 0


def _info_vector_length(sets: Mapping[str, EventSet]) -> int | None:
    for event_set in sets.values():
        for key, value in event_set.info.items():
            if "vector length" in key.lower():
                digits = re.match(r"\s*(\d{1,6})\b", value)
                if digits and valid_vector_length(float(digits.group(1))):
                    return int(digits.group(1))
    return None


def _vector_length(info: Mapping[str, Any], directory: Path) -> float | None:
    bits = positive_number(info, "vector_length_bits", directory)
    if bits is not None and not valid_vector_length(bits):
        raise DataError(
            str(directory / INFO_FILE),
            None,
            "vector_length_bits must be a multiple of 128 from 128 to 2048, "
            f"not {info['vector_length_bits']!r}",
        )
    return bits


def positive_number(info: Mapping[str, Any], key: str, path: Path) -> float | None:
    """``info[key]`` as a positive finite number; ``None`` when absent; else a one-line error."""
    value = info.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise DataError(str(path / INFO_FILE), None, f"{key} must be a positive number, not {value!r}")
    return float(value)


def _check_part(info: Mapping[str, Any], directory: Path, warnings: list[str]) -> None:
    """``cmg`` and ``variant`` of info.json: a wrong CMG is an error, a part the a64fx profile does
    not know a warning (its energy factors then are the 48-core parts', as for no variant)."""
    path = str(directory / INFO_FILE)
    if "cmg" in info and not valid_cmg(info["cmg"]):
        raise DataError(path, None, f"cmg must be a CMG number (0, 1, ...), not {info['cmg']!r}")
    variant = info.get("variant")
    if variant is None:
        return
    if not isinstance(variant, str) or not variant:
        raise DataError(path, None, f"variant must be an A64FX part like '24c-2.6GHz', not {variant!r}")
    profile = a64fx_profile(variant)
    if profile is not None and profile.variant != variant:
        warnings.append(
            f"{path}: variant {shown(variant)} is not a part the a64fx profile knows: "
            "its default energy factors (the 48-core parts') apply"
        )


def _select(
    sets: dict[str, EventSet], region: str | None, directory: Path
) -> tuple[dict[str, EventSet], list[str]]:
    """Keep one region of one process in every set (a report is per process and region)."""
    regions: dict[str, None] = {}
    procs: dict[tuple[int, int], None] = {}
    for event_set in sets.values():
        for row in event_set.rows:
            regions[row.region_name] = None
            procs[(row.spawn, row.process)] = None
    if region is None:
        if len(regions) > 1:
            raise DataError(
                str(directory),
                None,
                f"several measured regions ({', '.join(map(shown, regions))})",
                "choose one with --region NAME",
            )
        region = next(iter(regions))
    elif region not in regions:
        raise DataError(
            str(directory),
            None,
            f"no region {region!r} (found: {', '.join(map(shown, regions))})",
            "check --region",
        )
    warnings: list[str] = []
    proc = next(iter(procs))
    if len(procs) > 1:
        warnings.append(f"several processes in the data; using spawn {proc[0]} process {proc[1]}")
    kept: dict[str, EventSet] = {}
    for name, event_set in sets.items():
        rows = tuple(r for r in event_set.rows if r.region_name == region and (r.spawn, r.process) == proc)
        kept[name] = EventSet(event_set.name, event_set.path, event_set.codes, rows, event_set.info)
    return kept, warnings


def read_measurement(path: str | Path, region: str | None = None) -> Measurement:
    """Read a measurement folder (all its exports + optional ``info.json``), or a single export file."""
    p = Path(path)
    skipped: list[str] = []
    if os.path.isdir(p):
        directory = p
        files, skipped = event_set_files(p)
        if not files:
            raise DataError(
                str(p),
                None,
                "no cpupa export files (pa1.csv ..., sc1.csv ... or .xml)"
                + (f"; {len(skipped)} not regular files skipped: {skipped[0]}" if skipped else ""),
                "give a fapp measurement folder",
            )
        info = read_info(p)
    elif not os.path.lexists(p) and len(p.name) < 256:
        raise DataError(str(p), None, "no such file or directory", "give a fapp measurement folder")
    else:
        # One export file; read_export refuses a FIFO, a device or a too long name in one line.
        files, directory = [p], p.parent
        info = {}
    sets: dict[str, EventSet] = {}
    for file in files:
        event_set = read_export(file)
        sets[event_set.name] = event_set
    sets, warnings = _select(sets, region, directory)
    warnings[:0] = skipped
    cntfrq = positive_number(info, "cntfrq_hz", directory)
    if cntfrq is not None and not _plausible_cntfrq(cntfrq):
        raise DataError(
            str(directory / INFO_FILE),
            None,
            f"cntfrq_hz {info['cntfrq_hz']!r} is not a timer frequency",
            "1 kHz .. 10 GHz; the A64FX's is 100 MHz",
        )
    if cntfrq is None:
        cntfrq = _info_frequency(sets)
    if cntfrq is None:
        cntfrq = float(DEFAULT_CNTFRQ_HZ)
        # Without any CNTVCT the frequency converts nothing: no warning about it.
        if any(event_set.has_time for event_set in sets.values()):
            warnings.append(
                "CNTFRQ unknown (no info.json cntfrq_hz, no FAPP-info timer frequency): "
                f"assuming {DEFAULT_CNTFRQ_HZ} Hz"
            )
    _check_part(info, directory, warnings)
    vl_info = _vector_length(info, directory)
    vector_length = int(vl_info) if vl_info is not None else _info_vector_length(sets)
    inputs = [str(f) for f in files]
    if info:
        inputs.append(str(directory / INFO_FILE))
    return assemble(
        str(p),
        sets,
        info,
        cntfrq_hz=cntfrq,
        vector_length_bits=vector_length or DEFAULT_VECTOR_LENGTH_BITS,
        warnings=warnings,
        files=tuple(inputs),
    )


def assemble(
    path: str,
    sets: dict[str, EventSet],
    info: Mapping[str, Any],
    *,
    cntfrq_hz: float,
    vector_length_bits: int,
    warnings: list[str],
    files: tuple[str, ...] = (),
) -> Measurement:
    """A :class:`Measurement` of selected sets: its threads, and a warning per thread a set lacks
    and per thread without a time (the rule both the folder reader and a recording's rebuild use)."""
    threads: dict[int, None] = {}
    for event_set in sets.values():
        for thread in event_set.threads():
            threads[thread] = None
    for name, event_set in sets.items():
        have = set(event_set.threads())
        lacking = [t for t in threads if t not in have]
        if lacking:
            warnings.append(f"{name}: no row for thread(s) {', '.join(map(str, lacking))}")
    untimed = _untimed(sets, warnings)
    return Measurement(
        path=path,
        sets=sets,
        info=info,
        cntfrq_hz=cntfrq_hz,
        vector_length_bits=vector_length_bits,
        threads=tuple(sorted(threads)),
        warnings=tuple(warnings),
        untimed=untimed,
        files=files,
    )


def _untimed(sets: Mapping[str, EventSet], warnings: list[str]) -> tuple[int, ...]:
    """Threads whose time-set row has no time (CNTVCT or its cycles 0), each with one warning.

    Such a row is broken or the thread never ran the region: averaging its 0 s into the CMG's
    mean time would shrink every CMG throughput and power, so it is left out of those averages.
    The cycles are the ones the set's ratios divide by (:meth:`ThreadRow.cycles`).
    """
    name = TIME_SET if TIME_SET in sets else next(iter(sets), None)
    if name is None:
        return ()
    time_set = sets[name]
    if not time_set.has_time:
        # The PMU document's XML form: counts only. One warning for the file, not one per thread.
        warnings.append(
            f"{time_set.path}: the export has no CNTVCT (timer ticks), so every time-based metric "
            "(seconds, GFLOPS, throughputs, powers) is n/a; the ratios of counts are not affected"
        )
        return time_set.threads()
    cycles_column = f"0x{CPU_CYCLES_CODE:04x}" if CPU_CYCLES_CODE in time_set.codes else "PMCCNTR"
    out: list[int] = []
    for row in time_set.rows:
        zero = [col for col, v in (("CNTVCT", row.cntvct), (cycles_column, row.cycles())) if v == 0]
        if zero:
            out.append(row.thread)
            warnings.append(
                f"{time_set.path}:{row.line}: thread {row.thread} has {' and '.join(zero)} 0 in {name}: "
                "its time-based metrics are n/a and the CMG's time averages leave it out"
            )
    return tuple(out)
