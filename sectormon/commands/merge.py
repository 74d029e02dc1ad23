"""``sectormon merge NODE1 NODE2 ... -o JOB``: the nodes' recordings of one job as one job file.

The nodes are aligned by the wall-clock start in their headers; a node that started late or
ended early is reported (its missing time shows as coverage in the job's frames, never as zeros).
``replay`` and ``compare`` read the job file; each node's part is its recording unchanged.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="NODE", help="one recording per node (.jsonl or .jsonl.gz)"
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="JOB", help="the job file to write (.gz to compress)"
    )
    parser.add_argument(
        "--skip-bad", action="store_true", help="skip malformed lines while scanning the nodes"
    )


def _check_node_path(path: str) -> None:
    """A node's recording must be a regular file: anything else is one line (a name too long, a
    FIFO, a folder: :func:`sectormon.files.regular.open_input` says which)."""
    import os

    from sectormon.errors import UsageError
    from sectormon.files.regular import is_regular, open_input
    from sectormon.files.text import printable

    if is_regular(path):
        return
    try:
        os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{printable(path)}: no such file (give one sectormon recording per node)") from None
    except OSError:
        pass  # open_input words it
    open_input(path, "recording").close()  # raises the reason


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sectormon.errors import UsageError
    from sectormon.files.output import replace_output
    from sectormon.files.text import print_message, print_warning
    from sectormon.job.jobfile import is_job_file, write_job
    from sectormon.job.nodes import align, node_from_recording

    for path in args.files:
        _check_node_path(path)
        if is_job_file(path):
            raise UsageError(f"{path} is a merged job already; merge the nodes' own recordings")
        if Path(path).resolve() == Path(args.output).resolve():
            raise UsageError(
                f"-o {args.output} is one of the nodes' recordings; write the job to another file"
            )
    nodes = [node_from_recording(path, label=path, skip_bad=args.skip_bad) for path in args.files]
    alignment = align(nodes)
    with replace_output(args.output, "-o") as out:
        write_job(alignment, out, compress=args.output.endswith(".gz"), skip_bad=args.skip_bad)
    # What the nodes' readers found (a cut node is merged up to its last whole line) ...
    for node in alignment.nodes:
        for warning in node.warnings:
            print_warning(f"node {node.host}: {warning}")
    # ... and what aligning them found (said again by every replay of the job).
    for warning in alignment.warnings:
        print_warning(warning)
    hosts = ", ".join(n.host for n in alignment.nodes)
    print_message(
        f"merged {len(nodes)} nodes ({hosts}) into {args.output}: "
        f"{alignment.seconds:.6g} s, {alignment.interval:g} s intervals"
    )
    return 0
