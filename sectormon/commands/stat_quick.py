"""``sectormon stat``'s quick start: a launched command counted on software events, without the engine.

perf stat starts in about 9 ms; importing sectormon's engine (the profile, the session, the
sampler, the metrics) takes over 100 ms before anything counts (docs/perf-tuning.md, "The quick stat").
The runs that feel it most are perf's own habit on a host without a hardware PMU (a VM, a
container, CI): ``sectormon stat -e task-clock,page-faults -- CMD``, often in a loop. For those
this module counts the command as perf stat does, with one counter group the kernel inherits into
every thread and process the command starts, opened before the exec and enabled by it, and writes
the same report as the engine would (the same lines, :mod:`.stat_report`; the generic profile's
metrics from its own formulas, :mod:`sectormon.profiles.generic_digest`).

Only a command line with nothing the engine alone does is taken (:func:`quick_request`): ``-e``
naming user-countable software events by their perf names, each once; ``-x SEP``, ``-o FILE``,
``-r N``; then the command. On an A64FX host (the sector events, the binding check) and on any
other aarch64 host, whatever else is asked, and when a value is one the full parser would refuse,
the engine runs instead and says what is wrong. A marked program's regions are counted too: the
marker library's socket and table are offered as the engine offers them, and the first thread
that marks brings in the engine's region counting (:mod:`.stat_quick_regions`). If a counter does
not open or the command cannot be executed, nothing has run yet: the engine takes over and says
why. This module imports nothing beyond what it uses at once (no dataclasses, typing, argparse or
re); ``tests/commands/test_start_imports.py`` pins that.
"""

from __future__ import annotations

import os
import resource
import sys

from sectormon.commands import stat_quick_launch as launch
from sectormon.commands import stat_report
from sectormon.files.text import print_warning
from sectormon.profiles.generic_digest import EVENTS, METRICS
from sectormon.sources.perf.launch import describe_exit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

    from sectormon.commands.stat_quick_regions import QuickRegions

MAX_RUNS = 100  # stat's -r limit, perf's own
_OPTIONS = {
    "-e": "events",
    "--events": "events",
    "-x": "sep",
    "--field-separator": "sep",
    "-o": "output",
    "--output": "output",
    "-r": "runs",
    "--repeat": "runs",
}


class QuickRequest:
    """A command line the quick start takes: the events (perf names), ``-x``, ``-o``, ``-r``, the command."""

    __slots__ = ("command", "events", "output", "runs", "sep")

    def __init__(
        self, events: list[str], sep: str | None, output: str | None, runs: int, command: list[str]
    ) -> None:
        self.events = events
        self.sep = sep
        self.output = output
        self.runs = runs
        self.command = command


def quick_request(argv: Sequence[str]) -> QuickRequest | None:
    """``stat``'s arguments as a quick run, or ``None`` when the engine must run them."""
    if os.uname().machine in ("aarch64", "arm64"):
        return None  # an A64FX's profile is another one; other Arm hosts are left to the engine too
    given: dict[str, str] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, value, index = _option(argv, index)
        if name is None or value is None or name in given or _unlike_argparse(value):
            return None
        given[name] = value
    command = list(argv[index:])
    if not command or not command[0].strip() or "events" not in given:
        return None
    events = given["events"].split(",")
    if len(set(events)) != len(events) or not all(event in EVENTS for event in events):
        return None
    sep = given.get("sep")
    runs = given.get("runs", "1")
    if sep == "" or not (runs.isascii() and runs.isdigit()) or not 1 <= int(runs) <= MAX_RUNS:
        return None
    return QuickRequest(events, sep, given.get("output"), int(runs), command)


def _unlike_argparse(value: str) -> bool:
    """A value argparse would read otherwise: one that looks like an option (``-x -e``), or
    ``-x=,``, whose ``=`` argparse drops."""
    return (value.startswith("-") and value != "-") or value.startswith("=")


def _option(argv: Sequence[str], index: int) -> tuple[str | None, str | None, int]:
    """The option at ``argv[index]`` with its value (``-eX``, ``-e X``, ``--events=X``, ``--events X``)
    and the index after it; ``(None, None, index)`` for one the quick start does not take."""
    word = argv[index]
    if word.startswith("--") and "=" in word:
        word, _, value = word.partition("=")
        return _OPTIONS.get(word), value, index + 1
    if word in _OPTIONS:
        if index + 1 >= len(argv):
            return None, None, index
        return _OPTIONS[word], argv[index + 1], index + 2
    if not word.startswith("--") and word[:2] in _OPTIONS and len(word) > 2:
        return _OPTIONS[word[:2]], word[2:], index + 1
    return None, None, index


class _Run:
    """One counted run: counts by event name, the group's enabled and running ns, the wall seconds
    from the exec to the command's end, and its exit status as a shell gives it."""

    __slots__ = ("counts", "enabled", "interrupted", "regions", "running", "seconds", "status")

    def __init__(self) -> None:
        self.interrupted = False
        self.counts: dict[str, int] = {}
        self.enabled = 0
        self.running = 0
        self.seconds = 0.0
        self.status = 0
        self.regions: QuickRegions | None = None


def run_quick(request: QuickRequest) -> int | None:
    """Count the command ``request.runs`` times and write the report; its exit status, or ``None``
    when the engine must run it (a counter did not open, the command could not be executed: then
    nothing has run and nothing was written)."""
    names = [EVENTS[event][0] for event in request.events]
    out: TextIO = sys.stderr
    if request.output not in (None, "-"):
        try:  # before anything runs, as the engine opens it
            out = open(request.output, "w", encoding="utf-8")  # noqa: SIM115 (closed by run_quick)
        except OSError:
            return None  # the engine says why
    try:
        return _runs(request, names, out)
    finally:
        if out is not sys.stderr:
            try:  # noqa: SIM105 (contextlib: 1 ms of the quick start)
                out.close()
            except OSError:
                pass  # what close could not flush, the write before it already said


def _runs(request: QuickRequest, names: Sequence[str], out: TextIO) -> int | None:
    runs: list[_Run] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(request.runs):
        run = _count_once(request, names)
        if run is None:
            if not runs:
                return None
            break  # the command could not be executed again: report the runs that were
        runs.append(run)
        if run.interrupted:
            break  # Ctrl-C: no more runs
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return _report(request, names, runs, before, after, out)


def _count_once(request: QuickRequest, names: Sequence[str]) -> _Run | None:
    """One run: the group opened on the held child, the exec, the wait, the read."""
    try:
        regions = launch.offer_regions(
            [(EVENTS[e][0], *EVENTS[e][2:]) for e in request.events], request.events
        )
    except OSError:
        return None  # no memfd or socket: the engine runs, and says it counts no regions
    try:
        child = launch.HeldCommand(request.command, regions.environment() if regions else None)
    except OSError:
        if regions is not None:
            regions.close()
        return None
    group = None
    try:
        group = launch.open_inherited_group([EVENTS[event][2:] for event in request.events], child.pid)
        if group is None:
            return None
        ended = child.run(regions)
        if ended is None:
            return None
        run = _Run()
        code, run.seconds, run.interrupted = ended
        run.status = 0 if code is None else 128 - code if code < 0 else code
        if code:  # as the engine says it when the command ended by itself (not stopped by sectormon)
            print_warning(describe_exit(code))
        enabled, running, values = group.read()
        run.enabled, run.running = enabled, running
        run.counts = dict(zip(names, values, strict=True))
        if regions is not None:
            run.regions = regions.finish()
        return run
    finally:
        child.end()
        if group is not None:
            group.close()
        if regions is not None:
            regions.close()


def _report(
    request: QuickRequest,
    names: Sequence[str],
    runs: Sequence[_Run],
    before: resource.struct_rusage,
    after: resource.struct_rusage,
    out: TextIO,
) -> int:
    """Write the report (to ``-o FILE`` or stderr); the last run's exit status."""
    events = tuple(_event_line(event, name, runs) for event, name in zip(request.events, names, strict=True))
    metrics = tuple(_metric_lines(names, runs))
    title = "'" + " ".join(request.command) + "'"
    blocks = [stat_report.Block(title, events, metrics)]
    user_sys = (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    elapsed = stat_report.elapsed_of([run.seconds for run in runs], user_sys)
    for run in runs:
        if run.regions is not None:
            for warning in run.regions.warnings:
                print_warning(warning)
    region_runs = [run.regions for run in runs if run.regions is not None and run.regions.stats]
    if region_runs:
        from sectormon.commands.stat_quick_regions import region_blocks

        blocks += region_blocks(region_runs)
    lines = stat_report.report_lines(
        blocks, elapsed, runs=len(runs), sep=request.sep, separator=stat_report.thousands_separator()
    )
    try:
        out.write("".join(line + "\n" for line in lines))
        out.flush()
    except OSError as exc:
        from sectormon.files.output import OutputError

        where = request.output if out is not sys.stderr else "stderr"
        raise OutputError(f"cannot write the report to {where}: {exc.strerror or exc}") from None
    return runs[-1].status


def _event_line(event: str, name: str, runs: Sequence[_Run]) -> stat_report.EventLine:
    """One event over the runs, as the engine's stat gives it (:func:`.stat_report.event_line`)."""
    unit = "msec" if EVENTS[event][1] == "ns" else ""
    counted = [(run.counts[name], _share(run), run.running) for run in runs if run.running > 0]
    return stat_report.event_line(event, unit, counted, runs=len(runs))


def _share(run: _Run) -> float:
    return run.running / run.enabled if run.enabled else 0.0


def _metric_lines(names: Sequence[str], runs: Sequence[_Run]) -> list[stat_report.MetricLine]:
    """The profile's metrics whose every input is counted, in its order, averaged over the runs
    where they had a value (n/a where none had)."""
    counted = set(names)
    coverage = sum(_share(run) for run in runs) / len(runs)
    envs = [{**run.counts, "SECONDS": run.seconds} for run in runs]
    lines = []
    for metric, unit, inputs, formula in METRICS:
        if inputs and inputs <= counted:
            values = [value for env in envs if (value := metric_value(formula, env)) is not None]
            lines.append(stat_report.metric_line(metric, unit, values, coverage, runs=len(runs)))
    return lines


def metric_value(formula: object, env: dict[str, float]) -> float | None:
    """A generated formula's value: ``None`` (n/a) where the engine's is (a missing input, a
    division by zero, a result that is not finite)."""
    try:
        value = float(formula(env))  # type: ignore[operator]
    except (TypeError, KeyError, ZeroDivisionError, OverflowError, ValueError):
        return None
    return value if value - value == 0.0 else None  # inf - inf and nan - nan are nan
