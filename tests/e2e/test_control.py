"""perf's control protocol through the installed command, with ``perf stat`` as the peer.

One script drives ``perf stat --control fifo:`` and ``sectormon --control fifo:`` the same way
around the same program, which touches a known number of fresh pages in each phase when told to:
the script sends ``enable``/``disable`` between phases and waits for the ack before it starts the
next, so it knows which phases fell in enabled spans. The whole run's page faults of both tools
agree within 2 %, and hold the enabled phases' pages. ``--delay MS`` is checked against
``perf stat -D MS`` the same way, waiting for each tool to say it counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import first_frame, perf_available, read_jsonl, sectormon_command, workload
from tests.workloads.peer import final_count, json_args, perf_value

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.syscall,
    pytest.mark.skipif(
        not perf_available(),
        reason="needs `perf stat` as the peer, and perf_event_paranoid <= 2 "
        "(apt-get install linux-perf, or linux-tools-$(uname -r))",
    ),
]

TIMEOUT = 60.0
ACK = b"ack\n\x00"  # perf's: "ack\n" and its NUL


class Driven:
    """A tool running the phases workload: its stdin tells the program to go on, its stdout
    carries the program's lines (sectormon writes its frames to a file, perf stat to stderr)."""

    def __init__(self, argv: Sequence[str], phases: Sequence[object], pass_fds: Sequence[int] = ()) -> None:
        self.proc = subprocess.Popen(
            [*argv, *workload("phases.py", *phases)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
        )
        self._out = b""
        self.err = b""

    def line(self) -> str:
        """The program's next line on stdout (fails after TIMEOUT, or when the tool ends)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self._out:
            left = deadline - time.monotonic()
            assert left > 0, f"no line from the program: {self.stderr_now()}"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                assert chunk, f"the tool ended: {self.stderr_now()}"
                self._out += chunk
        line, _, self._out = self._out.partition(b"\n")
        return line.decode()

    def phase(self) -> dict[str, Any]:
        """Run the program's next phase; its report."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()
        report: dict[str, Any] = json.loads(self.line())
        assert report["minflt"] >= report["pages"]
        return report

    def stderr_now(self) -> str:
        """What the tool said on stderr so far (without waiting)."""
        assert self.proc.stderr is not None
        while select.select([self.proc.stderr], [], [], 0)[0]:
            chunk = os.read(self.proc.stderr.fileno(), 4096)
            if not chunk:
                break
            self.err += chunk
        return self.err.decode(errors="replace")

    def finish(self) -> str:
        """Let the program end; the tool's stderr once it ended with status 0."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.stdin = None  # communicate() would flush it
        _, err = self.proc.communicate(timeout=TIMEOUT)
        self.err += err
        text = self.err.decode(errors="replace")
        assert self.proc.returncode == 0, text
        assert "Traceback" not in text, text
        return text


class Fifos:
    """The control and ack FIFOs of one run, held open read-write by the script (as perf's own
    example does), so neither end waits for the other to open."""

    def __init__(self, where: Path) -> None:
        self.ctl_path, self.ack_path = where / "ctl.fifo", where / "ack.fifo"
        os.mkfifo(self.ctl_path)
        os.mkfifo(self.ack_path)
        self.ctl = os.open(self.ctl_path, os.O_RDWR)
        self.ack = os.open(self.ack_path, os.O_RDWR)

    @property
    def option(self) -> str:
        return f"fifo:{self.ctl_path},{self.ack_path}"

    def send(self, command: str) -> None:
        """Write ``command`` and wait for its ack: once it is read, the counters are switched."""
        os.write(self.ctl, f"{command}\n".encode())
        got = b""
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(ACK):
            left = deadline - time.monotonic()
            assert left > 0, f"no ack for {command!r} (got {got!r})"
            if select.select([self.ack], [], [], left)[0]:
                got += os.read(self.ack, len(ACK) - len(got))
        assert got == ACK

    def close(self) -> None:
        os.close(self.ctl)
        os.close(self.ack)


@contextlib.contextmanager
def fifos(where: Path) -> Iterator[Fifos]:
    pair = Fifos(where)
    try:
        yield pair
    finally:
        pair.close()


def _sectormon(out: Path, *extra: str) -> list[str]:
    return [*json_args([sectormon_command()], out, *extra), "--"]


def _perf(*extra: str) -> list[str]:
    return ["perf", "stat", "-x,", "-e", "page-faults:u", *extra, "--"]


def _sectormon_faults(out: Path) -> float:
    count = final_count(out, "PAGE_FAULTS")
    assert count is not None, "no final frame"
    return count


def _within(ours: float, peer: float, tolerance: float) -> None:
    assert abs(ours - peer) <= tolerance * peer, f"sectormon {ours:.0f} vs perf stat {peer:.0f}"


PHASES = (20_000, 30_000, 15_000, 10_000)


def _toggled(tool: Driven, control: Fifos) -> int:
    """Started disabled: phase 0 off, 1 on, 2 off (the state checked with a ping), 3 on; the
    pages of the enabled phases."""
    assert tool.line() == "ready"
    tool.phase()
    control.send("enable")
    on = tool.phase()["pages"]
    control.send("disable")
    control.send("ping")
    tool.phase()
    control.send("enable")
    return int(on + tool.phase()["pages"])


@pytest.mark.parametrize("rotation", ["kernel", "sync"])
def test_only_the_enabled_spans_count_as_with_perf_stat(tmp_path: Path, rotation: str) -> None:
    (tmp_path / "perf").mkdir()
    (tmp_path / "ours").mkdir()
    with fifos(tmp_path / "perf") as control:
        perf = Driven([*_perf("-D", "-1", "--control", control.option)], PHASES)
        enabled = _toggled(perf, control)
        peer = perf_value(perf.finish(), "page-faults:u")
    out, recording = tmp_path / "out.jsonl", tmp_path / "run.jsonl"
    with fifos(tmp_path / "ours") as control:
        argv = _sectormon(out, "--rotation", rotation, "--delay", "-1", "--control", control.option)
        ours = Driven([*argv[:-1], "--record", str(recording), "--"], PHASES)
        assert _toggled(ours, control) == enabled
        ours.finish()
    _within(_sectormon_faults(out), peer, 0.02)
    # Both hold the enabled phases' pages and little else (not the 35,000 of the others).
    assert enabled <= peer <= enabled * 1.02
    # The recording replays to the live figures (a span with counting off has slices of no duration).
    replayed = tmp_path / "replayed.jsonl"
    with replayed.open("w") as stream:
        done = subprocess.run(
            [sectormon_command(), "replay", "--json", str(recording)],
            stdout=stream,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert _sectormon_faults(replayed) == _sectormon_faults(out)


def test_inherited_descriptors_drive_it_the_same(tmp_path: Path) -> None:
    """``--control fd:CTL,ACK``: the script's own descriptors, handed down (perf's example)."""
    out = tmp_path / "fd.jsonl"
    with fifos(tmp_path) as control:
        fds = (control.ctl, control.ack)
        ours = Driven(_sectormon(out, "--delay", "-1", "--control", f"fd:{fds[0]},{fds[1]}"), PHASES, fds)
        enabled = _toggled(ours, control)
        ours.finish()
    assert enabled <= _sectormon_faults(out) <= enabled * 1.02


def test_a_region_holds_only_its_enabled_spans_too(tmp_path: Path) -> None:
    """Kernel rotation: a region's counts are read from the same counters, so the phases marked
    while counting was off add nothing to it (its calls still count)."""
    out = tmp_path / "regions.jsonl"
    with fifos(tmp_path) as control:
        argv = _sectormon(out, "--rotation", "kernel", "--delay", "-1", "--control", control.option)
        ours = Driven(argv, ["--region", "phase", *PHASES])
        enabled = _toggled(ours, control)
        ours.finish()
    final = read_jsonl(out.read_text())[-1]
    phase = final["run"]["regions"]["phase"]
    assert phase["calls"] == len(PHASES)
    assert enabled <= phase["total"]["counts"]["PAGE_FAULTS"] <= enabled * 1.01


def test_disable_and_enable_by_event_name_as_with_perf_stat(tmp_path: Path) -> None:
    """perf names the event as given (page-faults:u); sectormon by its spec or profile name."""
    results = []
    for name, argv_of in (
        ("page-faults:u", lambda option: _perf("--control", option)),
        ("PAGE_FAULTS", lambda option: _sectormon(tmp_path / "named.jsonl", "--control", option)),
    ):
        where = tmp_path / name.replace(":", "_")
        where.mkdir()
        with fifos(where) as control:
            tool = Driven(argv_of(control.option), (5_000, 20_000, 5_000))
            assert tool.line() == "ready"
            tool.phase()
            control.send(f"disable {name}")
            tool.phase()
            control.send(f"enable {name}")
            tool.phase()
            results.append(tool.finish())
    peer = perf_value(results[0], "page-faults:u")
    _within(_sectormon_faults(tmp_path / "named.jsonl"), peer, 0.02)
    assert 10_000 <= peer < 20_000  # the disabled phase's 20,000 are in neither


def _delayed(tool: Driven, counting: Callable[[], None], delay_s: float) -> None:
    """Phase 0 at once, phase 1 once the tool says it counts. Both tools start their delay once
    the program they forked is let go (after its creation), so a phase 0 that ended within the
    delay of the program's creation ended uncounted; one that ended later (a loaded machine) may
    have been counted in part: skipped, not failed."""
    assert tool.line() == "ready"
    if tool.phase()["elapsed"] > 0.9 * delay_s:
        tool.proc.kill()
        tool.proc.communicate(timeout=TIMEOUT)
        pytest.skip(f"the machine is too loaded: the program's first phase outlasted the {delay_s:g} s delay")
    counting()
    tool.phase()


@pytest.mark.parametrize(("delay_ms", "first"), [(200, 2_000), (1500, 10_000)])
def test_delay_counts_from_its_end_as_perf_stat_d(tmp_path: Path, delay_ms: int, first: int) -> None:
    """Phase 0 (``first`` pages) runs before the delay ends, phase 1 after it."""
    phases = (first, 20_000)
    perf = Driven(_perf("-D", str(delay_ms)), phases)

    def perf_counts() -> None:
        deadline = time.monotonic() + TIMEOUT
        while "Events enabled" not in perf.stderr_now():
            assert time.monotonic() < deadline, "perf stat never enabled its events"
            time.sleep(0.02)

    _delayed(perf, perf_counts, delay_ms / 1000)
    peer = perf_value(perf.finish(), "page-faults:u")
    out = tmp_path / "delayed.jsonl"
    ours = Driven(_sectormon(out, "--interval", "0.2", "--delay", str(delay_ms)), phases)
    _delayed(ours, lambda: first_frame(out, lambda f: "PAGE_FAULTS" in f["total"]["counts"]), delay_ms / 1000)
    ours.finish()
    _within(_sectormon_faults(out), peer, 0.02)
    assert phases[1] <= peer < sum(phases)  # phase 0 ran before counting started
    undelayed = tmp_path / "undelayed.jsonl"
    plain = Driven(_sectormon(undelayed), phases)
    assert plain.line() == "ready"
    plain.phase()
    plain.phase()
    plain.finish()
    assert _sectormon_faults(undelayed) >= sum(phases)
