"""The subcommands: one module each, turning parsed arguments into a session, a report or a file.

``cli.py`` picks the module; each one adds its arguments, checks them and calls the layers below
(sessions, compare, fapp, job), so no subcommand computes a metric itself. The argparse pieces
several subcommands share are in ``options/``; ``front_end.py`` runs a live session in the TUI or
as a JSON stream for ``sectormon`` and ``sectormon sim``.
"""
