"""sectormon.commands."""
