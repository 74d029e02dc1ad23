"""``sectormon hotspots`` options: one clear line for every bad input, and the event it chooses."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

import pytest

from sectormon.cli import build_parser, main
from sectormon.commands import hotspots
from sectormon.host import roots
from sectormon.host.topology import data_cache_line_size
from sectormon.perf.errors import EventUnsupported
from sectormon.perf.events import EventSpec
from sectormon.perf.sampling import SamplingConfig
from sectormon.profiles.resolve import load_profile
from sectormon.sources.perf import samples as perf_samples


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "nothing to sample: give --pid PID, --cpus LIST or -- CMD ARGS"),
        (["--pid", "1", "--", "true"], "choose one target: --pid and -- CMD were both given"),
        (["--period", "0", "--", "true"], "--period 0: give a whole number from 1 to"),
        (["--top", "0", "--", "true"], "--top 0: give a whole number from 1 to"),
        (["--duration", "-1", "--", "true"], "--duration -1.0: give a number of seconds > 0"),
        (["--line-size", "100", "--", "true"], "--line-size 100: give a power of two"),
        (["--mmap-pages", "3", "--event", "page-faults", "--", "true"], "--mmap-pages 3: ring buffer pages"),
        (["--event", "bogus", "--", "true"], "--event bogus: not an event of the"),
        (["--event", "page-faults", "--pid", "999999999"], "--pid 999999999: no such process"),
        (["--event", "page-faults", "--", "no-such-program"], "command 'no-such-program' not found"),
        (["--cpus", "0-x", "--event", "page-faults"], "--cpus: bad CPU list '0-x'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hotspots", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sectormon: ") and len(err.splitlines()) == 1, err
    assert message in err


def test_period_and_freq_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["hotspots", "--period", "5", "--freq", "100", "--", "true"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def options(*argv: str) -> argparse.Namespace:
    return build_parser("hotspots").parse_args(list(argv))


def unsupported(spec: EventSpec, config: SamplingConfig, *, name: str = "") -> None:
    raise EventUnsupported(f"event '{name}' is not supported on this host", errno=errno.ENOENT, event=name)


def test_the_profile_event_at_its_period_or_page_faults_without_a_pmu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    profile = load_profile("a64fx")
    monkeypatch.setattr("sectormon.perf.sampling.check_sampling", lambda *a, **k: None)
    name, spec, period, freq, warnings = hotspots._choose_event(options("--", "x"), profile)
    assert (name, spec.spec, period, freq, warnings) == ("L1D_CACHE_REFILL", "r3", 10007, 0, [])
    monkeypatch.setattr("sectormon.perf.sampling.check_sampling", unsupported)
    name, spec, period, freq, warnings = hotspots._choose_event(options("--", "x"), profile)
    assert (name, spec.spec, period, freq) == ("page-faults", "page-faults", 1, 0)
    assert "L1D_CACHE_REFILL (r3) cannot be sampled here (ENOENT" in warnings[0]


def test_given_events_and_their_default_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = load_profile("generic")
    choose = hotspots._choose_event
    assert choose(options("--event", "L1D_LOAD_MISSES"), profile)[1:4] == (
        EventSpec("L1-dcache-load-misses", 3, 0x10000),
        10007,
        0,
    )
    assert choose(options("--event", "minor-faults"), profile)[2:4] == (1, 0)  # each fault
    assert choose(options("--event", "cycles"), profile)[2:4] == (0, perf_samples.DEFAULT_FREQ)
    assert choose(options("--event", "cycles", "--period", "5000"), profile)[2:4] == (5000, 0)
    assert choose(options("--event", "TASK_CLOCK", "--freq", "99"), profile)[:4:3] == ("TASK_CLOCK", 99)


def test_line_size_comes_from_sysfs(tmp_path: Path) -> None:
    root = tmp_path
    index = root / "devices/system/cpu/cpu0/cache/index0"
    index.mkdir(parents=True)
    (index / "type").write_text("Data\n")
    (index / "coherency_line_size").write_text("256\n")
    with roots.use(sysfs=root):
        assert data_cache_line_size() == 256
    with roots.use(sysfs=root / "missing"):
        assert data_cache_line_size() == 64


def test_an_event_that_cannot_be_sampled_says_which_one_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sectormon.perf.sampling.check_sampling", unsupported)
    assert main(["hotspots", "--event", "cycles", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "--event cycles: cycles cannot be sampled on this host (ENOENT" in err
    assert "page-faults samples on any host" in err
