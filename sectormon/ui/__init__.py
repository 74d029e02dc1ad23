"""sectormon's Textual UI: the only package that imports textual.

Entry points: :func:`sectormon.ui.app.make_app` / :func:`sectormon.ui.app.run_tui` (the app) and
:func:`sectormon.ui.themes.load_theme` (theme files). Nothing is imported here, so importing a
submodule (e.g. the theme loader) does not pull in the whole app.
"""
