"""Sampled attribution: where the events come from, in code (symbols, lines) and in data (objects).

The records it produces and consumes (samples, batches, tables) are in :mod:`sectormon.data`.
"""
