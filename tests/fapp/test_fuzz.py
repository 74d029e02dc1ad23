"""Fuzzing fapp folders (CSV and XML exports, info.json) through ``sectormon fapp``, ``compare`` and
``import fapp``: byte flips, deleted lines, and fields replaced by 0, null, [], "x", NaN, Infinity,
1e308, 2**64 or a negative number.

Every case must end within 5 s with exit 0 (a JSON report that parses; warnings as ``sectormon:
warning:`` lines, and the warning the damage calls for) or exit 2 with one ``sectormon:`` line
naming the damaged file (and its line where the damage is in a line): never a traceback or a
hang. A folder that imports also compares with its import to the same metrics. The default run
takes 1,200 seeded cases; the ``slow`` ones 6,000 more.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from sectormon.cli import main
from sectormon.compare.sides import compare_paths
from sectormon.fapp.measurement import read_measurement

CASE_SECONDS = 5
TOKENS = ("0", "null", "[]", '"x"', "NaN", "Infinity", "1e308", str(2**64), "-1", "-7")
INT_CSV_COLUMNS = {
    2: "Spawn",
    3: "Process",
    4: "Thread",
    6: "Region_number",
    7: "Call",
    8: "CNTVCT",
    9: "PMCCNTR",
}
SETS = {
    "pa": {
        "pa1": (0x80C0, 0x80C1, 0x0017, 0x0018, 0x0325, 0x0326, 0x0121, 0x8000),
        "pa2": (0x0190, 0x0191, 0x0184, 0x0186, 0x0189, 0x018C, 0x018D, 0x018E),
        "pa8": (0x01A6, 0x01E0, 0x03E0, 0x03E8, 0x01A0, 0x01A1, 0x01A2, 0x01A3),
    },
    "sc": {
        "sc1": (0x0011, 0x0008, 0x0004, 0x0003, 0x0200, 0x0015, 0x0184, 0x0180),
        "sc2": (0x0011, 0x0016, 0x0017, 0x0300, 0x0018, 0x0308, 0x0309, 0x0182),
        "sc5": (0x0011, 0x0008, 0x01E0, 0x03E0, 0x03E8, 0x0023, 0x0024, 0x0261),
    },
}
HEADER = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR"
INFO = {"cntfrq_hz": 100_000_000, "cmg": 0, "vector_length_bits": 512, "variant": "24c-2.6GHz"}


def _rows(rng: random.Random, codes: tuple[int, ...]) -> list[tuple[int, int, int, dict[int, int]]]:
    rows = []
    for thread in (0, 1, 2):
        cntvct = rng.randrange(90_000_000, 110_000_000)
        cycles = cntvct * 22 + rng.randrange(1000)
        counts = {code: (cycles if code == 0x11 else rng.randrange(0, 4_000_000_000)) for code in codes}
        rows.append((thread, cntvct, cycles, counts))
    return rows


def _csv(codes: tuple[int, ...], rows: list[tuple[int, int, int, dict[int, int]]]) -> str:
    lines = ["FAPP-info,Timer clock frequency,100000000", HEADER + "".join(f",0x{c:04x}" for c in codes)]
    for thread, cntvct, cycles, counts in rows:
        values = "".join(f",{counts[c]}" for c in codes)
        lines.append(f"FAPP-cpupa,Thread,0,0,{thread},kernel,1,1,{cntvct},{cycles}{values}")
    return "\n".join(lines) + "\n"


def _xml(codes: tuple[int, ...], rows: list[tuple[int, int, int, dict[int, int]]]) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<fapp>",
        '<process id="0">',
        '<region name="kernel" number="1">',
    ]
    for thread, cntvct, cycles, counts in rows:
        out += [f'<thread id="{thread}">', "<cpupa>", f'<event name="CNTVCT">{cntvct}</event>']
        out.append(f'<event name="PMCCNTR">{cycles}</event>')
        out += [f'<event name="0x{c:04x}">{counts[c]}</event>' for c in codes]
        out += ["</cpupa>", "</thread>"]
    out += ["</region>", "</process>", "</fapp>"]
    return "\n".join(out) + "\n"


def build_folder(root: Path, family: str, fmt: str, seed: int = 1) -> Path:
    """A small measurement: three sets of the family, three threads, info.json; CSV or XML exports."""
    rng = random.Random(seed)
    folder = root / f"{family}-{fmt}"
    folder.mkdir(parents=True)
    for name, codes in SETS[family].items():
        rows = _rows(rng, codes)
        (folder / f"{name}.{fmt}").write_text(_csv(codes, rows) if fmt == "csv" else _xml(codes, rows))
    (folder / "info.json").write_text(json.dumps(INFO, indent=1) + "\n")
    return folder


# ------------------------------------------------------------------------------------------ mutations


@dataclass(frozen=True)
class Damage:
    """What a case did, and what the run must then say."""

    file: str
    line: int | None  # 1-based line of the damage, when it is in one line
    kind: str  # flip, delete, field
    column: str = ""  # for a field: which one (CSV column name, event name, info.json key)
    token: str = ""


def _replace_field(rng: random.Random, text: str, name: str, token: str) -> tuple[str, Damage]:
    lines = text.split("\n")
    if name == "info.json":
        info = json.loads(text)
        key = rng.choice(sorted(info))
        new = re.sub(rf'("{key}": )([^,\n]+)', lambda m: m.group(1) + token, text, count=1)
        line = 1 + text[: text.index(f'"{key}"')].count("\n")
        return new, Damage(name, line, "field", key, token)
    if name.endswith(".csv"):
        rows = [i for i, line in enumerate(lines) if line.startswith("FAPP-cpupa,")]
        i = rng.choice(rows)
        cells = lines[i].split(",")
        col = rng.choice([*INT_CSV_COLUMNS, *range(10, len(cells))])
        column = INT_CSV_COLUMNS.get(col, HEADER.split(",")[col] if col < 10 else lines[1].split(",")[col])
        cells[col] = token
        lines[i] = ",".join(cells)
        return "\n".join(lines), Damage(name, i + 1, "field", column, token)
    events = [i for i, line in enumerate(lines) if line.startswith("<event ")]
    i = rng.choice(events)
    column = lines[i].split('"')[1]
    lines[i] = re.sub(r">[^<]*<", f">{token}<", lines[i], count=1)
    return "\n".join(lines), Damage(name, i + 1, "field", column, token)


def mutate(rng: random.Random, folder: Path) -> Damage:
    """Damage one file of ``folder`` in place."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    target = rng.choice(files)
    data = target.read_bytes()
    kind = rng.choice(("flip", "delete", "field", "field"))
    if kind == "flip" and data:
        pos = rng.randrange(len(data))
        changed = bytearray(data)
        changed[pos] = rng.choice((changed[pos] ^ (1 << rng.randrange(8)), rng.randrange(256)))
        target.write_bytes(bytes(changed))
        return Damage(target.name, 1 + data[:pos].count(b"\n"), "flip")
    text = data.decode()
    if kind == "delete":
        lines = text.split("\n")
        i = rng.randrange(max(1, len(lines) - 1))
        del lines[i]
        target.write_text("\n".join(lines))
        return Damage(target.name, i + 1, "delete")
    new, damage = _replace_field(rng, text, target.name, rng.choice(TOKENS))
    target.write_text(new)
    return damage


# -------------------------------------------------------------------------------------------- checks


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout(f"a fuzz case ran over {CASE_SECONDS} s")


@contextlib.contextmanager
def _time_limit() -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str]) -> tuple[int, str, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with _time_limit(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue().splitlines()


def _is_count_column(damage: Damage) -> bool:
    return damage.column in ("CNTVCT", "PMCCNTR", "Thread", "Spawn", "Process", "Region_number", "Call") or (
        damage.column.startswith("0x")
    )


def check_exit(code: int, err: list[str], damage: Damage, folder: Path, context: str) -> None:
    """The exit and stderr contract of every case (module docstring)."""
    assert code in (0, 2), (context, damage, code, err)
    if code == 2:
        assert len(err) == 1 and err[0].startswith("sectormon: "), (context, damage, err)
        assert str(folder) in err[0], (context, damage, err)
        return
    assert all(
        line.startswith("sectormon: warning: ") or line.startswith("sectormon: wrote ") for line in err
    ), (
        context,
        damage,
        err,
    )
    if (
        damage.kind == "field"
        and damage.file != "info.json"
        and _is_count_column(damage)
        and damage.token != "0"
    ):
        raise AssertionError(f"{context}: {damage}: a count replaced by {damage.token} was accepted")
    if damage.kind == "field" and damage.file == "info.json":
        # Which values each key may take (null: as if absent); any other must be refused.
        accepted = {"cmg": ("0", "null"), "variant": ("null", '"x"')}.get(damage.column, ("null",))
        if damage.token not in accepted:
            raise AssertionError(f"{context}: {damage}: info.json with {damage.token} was accepted")


def check_error_line(code: int, err: list[str], damage: Damage, folder: Path) -> None:
    """A damaged count is refused naming its file and line."""
    if code != 2 or damage.kind != "field" or not _is_count_column(damage) or damage.token == "0":
        return
    if damage.file.endswith(".csv"):
        assert f"{folder / damage.file}:{damage.line}: " in err[0], (damage, err)
    elif damage.file.endswith(".xml"):
        assert f"{folder / damage.file}:" in err[0], (damage, err)


def check_warnings(code: int, err: list[str], damage: Damage, folder: Path, pristine: Path) -> None:
    """The warning the damage calls for, when the run went on."""
    if code != 0:
        return
    text = "\n".join(err)
    if damage.kind == "field" and damage.token == "0" and damage.column in ("CNTVCT", "PMCCNTR", "0x0011"):
        first = sorted(p.stem for p in folder.iterdir() if p.suffix in (".csv", ".xml"))[0]
        time_set = "pa1" if (folder / "pa1.csv").exists() or (folder / "pa1.xml").exists() else first
        if damage.file.startswith(time_set + ".") and not (damage.column == "PMCCNTR" and time_set == "sc1"):
            assert "0 in " + time_set in text, (damage, err)
    if damage.kind == "delete" and damage.file.endswith(".csv"):
        line = (pristine / damage.file).read_text().split("\n")[damage.line - 1] if damage.line else ""
        if line.startswith("FAPP-cpupa,Thread,"):
            thread = line.split(",")[4]
            assert f"no row for thread(s) {thread}" in text, (damage, err)
    if (damage.kind, damage.file, damage.column, damage.token) == ("field", "info.json", "variant", '"x"'):
        assert "variant x is not a part the a64fx profile knows" in text, (damage, err)


def same_metrics(folder: Path, imported: Path) -> None:
    """A folder that imports compares with its import to the same metrics (docs/fapp.md)."""
    m = read_measurement(folder)
    if m.cntfrq_hz > 1e9 or any(0x11 in s.codes for n, s in m.sets.items() if n in ("pa1", "pa2", "pa3")):
        return  # the documented limits of a rebuilt row (sectormon.fapp.from_recording)
    with _time_limit():
        cmp = compare_paths(str(folder), str(imported))
    for sc in cmp.scopes:
        for row in sc.rows:
            assert (row.base is None) == (row.other is None), (sc.scope, row.metric)
            if row.base is not None and row.other is not None and math.isfinite(row.base):
                assert row.other == pytest.approx(row.base, rel=1e-9), (sc.scope, row.metric)


COMMANDS: tuple[Callable[[Path, Path, Path], list[str]], ...] = (
    lambda folder, pristine, out: ["fapp", str(folder), "--json"],
    lambda folder, pristine, out: ["fapp", str(folder)],
    lambda folder, pristine, out: ["compare", str(pristine), str(folder), "--json"],
    lambda folder, pristine, out: ["import", "fapp", str(folder), "-o", str(out)],
)


def run_case(seed: int, bases: dict[str, Path], work: Path) -> None:
    rng = random.Random(seed)
    name = rng.choice(sorted(bases))
    pristine = bases[name]
    folder = work / f"case-{seed}"
    shutil.copytree(pristine, folder)
    damage = mutate(rng, folder)
    command = COMMANDS[seed % len(COMMANDS)]
    out = work / f"case-{seed}.jsonl"
    argv = command(folder, pristine, out)
    started = time.monotonic()
    code, stdout, err = run_cli(argv)
    assert time.monotonic() - started < CASE_SECONDS
    context = f"seed {seed}: {' '.join(argv[:2])} on {name}"
    check_exit(code, err, damage, folder, context)
    check_error_line(code, err, damage, folder)
    said = list(err)
    if code == 0 and argv[-1] == "--json":
        data: Any = json.loads(stdout)
        assert isinstance(data, dict)
        said += data.get("warnings", [])  # compare --json: the warnings are in the report
    check_warnings(code, said, damage, folder, pristine)
    if code == 0 and argv[0] == "import":
        same_metrics(folder, out)
    shutil.rmtree(folder)
    out.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz-bases")
    return {f"{f}-{fmt}": build_folder(root, f, fmt) for f in SETS for fmt in ("csv", "xml")}


def test_the_pristine_folders_are_clean(bases: dict[str, Path]) -> None:
    for folder in bases.values():
        code, stdout, err = run_cli(["fapp", str(folder), "--json"])
        assert code == 0 and err == [], err
        assert json.loads(stdout)["section3"]["cmg_total"]["power_total_W"] is not None


@pytest.mark.parametrize("block", range(12))
def test_fuzz(bases: dict[str, Path], tmp_path: Path, block: int) -> None:
    for seed in range(block * 100, block * 100 + 100):
        run_case(seed, bases, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(12, 72))
def test_fuzz_more(bases: dict[str, Path], tmp_path: Path, block: int) -> None:
    for seed in range(block * 100, block * 100 + 100):
        run_case(seed, bases, tmp_path)
