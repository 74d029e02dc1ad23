"""Safe file and text handling shared by every layer: what input may be opened, how long a line may
be, and how text from input is made safe for a terminal.

It sits just above :mod:`sectormon.errors` so that readers at every level (recordings, fapp
exports, simulator traces, ELF files, bookmarks) apply one rule instead of one each.
"""
