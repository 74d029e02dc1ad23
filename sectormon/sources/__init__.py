"""sectormon.sources."""
