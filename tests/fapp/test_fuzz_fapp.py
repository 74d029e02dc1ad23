"""Fuzzing the fapp surface with the fault suite's classes (issue 28): real measurements and
generated XML, damaged, through ``fapp``, ``fapp --json`` and ``import fapp``, in-process.

Each case starts from a real A64FX measurement (a few of its sets and thread rows, copied from the
shared reference data at run time) or from a generated XML export (fapp's nesting or the PMU
document's bare ``<event>`` form), and applies one to three mutations: CSV cells (Unicode digits,
64-bit overflow, 400 digits, quotes, NUL, 2**64 - 1), CSV lines (deleted, doubled, cut, a flipped
byte, a BOM), info.json values and types (10**400, 1e999, NaN, lone surrogates, 40 levels deep,
wrong types), XML structure (empty root, missing CNTVCT, nested events, entities, deep nesting,
unknown encodings) and file kinds (a FIFO, /dev/zero, /dev/null, a folder, a dangling or looping
link in place of a file or of the folder). Every case must end, under a per-case alarm, with exit 0,
1 or 2, exit 2 with one ``sectormon:`` line, and a written import must replay: never a traceback.
A failing case prints its seed, which reproduces it alone (``run_case(seed, ...)``).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sectormon.session.replay import final_frame
from tests.fapp.test_fuzz import run_cli

BLOCKS = 25
CASES_PER_BLOCK = 420
assert BLOCKS * CASES_PER_BLOCK >= 10_000  # the count for the fapp surface
MEASUREMENTS = ("nbody.29503716.0", "axhelm2.29503716.1", "dtrn3.29503716.2", "elecur.29503716.0")
SETS = ("pa1", "pa2", "pa4", "pa8", "pa9", "pa16")

CELLS = (
    "", "-1", "1e3", "0x10", "²", "２", "١٢", " 7 ", '"5"', "5\x00", str(2**64), str(2**64 - 1),
    "9" * 400, "NaN", "-0", "+5", "1_000", "0" * 30 + "1", "x" * 5000,
)  # fmt: skip
INFO_VALUES = (
    "1" * 400, "1e999", "-1e999", "NaN", "Infinity", '"\\ud800"', '"a\\udfffb"', "[" * 40 + "]" * 40,
    "[]", "{}", "true", "null", '"x"', "0", "-1", "1e308", "1e-320", "18446744073709551616",
    '"' + "y" * 3000 + '"', '{"memory_bandwidth_gb_s_per_cmg": 0}', '{"a": ' * 30 + "1" + "}" * 30,
)  # fmt: skip
INFO_KEYS = (
    "cntfrq_hz", "cmg", "variant", "vector_length_bits", "cores_per_node", "cpu_frequency_ghz",
    "workbook_constants", "region_name", "measured_region", "kind", "spawn",
)  # fmt: skip
XML_CODES = [0x11, 0x8, 0x3, 0x4, 0x16, 0x17, 0x300, 0x1E0, 0x3E0, 0x3E8, 0x309]
XML_DAMAGE = (
    "<fapp/>", "<fapp></fapp>", "", "<?xml version='1.0' encoding='klingon'?><fapp/>",
    "<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>", "<a>" * 2000 + "</a>" * 2000,
    "<fapp><event name='0x0011'><event name='0x8'>1</event></event></fapp>",
    "<fapp><event>5</event></fapp>", "<fapp><event name='0x11'>5</event><event name='0x11'>6</event></fapp>",
    "<fapp><event name='CNTVCT'>1</event></fapp>", "<fapp><event name='0x0011'>&#xD800;</event></fapp>",
)  # fmt: skip


def _real_csv(rng: random.Random, text: str) -> str:
    """A real export cut to 1-4 thread rows: the cases stay small, the counts stay real."""
    lines = text.splitlines()
    return "\n".join(lines[: 1 + rng.randint(1, 4)]) + "\n"


def _generated_xml(rng: random.Random) -> str:
    """fapp's nesting (threads, CNTVCT, PMCCNTR) or the PMU document's bare form (counts only)."""
    codes = rng.sample(XML_CODES, rng.randint(1, 8))
    if rng.random() < 0.5:
        events = "".join(f'<event name="0x{c:04x}">{rng.randrange(10**9)}</event>\n' for c in codes)
        return f'<?xml version="1.0"?>\n<fapp>\n{events}</fapp>\n'
    out = ['<?xml version="1.0"?>', "<fapp><process id='0'><region name='k' number='1'>"]
    for thread in range(rng.randint(1, 3)):
        out.append(f"<thread id='{thread}'><cpupa>")
        out.append(f"<event name='CNTVCT'>{rng.randrange(1, 10**9)}</event>")
        out.append(f"<event name='PMCCNTR'>{rng.randrange(1, 10**10)}</event>")
        out += [f"<event name='0x{c:04x}'>{rng.randrange(10**9)}</event>" for c in codes]
        out.append("</cpupa></thread>")
    out.append("</region></process></fapp>")
    return "\n".join(out) + "\n"


def _mutate_csv(rng: random.Random, text: str) -> bytes:
    lines = text.split("\n")
    kind = rng.choice(("cell", "cell", "cell", "header", "line", "flip", "bom"))
    i = rng.randrange(1, max(2, len(lines) - 1)) if kind != "header" else 0
    if kind in ("cell", "header") and i < len(lines) and "," in lines[i]:
        cells = lines[i].split(",")
        j = rng.randrange(1, len(cells))
        cells[j] = rng.choice(CELLS) if kind == "cell" else rng.choice(("0xZZ", "-", "", cells[1], "0x0011"))
        lines[i] = ",".join(cells)
    elif kind == "line" and i < len(lines):
        action = rng.choice(("delete", "double", "cut"))
        if action == "delete":
            del lines[i]
        elif action == "double":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if kind == "flip" and data:
        pos = rng.randrange(len(data))
        data = data[:pos] + bytes([data[pos] ^ (1 << rng.randrange(8))]) + data[pos + 1 :]
    if kind == "bom":
        data = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    return data


def _mutate_info(rng: random.Random, text: str) -> bytes:
    if rng.random() < 0.1:
        return rng.choice((b"", b"[]", b"null", b"{", b"\xff\xfe{}", b"\xef\xbb\xbf{}"))
    try:
        info = json.loads(text)
    except ValueError:  # damaged by an earlier mutation of this case
        return b"{"
    if not isinstance(info, dict):
        return b"{"
    key = rng.choice(INFO_KEYS)
    info[key] = "@@"
    return json.dumps(info).replace('"@@"', rng.choice(INFO_VALUES)).encode()


def _mutate_xml(rng: random.Random, text: str) -> bytes:
    kind = rng.choice(("replace", "drop", "value", "cut"))
    if kind == "replace":
        return rng.choice(XML_DAMAGE).encode()
    lines = text.split("\n")
    events = [i for i, line in enumerate(lines) if "<event" in line] or [0]
    i = rng.choice(events)
    if kind == "drop":
        del lines[i]
    elif kind == "value":
        lines[i] = lines[i].replace(">", f">{rng.choice(CELLS)}", 1)
    else:
        return text.encode()[: rng.randrange(len(text) + 1)]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def _odd_kind(rng: random.Random, path: Path) -> None:
    """Put something that is no regular file where ``path`` was."""
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    kind = rng.choice(("fifo", "zero", "null", "folder", "dangling", "loop", "empty"))
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("zero", "null"):
        path.symlink_to(f"/dev/{kind}")
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "loop":
        path.symlink_to(path)
    else:
        path.write_bytes(b"")


def build_case(rng: random.Random, sources: dict[str, dict[str, str]], folder: Path) -> None:
    """A small measurement folder, damaged."""
    folder.mkdir()
    if rng.random() < 0.25:
        stems = [f"sc{n}" for n in range(1, rng.randint(1, 3) + 1)]
        files = {f"{stem}.xml": _generated_xml(rng) for stem in stems}
    else:
        measurement = sources[rng.choice(sorted(sources))]
        chosen = rng.sample(SETS, rng.randint(1, 3))
        files = {f"{name}.csv": _real_csv(rng, measurement[name]) for name in chosen}
        if rng.random() < 0.8:
            files["info.json"] = measurement["info.json"]
    for name, text in files.items():
        (folder / name).write_text(text)
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(sorted(files))
        path = folder / name
        if rng.random() < 0.1:
            _odd_kind(rng, path)
        elif path.is_file() and not path.is_symlink():
            text = path.read_bytes().decode("utf-8", "surrogateescape")
            if name == "info.json":
                data = _mutate_info(rng, text)
            elif name.endswith(".xml"):
                data = _mutate_xml(rng, text)
            else:
                data = _mutate_csv(rng, text)
            path.write_bytes(data)


COMMANDS: tuple[Callable[[Path, Path], list[str]], ...] = (
    lambda folder, out: ["fapp", str(folder), "--json"],
    lambda folder, out: ["fapp", str(folder), "--width", "100"],
    lambda folder, out: ["import", "fapp", str(folder), "-o", str(out)],
)


def run_case(seed: int, sources: dict[str, dict[str, str]], work: Path) -> None:
    """One seeded case; any failure names its seed."""
    rng = random.Random(seed)
    folder = work / f"case-{seed}"
    build_case(rng, sources, folder)
    target = folder
    if rng.random() < 0.03:  # the folder argument itself of another kind
        target = work / f"odd-{seed}"
        _odd_kind(rng, target)
    out = work / f"case-{seed}.jsonl"
    argv = COMMANDS[seed % len(COMMANDS)](target, out)
    started = time.monotonic()
    try:
        code, stdout, err = run_cli(argv)
    except Exception as exc:  # a traceback: the case fails with its seed
        raise AssertionError(f"seed {seed}: {argv}: {type(exc).__name__}: {exc}") from exc
    assert time.monotonic() - started < 5, f"seed {seed}: {argv} took over 5 s"
    assert code in (0, 1, 2), (seed, argv, code, err)
    if code != 0:  # warnings, then one error line
        assert err and err[-1].startswith("sectormon: "), (seed, argv, err)
        assert all(line.startswith("sectormon: warning: ") for line in err[:-1]), (seed, argv, err)
    elif argv[0] == "fapp" and argv[-1] == "--json":
        assert isinstance(json.loads(stdout), dict), seed
    elif argv[0] == "import" and seed % 4 == 2:  # every 4th import is replayed whole
        _, frame, _ = final_frame(out)
        assert frame.total is not None, seed


@pytest.fixture(scope="module")
def sources(fapp_dir: Path) -> dict[str, dict[str, str]]:
    """The real measurements' texts (read once; each case writes its own small copy)."""
    out: dict[str, dict[str, str]] = {}
    for stem in MEASUREMENTS:
        folder = fapp_dir / stem
        out[stem] = {name: (folder / f"{name}.csv").read_text() for name in SETS}
        out[stem]["info.json"] = (folder / "info.json").read_text()
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("block", range(BLOCKS))
def test_fuzz_fapp(sources: dict[str, dict[str, str]], tmp_path: Path, block: int) -> None:
    ran = 0
    for seed in range(block * CASES_PER_BLOCK, (block + 1) * CASES_PER_BLOCK):
        run_case(seed, sources, tmp_path)
        ran += 1
    assert ran == CASES_PER_BLOCK
