"""Several reader processes sharing one recording: the frames, errors and warnings of one process.

The file is cut into spans that each start a frame interval (sectormon.session.replay_spans); each reader
process sums its spans with a fresh aggregator; the parent takes the batches in file order. These
tests force 2 or 3 real reader processes on small spans (a few slices each, many spans per reader)
and compare everything a replay reports with the one-process replay of the same file.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
import random
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Mark, Slice
from sectormon.errors import SectormonError
from sectormon.io import RecordingError, open_recording
from sectormon.io.slice_keys import slice_time
from sectormon.session import replay_worker
from sectormon.session.frame_clock import FrameClock
from sectormon.session.replay import final_frame, replay_frames
from sectormon.session.replay_spans import SpanFinder
from tests.io.recording_synth import GROUPS, header, v1_lines
from tests.rows import row
from tests.session.test_replay import real_header, write


def churn(n: int, seed: int = 3) -> list[Slice | Mark]:
    """Slices where threads come, end, come back and move between cores, with an unknown unit,
    marks of every kind (an unknown one twice, far apart) and uneven slice lengths."""
    rng = random.Random(seed)
    names = list(GROUPS)
    items: list[Slice | Mark] = []
    t = 0.0
    cores = {tid: tid % 2 for tid in range(100, 106)}
    live = {100, 101, 102}
    for i in range(n):
        duration = rng.choice([0.02, 0.02, 0.05, 0.005])
        t = round(t + duration, 9)
        group = names[i % len(names)]
        ended: list[str] = []
        if rng.random() < 0.08 and len(live) > 1:
            gone = rng.choice(sorted(live))
            live.discard(gone)
            ended.append(f"thread:{gone}")
        if rng.random() < 0.08:
            live.add(rng.choice(sorted(set(cores) - live) or [100]))
        if rng.random() < 0.05:
            moved = rng.choice(sorted(live))
            cores[moved] = 1 - cores[moved]
        te = int(duration * 1e9)
        readings = [
            row(
                unit=f"thread:{tid}",
                core=cores[tid],
                cmg=0,
                group=group,
                time_enabled=te,
                time_running=te if rng.random() > 0.3 else te // 3,
                counts={e: rng.randrange(0, 10**9) for e in GROUPS[group]},
            )
            for tid in sorted(live)
        ]
        if i % 50 == 7:
            readings.append(row("bogus", None, None, group, te, te, {GROUPS[group][0]: 1}))
        items.append(Slice(t, i, duration, group, tuple(readings), overhead_s=i * 1e-5, ended=tuple(ended)))
        if i in (40, 300):
            items.append(Mark(t, "odd-kind", label=str(i)))
        elif i % 97 == 5:
            items.append(Mark(t, rng.choice(["baseline", "bookmark", "baseline-clear"]), label=str(i)))
    items.append(Mark(t, "end"))
    return items


def replay_all(path: Path, **kwargs: Any) -> tuple[list[str], int, list[str], int]:
    with open_recording(path) as s:
        frames = [json.dumps(f.to_json()) for f in replay_frames(s, **kwargs)]
        return frames, s.skipped, list(s.warnings), s.last_line


def outcome(path: Path, monkeypatch: pytest.MonkeyPatch, switch: str) -> Any:
    """What a replay with ``SECTORMON_REPLAY_WORKER=switch`` ends with: :func:`replay_all`'s
    results, or its one-line error."""
    monkeypatch.setenv(replay_worker.ENV_SWITCH, switch)
    try:
        return replay_all(path)
    except RecordingError as exc:
        return str(exc)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Small spans (a dozen slices); records the argument list of every reader process started."""
    monkeypatch.setattr(replay_worker, "SPAN_BYTES", 6000)
    started: list[list[str]] = []
    real_start = replay_worker._start

    def start(args: list[str]) -> Any:
        started.append(args)
        return real_start(args)

    monkeypatch.setattr(replay_worker, "_start", start)
    return started


@pytest.mark.parametrize("readers", ["2", "3"])
@pytest.mark.parametrize("interval", [1.0, 0.25, 0.1])
def test_shared_readers_give_the_frames_of_one_process(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch, readers: str, interval: float
) -> None:
    hdr = real_header()
    hdr["options"]["interval"] = interval
    path = write(tmp_path / "r.jsonl", churn(600), hdr)
    monkeypatch.setenv(replay_worker.ENV_SWITCH, readers)
    shared = replay_all(path)
    assert len(spans) == int(readers) and all(len(args) == 9 for args in spans)  # the span mode
    assert path.stat().st_size > 10 * 6000  # many spans per reader
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    assert shared == replay_all(path)
    frames, _, warnings, _ = shared
    assert len(frames) > 10
    assert sum("unknown mark kind 'odd-kind'" in w for w in warnings) == 1  # once, though 2 readers met it
    assert any("unknown unit 'bogus'" in w for f in frames for w in json.loads(f)["warnings"])


def test_shared_readers_from_to_and_final_frame(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "r.jsonl", churn(600), real_header())
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "2")
    window = replay_all(path, t_from=3.0, t_to=9.0)
    _, by_readers, stream_a = final_frame(path)
    assert len(spans) == 2 * 2
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    assert window == replay_all(path, t_from=3.0, t_to=9.0)
    _, alone, stream_b = final_frame(path)
    assert json.dumps(by_readers.to_json()) == json.dumps(alone.to_json())
    assert stream_a.last_line == stream_b.last_line


@pytest.mark.parametrize("where", ["bad JSON", "bad record", "back in time", "cut last line"])
def test_shared_readers_report_problems_as_one_process(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path = write(tmp_path / "r.jsonl", churn(600), real_header())
    lines = path.read_text().splitlines()
    target = len(lines) * 2 // 3  # well inside a later span
    if where == "bad JSON":
        lines[target] = lines[target][:-5]
    elif where == "bad record":
        lines[target] = lines[target].replace('"readings":[[', '"readings":[[3,', 1)
    elif where == "back in time":
        record = json.loads(lines[target])
        record["t"] = 0.5
        lines[target] = json.dumps(record, separators=(",", ":"))
    else:
        lines[-1] = lines[-1][:20]
    path.write_text("\n".join(lines) + ("" if where == "cut last line" else "\n"))
    outcomes = [outcome(path, monkeypatch, switch) for switch in ("3", "0")]
    assert outcomes[0] == outcomes[1]
    if where == "cut last line":
        assert any("last line is incomplete" in w for w in outcomes[0][2])
    else:
        assert isinstance(outcomes[0], str) and f":{target + 1}:" in outcomes[0]


def test_a_mistaken_boundary_is_caught_not_summed(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were a span to end inside a frame interval (a bug), the reader says so instead of
    splitting the interval between two aggregators."""
    path = write(tmp_path / "r.jsonl", churn(300), real_header())
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "2")
    # The children are other processes: the bug goes in through the child's own module.
    child_dir = tmp_path / "child"
    child_dir.mkdir()
    (child_dir / "sitecustomize.py").write_text(
        "from sectormon.session import replay_spans as spans\n"
        "real = spans.SpanFinder.span\n"
        "def span(self, k):\n"
        "    found = real(self, k)\n"
        "    if found is None or found[1] is None:\n"
        "        return found\n"
        "    begin, end = found\n"
        "    self._f.seek(begin.offset)\n"
        "    body = self._f.read(end - begin.offset)\n"
        "    cut = body.rfind(b'\\n', 0, len(body) - 1) + 1  # where the last line starts\n"
        "    return (begin, begin.offset + cut) if cut > 0 else found\n"
        "spans.SpanFinder.span = span\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(child_dir))
    with pytest.raises(Exception, match=r"does not end with a frame.*WORKER=0"):
        replay_all(path)


# ------------------------------------------------------------------------------------ the spans


def recording_bytes(times: list[float], marks: set[int], interval: float) -> bytes:
    hdr = header(interval=interval)
    out = io.StringIO()
    out.write(json.dumps({"schema": "sectormon/recording/2", **hdr}) + "\n")
    for i, t in enumerate(times):
        if i in marks:
            out.write(json.dumps({"schema": "sectormon/mark/2", "t": t, "kind": "bookmark"}) + "\n\n")
        out.write(
            f'{{"schema":"sectormon/slice/2","t":{t!r},"index":{i},"duration":0.01,"group":"G",'
            f'"overhead_s":0.0,"ended":[],"events":[],"readings":[]}}\n'
        )
    return out.getvalue().encode()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 0.2), min_size=1, max_size=120),
    st.sets(st.integers(0, 120)),
    st.sampled_from([0.1, 0.25, 1.0, 0.3]),
    st.integers(80, 3000),
)
def test_spans_cover_every_line_once_and_start_frame_intervals(
    steps: list[float], marks: set[int], interval: float, span_bytes: int
) -> None:
    times = [round(x, 6) for x in _cumulative(steps)]
    data = recording_bytes(times, marks, interval)
    finder = SpanFinder(io.BytesIO(data), len(data), span_bytes, interval, 0.0)
    # The slices a sequential reader closes frames at, by line start offset of the next line.
    clock = FrameClock(interval, 0.0)
    line_starts = [0]
    for line in data.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    frame_ends = set()
    for end, line in zip(line_starts[1:], data.splitlines(keepends=True), strict=True):
        t = slice_time(line)
        if t is not None and clock.due(t):
            frame_ends.add(end)
    covered = []
    for k in range(finder.count):
        found = finder.span(k)
        if found is None:
            continue
        begin, span_end = found
        stop = len(data) if span_end is None else span_end
        assert begin.offset < stop
        assert begin.offset == line_starts[1] or begin.offset in frame_ends  # a frame interval starts
        if begin.offset != line_starts[1]:
            before = data[: begin.offset].splitlines()[-1]
            assert slice_time(before) == begin.t_before
        covered.append((begin.offset, stop))
    # Together the spans are the file after its header, in order, without overlap.
    assert covered[0][0] == line_starts[1]
    assert covered[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(covered))


def _cumulative(steps: list[float]) -> list[float]:
    out, t = [], 0.0
    for step in steps:
        t += step
        out.append(t)
    return out


def test_slice_time_reads_a_line_as_json_does() -> None:
    base = '{"schema":"sectormon/slice/2","t":1.5,"index":0,"duration":0.1,"group":"G","ended":[],'
    assert slice_time((base + '"events":[],"readings":[]}').encode()) == 1.5
    # A second "t" key wins in JSON: the quick read must not be taken.
    assert slice_time((base + '"events":[],"readings":[],"t":7}').encode()) == 7.0
    assert slice_time((base + '"events":[],"readings":[],"t" : 7}').encode()) == 7.0
    assert slice_time((base + '"events":[["t"]],"readings":[]}').encode()) == 1.5  # an event named t
    assert slice_time(b'{"schema":"sectormon/mark/2","t":3.0,"kind":"end"}') is None
    assert slice_time(b'{"t":3.0,"schema":"sectormon/slice/2"}') == 3.0  # any key order
    assert slice_time(b'{"schema":"sectormon/slice/9","t":3.0}') is None  # newer: an error there
    assert slice_time(b'{"schema":"sectormon/slice/2","t":3.0') is None  # not JSON
    assert slice_time(b'{"schema":"sectormon/slice/2","t":"3"}') is None
    assert slice_time(b'{"schema":"sectormon/slice/1","t":2.0,"readings":[]}') == 2.0
    assert math.isnan(float("nan")) and slice_time(b'{"schema":"sectormon/slice/2","t":NaN}') is None


def test_readers_follow_the_switch_cpus_size_and_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = write(tmp_path / "r.jsonl", churn(200), real_header())
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    size = plain.stat().st_size
    monkeypatch.delenv(replay_worker.ENV_SWITCH, raising=False)
    cpus = {0, 1}
    monkeypatch.setattr(replay_worker.os, "sched_getaffinity", lambda pid: cpus)
    with (
        open_recording(plain) as s_plain,
        open_recording(packed) as s_packed,
        open_recording(plain, skip_bad=True) as s_skip,
    ):
        monkeypatch.setattr(replay_worker, "MIN_BYTES", size + 1)
        assert replay_worker.readers(s_plain) == 0  # small: read here
        monkeypatch.setattr(replay_worker, "MIN_BYTES", size)
        monkeypatch.setattr(replay_worker, "SPAN_BYTES", size // 4)
        assert replay_worker.readers(s_plain) == 1  # 2 CPUs: one reads, one builds frames
        assert replay_worker.readers(s_plain, frames=False) == 2  # final frame only: both read
        assert replay_worker.readers(s_skip, frames=False) == 1  # --skip-bad: one reader
        monkeypatch.setattr(replay_worker, "MIN_BYTES", packed.stat().st_size * replay_worker.GZIP_RATIO)
        assert replay_worker.readers(s_packed, frames=False) == 1  # gzip: one reader
        cpus.update(range(2, 32))
        assert replay_worker.readers(s_plain) == replay_worker.MAX_READERS_WITH_FRAMES
        assert replay_worker.readers(s_plain, frames=False) == replay_worker.MAX_READERS
        monkeypatch.setattr(replay_worker, "SPAN_BYTES", size)
        assert replay_worker.readers(s_plain) == 1  # under two spans: nothing to share
        monkeypatch.setenv(replay_worker.ENV_SWITCH, "3")
        assert replay_worker.readers(s_plain) == 3 and replay_worker.readers(s_packed) == 1
        monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
        assert replay_worker.readers(s_plain) == 0
        monkeypatch.setenv(replay_worker.ENV_SWITCH, "1")
        assert replay_worker.readers(s_plain) == 1
        cpus.intersection_update({0})
        assert replay_worker.readers(s_plain) == 0  # one CPU: two processes would only take turns


def test_stopping_early_kills_every_reader(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "r.jsonl", churn(1500), real_header())
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "3")
    children: list[Any] = []
    real_start = replay_worker._start

    def start(args: list[str]) -> Any:
        proc = real_start(args)
        children.append(proc)
        return proc

    monkeypatch.setattr(replay_worker, "_start", start)
    with open_recording(path) as s:
        frames = cast(Generator[Any, None, None], replay_frames(s))
        next(frames)
        frames.close()  # as a closed pipe (| head) or an exception in the caller does
    assert len(children) == 3 and all(proc.returncode is not None for proc in children)


def test_a_reader_that_dies_is_a_clear_error(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "r.jsonl", churn(600), real_header())
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "2")
    real_start = replay_worker._start

    def start(args: list[str]) -> Any:
        if args[-2] == "1":  # the second reader: killed at once, as the OOM killer might
            proc = real_start(args)
            proc.kill()
            return proc
        return real_start(args)

    monkeypatch.setattr(replay_worker, "_start", start)
    with pytest.raises(SectormonError, match=r"reader process ended early.*WORKER=0"):
        replay_all(path)


@pytest.mark.parametrize("layout", ["version 1", "keys reordered"])
def test_shared_readers_read_older_and_hand_written_layouts(
    tmp_path: Path, spans: list[list[str]], monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """Lines not in today's writer layout are found by a JSON parse at the span boundaries."""
    items = churn(400)
    path = tmp_path / "r.jsonl"
    if layout == "version 1":
        path.write_text("\n".join(v1_lines(items, real_header())) + "\n")
    else:
        lines = write(path, items, real_header()).read_text().splitlines()
        reordered = [lines[0]] + [json.dumps(dict(reversed(json.loads(line).items()))) for line in lines[1:]]
        path.write_text("\n".join(reordered) + "\n")
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "2")
    shared = replay_all(path)
    assert len(spans) == 2
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    assert shared == replay_all(path)
    assert len(shared[0]) > 5


_BASE: list[str] = []


def _base_lines(tmp: Path) -> list[str]:
    if not _BASE:
        _BASE.extend(write(tmp / "base.jsonl", churn(300), real_header()).read_text().splitlines())
    return list(_BASE)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["drop", "repeat", "swap", "cut", "garble", "blank", "back"]),
            st.integers(1, 10**6),
            st.integers(0, 10**6),
        ),
        min_size=1,
        max_size=3,
    ),
    st.booleans(),
)
@pytest.mark.slow
def test_damaged_recordings_give_span_readers_the_outcome_of_one_process(
    tmp_path_factory: pytest.TempPathFactory, damage: list[tuple[str, int, int]], skip_cut_end: bool
) -> None:
    """Lines dropped, repeated, swapped, cut, garbled, blanked or sent back in time anywhere: two
    span readers end as one process does, with the same frames, warnings and counts, or the same
    one-line error."""
    tmp = tmp_path_factory.mktemp("damaged")
    lines = _base_lines(tmp_path_factory.getbasetemp())
    for what, at, other in damage:
        i = 1 + at % (len(lines) - 1)  # never the header
        j = 1 + other % (len(lines) - 1)
        if what == "drop":
            del lines[i]
        elif what == "repeat":
            lines.insert(i, lines[i])
        elif what == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif what == "cut":
            lines[i] = lines[i][: other % max(1, len(lines[i]))]
        elif what == "garble":
            k = other % max(1, len(lines[i]))
            lines[i] = lines[i][:k] + "#" + lines[i][k + 1 :]
        elif what == "blank":
            lines.insert(i, "")
        else:
            try:
                record = json.loads(lines[i])
            except ValueError:  # a line damaged before: nothing to send back
                record = None
            if isinstance(record, dict) and isinstance(record.get("t"), float):
                record["t"] = record["t"] / 2
                lines[i] = json.dumps(record, separators=(",", ":"))
    path = tmp / "r.jsonl"
    path.write_text("\n".join(lines) + ("" if skip_cut_end else "\n"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_worker, "SPAN_BYTES", 5000)
        outcomes = [outcome(path, mp, switch) for switch in ("2", "0")]
    assert outcomes[0] == outcomes[1]
