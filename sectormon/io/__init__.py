"""sectormon.io."""
