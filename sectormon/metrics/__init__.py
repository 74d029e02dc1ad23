"""sectormon.metrics."""
