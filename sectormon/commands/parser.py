"""The commands' argument parsers: argparse with sectormon's one-line errors, built per command.

Apart from :mod:`sectormon.cli`, which dispatches, so that a command that needs no parser (the
quick ``stat``, sectormon.commands.stat_quick) does not import argparse and typing (14 ms).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, NoReturn, Protocol

from sectormon import __version__
from sectormon.files.text import printable

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class Command(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def load_command(module: str) -> Command:
    module_obj: Command = importlib.import_module(f"sectormon.commands.{module}")
    return module_obj


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line, like every other sectormon error: the monitor's usage
    runs to a screenful, which buried the message under it."""

    def error(self, message: str) -> NoReturn:
        # The message quotes the argument as given: escaped like every other error line.
        self.exit(2, f"{self.prog}: {printable(message)} (see '{self.prog} --help')\n")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """``--help`` and ``--version`` go to stdout like every report: a full disk or a closed
        stdout is one line and exit 1 (argparse would exit 0 with nothing written)."""
        if file is not None and file is sys.stderr:
            super()._print_message(message, file)
            return
        from sectormon.commands.options.output import write_stdout

        write_stdout(message, "help" if message.lstrip().startswith("usage") else "version")


def build_parser(name: str | None, subcommands: Mapping[str, tuple[str, str]]) -> argparse.ArgumentParser:
    """The parser of one command (``None``: the live monitor)."""
    if name is None:
        parser = _Parser(
            prog="sectormon",
            description="Live monitor of hardware performance counters, built for the A64FX sector cache.",
            epilog="Subcommands: " + ", ".join(subcommands) + ". Run 'sectormon SUBCOMMAND --help' for each.",
        )
        parser.add_argument("--version", action="version", version=f"sectormon {__version__}")
        load_command("monitor").configure(parser)
        return parser
    module, help_text = subcommands[name]
    parser = _Parser(prog=f"sectormon {name}", description=help_text)
    load_command(module).configure(parser)
    return parser
