"""``sectormon replay FILE``: a recording back through today's formulas, in the TUI or as JSON.

``--json`` prints the header record the live run printed, then its frames (as fast as possible, or
paced with ``--speed``); ``--from``/``--to`` keep the frames of a time range while still feeding
everything before it, so rolling and whole-run windows are right. Without ``--json`` the TUI plays
the recording on a timeline (pause, seek, speed, marks).
"""

from __future__ import annotations

import argparse
import signal
from types import FrameType
from typing import TYPE_CHECKING

from sectormon.commands.options import numbers
from sectormon.commands.options.openmetrics import add_openmetrics_options, check_output_mode, open_exporter
from sectormon.commands.options.output import StreamOutput, require_terminal
from sectormon.commands.options.theme import add_theme_option
from sectormon.errors import SectormonError, UsageError
from sectormon.files.text import print_warning

if TYPE_CHECKING:
    from sectormon.export.server import OpenMetricsExporter


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a sectormon recording (.jsonl or .jsonl.gz)")
    parser.add_argument(
        "--json", action="store_true", help="print JSON Lines (header, then frames) to stdout"
    )
    parser.add_argument(
        "--speed",
        type=numbers.SPEED.parser("--speed"),
        default=None,
        metavar="X",
        help=numbers.SPEED.help(
            "pace frames in real time times X (default: as fast as possible with --json, 1 in the TUI "
            "and --headless, where a simulated recording plays one frame interval per second at 1)"
        ),
    )
    parser.add_argument(
        "--from",
        dest="t_from",
        type=numbers.STREAM_TIME.parser("--from"),
        default=None,
        metavar="S",
        help=numbers.STREAM_TIME.help("first second to show"),
    )
    parser.add_argument(
        "--to",
        dest="t_to",
        type=numbers.STREAM_TIME.parser("--to"),
        default=None,
        metavar="S",
        help=numbers.STREAM_TIME.help("last second to show"),
    )
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip malformed lines (counted and reported on stderr) instead of stopping at the first",
    )
    add_theme_option(parser)
    add_openmetrics_options(parser)


def _check(args: argparse.Namespace) -> None:
    if args.t_from is not None and args.t_to is not None and args.t_to < args.t_from:
        raise UsageError(f"--to ({args.t_to}) is before --from ({args.t_from})")


def run(args: argparse.Namespace) -> int:
    _check(args)
    check_output_mode(args, record=None, can_record=False)
    from sectormon.job.jobfile import is_job_file

    if is_job_file(args.file):
        return _run_job(args)
    if not (args.json or args.headless):
        require_terminal()
    exporter = open_exporter(args, source="replay")
    try:
        if args.headless:
            return _run_headless(args, exporter)
        if args.json:
            return _run_json(args, exporter)
        return _run_tui(args, exporter)
    finally:
        if exporter is not None:
            exporter.close()


def _run_json(args: argparse.Namespace, exporter: OpenMetricsExporter | None) -> int:
    from sectormon.commands.options.theme import check_theme
    from sectormon.io.reader import open_recording
    from sectormon.io.stream import JsonStream
    from sectormon.session.replay import frame_builder, replay_frames, stream_header

    check_theme(args.theme)
    output = StreamOutput(None)
    with open_recording(args.file, skip_bad=args.skip_bad) as stream:
        frame_builder(stream.header, args.file)  # a bad profile fails before anything is printed
        out = JsonStream(output.handle, on_error=output.failed)
        header = stream_header(stream.header)
        out.write_header(header)
        if exporter is not None:
            exporter.start(header)
        for frame in replay_frames(stream, t_from=args.t_from, t_to=args.t_to, speed=args.speed):
            if out.closed:
                break
            if exporter is not None:
                exporter.publish(frame)
            out.write_frame(frame)
        output.finish(out.error)
        if out.closed:
            return 0  # the reader went away (`| head`)
        for warning in stream.warnings:
            print_warning(warning)
        if args.skip_bad and stream.skipped:
            print_warning(f"{args.file}: skipped {stream.skipped} line(s)")
    return 0


def _run_job(args: argparse.Namespace) -> int:
    """A merged job: the job's frames (totals, and every node under its host) as JSON."""
    from sectormon.io.stream import JsonStream
    from sectormon.job.jobfile import open_job
    from sectormon.job.replay import job_frames, job_header

    if args.openmetrics:
        raise UsageError(
            f"{args.file} is a merged job; serve each node's own recording with "
            "'sectormon replay NODE.jsonl.gz --openmetrics PORT' (one endpoint per host)"
        )
    if not args.json:
        return _run_job_tui(args)
    output = StreamOutput(None)
    with open_job(args.file, skip_bad=args.skip_bad) as alignment:
        for warning in alignment.warnings:
            print_warning(warning)
        out = JsonStream(output.handle, on_error=output.failed)
        out.write_header(job_header(alignment))
        frames = job_frames(
            alignment,
            skip_bad=args.skip_bad,
            t_from=args.t_from,
            t_to=args.t_to,
            speed=args.speed,
            on_warning=print_warning,
        )
        for frame in frames:
            if out.closed:
                break
            out.write_frame(frame)
        output.finish(out.error)
    return 0


def _run_job_tui(args: argparse.Namespace) -> int:
    from sectormon.job.session import JobReplaySession
    from sectormon.ui.app import run_tui

    require_terminal()
    session = JobReplaySession(
        args.file,
        skip_bad=args.skip_bad,
        speed=args.speed if args.speed is not None else 1.0,
        on_warning=print_warning,
    )
    if args.t_from is not None:
        session.seek_to(args.t_from)
    result = run_tui(session, theme=args.theme)
    error = session.error()
    if error is not None:
        raise SectormonError(error)
    return int(result or 0)


class _Terminated(Exception):
    """SIGTERM during a headless replay: end it like Ctrl-C, without a traceback."""


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise _Terminated


def _run_headless(args: argparse.Namespace, exporter: OpenMetricsExporter | None) -> int:
    """Serve the recording's frames on the endpoint, paced as the TUI plays them (``--speed``
    times real time; a simulated recording plays one frame interval per second at 1x)."""
    from sectormon.io.reader import open_recording
    from sectormon.session.replay import default_time_scale, frame_builder, replay_frames, stream_header

    assert exporter is not None  # check_output_mode: --headless needs --openmetrics here
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with open_recording(args.file, skip_bad=args.skip_bad) as stream:
            frame_builder(stream.header, args.file)
            exporter.start(stream_header(stream.header))
            speed = (args.speed or 1.0) * default_time_scale(stream.header)
            for frame in replay_frames(stream, t_from=args.t_from, t_to=args.t_to, speed=speed):
                exporter.publish(frame)
            for warning in stream.warnings:
                print_warning(warning)
            if args.skip_bad and stream.skipped:
                print_warning(f"{args.file}: skipped {stream.skipped} line(s)")
    except _Terminated:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _run_tui(args: argparse.Namespace, exporter: OpenMetricsExporter | None) -> int:
    from sectormon.session.replay import ReplaySession
    from sectormon.ui.app import run_tui

    # Warnings found while scanning print before the TUI takes the screen.
    session = ReplaySession(
        args.file,
        skip_bad=args.skip_bad,
        speed=args.speed if args.speed is not None else 1.0,
        on_warning=print_warning,
    )
    if args.t_from is not None:
        session.seek_to(args.t_from)
    if exporter is not None:
        exporter.start(session.header)
        session.subscribe(exporter.publish)
    result = run_tui(session, theme=args.theme)
    error = session.error()
    if error is not None:
        raise SectormonError(error)
    return int(result or 0)
