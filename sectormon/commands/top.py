"""``sectormon top``: the process list (htop's habits), then the live monitor on the chosen one.

The same as ``sectormon --pid`` with no value: every option of the monitor applies to the run
that follows the choice (``--json``, ``--record``, ``--profile`` ...).
"""

from __future__ import annotations

import argparse

from sectormon.commands import monitor


def configure(parser: argparse.ArgumentParser) -> None:
    monitor.configure(parser)


def run(args: argparse.Namespace) -> int:
    if args.pid is None and args.cpus is None and not args.command:
        args.pid = monitor.PICK
    return monitor.run(args)
