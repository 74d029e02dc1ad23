"""The argparse pieces the subcommands share (numbers, outputs, exporter, simulator, theme)."""
