"""Theme files: discovery, validation and loading (the TUI's colours live only in these files).

A theme is a YAML mapping of Textual theme fields (``primary``, ``secondary``, ``accent``,
``foreground``, ``background``, ``surface``, ``panel``, ``boost``, ``success``, ``warning``,
``error``, ``dark``, ``luminosity_spread``, ``text_alpha``) plus ``variables``: sectormon's own
``sm-*`` colours (bars, better/worse, low confidence...). Its name is the ``name`` field, or the
file name without ``.yaml``.

Where themes are found, first match wins:

1. ``$XDG_CONFIG_HOME/sectormon/themes`` (default ``~/.config/sectormon/themes``): the user's.
2. ``themes/`` at the top of a source checkout (the one source of truth for shipped themes).
3. ``sectormon/ui/theme_files/``: the same files shipped as package data, so a wheel install has
   them too. A test keeps them byte-identical to ``themes/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from sectormon.errors import DataError, UsageError
from sectormon.files.regular import is_regular
from sectormon.profiles import safe_yaml

DEFAULT_THEME = "dark"
THEME_SUFFIXES = (".yaml", ".yml")

COLOR_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)
FLOAT_FIELDS = ("luminosity_spread", "text_alpha")
OTHER_FIELDS = ("name", "dark", "variables", "description")
ALLOWED_FIELDS = frozenset(COLOR_FIELDS + FLOAT_FIELDS + OTHER_FIELDS)

# sectormon's own theme variables, and the Textual colour each falls back to when a theme (e.g. a
# Textual built-in) does not set it: so every colour on screen still comes from the theme.
VARIABLE_FALLBACKS: dict[str, str] = {
    "sm-better": "success",
    "sm-worse": "error",
    "sm-low-confidence": "foreground-muted",
    "sm-na": "foreground-muted",
    "sm-stall-mem": "error",
    "sm-stall-l2": "warning",
    "sm-stall-other": "secondary",
    "sm-bar-empty": "surface-lighten-1",
    "sm-sce": "primary",
    "sm-nonsec0": "accent",
    "sm-spark-min": "primary",
    "sm-spark-max": "accent",
    "sm-recording": "error",
    "sm-paused": "warning",
    "sm-cmg-wide": "warning",
    "sm-active-group": "accent",
}


class ThemeError(DataError):
    """A theme file that cannot be used (the message names the file, the line and the fix)."""


@dataclass(frozen=True, slots=True)
class ThemeSet:
    """Every theme found, by name, with the problems met on the way (one line each)."""

    themes: Mapping[str, Theme]
    paths: Mapping[str, Path] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


def user_theme_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sectormon" / "themes"


def repo_theme_dir() -> Path | None:
    """``themes/`` of a source checkout (editable install), else ``None``."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "sectormon").is_dir():
        return root / "themes"
    return None


def package_theme_dir() -> Path:
    return Path(__file__).resolve().parent / "theme_files"


def theme_dirs() -> list[Path]:
    """Theme directories in priority order (user, checkout, package data)."""
    dirs = [user_theme_dir()]
    repo = repo_theme_dir()
    if repo is not None:
        dirs.append(repo)
    dirs.append(package_theme_dir())
    return dirs


def _theme_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in THEME_SUFFIXES and p.is_file())


def _line_of(lines: list[str], key: str, start: int = 0) -> int | None:
    pattern = re.compile(rf"^\s*['\"]?{re.escape(key)}['\"]?\s*:")
    for index in range(start, len(lines)):
        if pattern.match(lines[index]):
            return index + 1
    return None


# A variable's name, and each word of a value that is not a colour: "bold not underline",
# "auto 87%", "$primary", "transparent". Never ";", "{", "}", ":" or quotes: Textual puts the
# values into its stylesheet, where those would end the declaration and start others.
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_VALUE_WORD = re.compile(r"\$?[A-Za-z0-9_#.%-]{1,64}")


def _check_value(value: str | int | float, where: str, path: str, line: int | None) -> str:
    """A variable's value: a colour Textual parses, or up to a few plain words."""
    text = str(value)
    try:
        Color.parse(text)
        return text
    except ColorParseError:
        pass
    words = text.split()
    if not words or len(words) > 4 or not all(_VALUE_WORD.fullmatch(w) for w in words):
        raise ThemeError(
            path,
            line,
            f"{where}: {text!r} is neither a colour nor a plain value",
            'use a colour ("#rrggbb", "rgb(r,g,b)", a name) or words such as "bold" or "auto 87%" '
            "(no ; { } : or quotes)",
        )
    return text


def _check_color(value: Any, where: str, path: str, line: int | None) -> str:
    if not isinstance(value, str):
        raise ThemeError(path, line, f"{where} must be a colour string, not {value!r}", 'e.g. "#0178D4"')
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(
            path, line, f"{where}: {value!r} is not a colour", 'use "#rrggbb", "rgb(r,g,b)" or a colour name'
        ) from None
    return value


def parse_theme(text: str, path: str, default_name: str) -> Theme:
    """Validate one theme file's text; raises :class:`ThemeError` at the first problem."""
    lines = text.splitlines()
    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        if isinstance(exc, safe_yaml.YamlLimitError):
            raise ThemeError(path, line, f"YAML refused: {problem}", "a theme needs no more") from None
        raise ThemeError(path, line, f"invalid YAML: {problem}", "fix the syntax") from None
    if not isinstance(data, Mapping):
        raise ThemeError(path, 1, "a theme must be a mapping of fields", "e.g. 'primary: \"#0178D4\"'")
    unknown = sorted(str(k) for k in data if k not in ALLOWED_FIELDS)
    if unknown:
        raise ThemeError(
            path,
            _line_of(lines, unknown[0]),
            f"unknown field {unknown[0]!r}",
            "allowed: " + ", ".join(sorted(ALLOWED_FIELDS)),
        )
    if data.get("primary") is None:  # absent, or ``primary:`` with no value
        raise ThemeError(path, None, "missing field 'primary'", 'add e.g. primary: "#0178D4"')
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(path, _line_of(lines, "name"), "name must be a non-empty string", "or omit it")
    fields: dict[str, Any] = {}
    for key in COLOR_FIELDS:
        if data.get(key) is not None:
            fields[key] = _check_color(data[key], key, path, _line_of(lines, key))
    for key in FLOAT_FIELDS:
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ThemeError(path, _line_of(lines, key), f"{key} must be a number from 0 to 1", "")
            fields[key] = float(value)
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(path, _line_of(lines, "dark"), f"dark must be true or false, not {dark!r}", "")
    variables_raw = data.get("variables") or {}
    if not isinstance(variables_raw, Mapping):
        raise ThemeError(path, _line_of(lines, "variables"), "variables must be a mapping", "name: value")
    base = _line_of(lines, "variables") or 0
    variables: dict[str, str] = {}
    for key, value in variables_raw.items():
        line = _line_of(lines, str(key), base)
        if not isinstance(key, str) or not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ThemeError(path, line, f"variable {key!r} must map a name to a value", "")
        if not _VARIABLE_NAME.fullmatch(key):
            raise ThemeError(path, line, f"variable name {key!r} is not a name", "letters, digits, - and _")
        if key.startswith("sm-"):
            if key not in VARIABLE_FALLBACKS:
                raise ThemeError(
                    path,
                    line,
                    f"unknown sectormon variable {key!r}",
                    "known: " + ", ".join(VARIABLE_FALLBACKS),
                )
            _check_color(value, f"variable {key}", path, line)
        variables[key] = _check_value(value, f"variable {key}", path, line)
    return Theme(name=name.strip(), dark=dark, variables=variables, **fields)


def load_theme_file(path: str | Path) -> Theme:
    """Load and validate one theme file."""
    file = Path(path)
    try:
        text = safe_yaml.read_yaml_text(file)
    except OSError as exc:
        raise ThemeError(
            str(file), None, f"cannot read theme: {exc.strerror or exc}", "check the path"
        ) from None
    except safe_yaml.YamlInputError as exc:
        raise ThemeError(
            str(file), None, f"cannot read theme: {exc}", "save it as a YAML text file"
        ) from None
    return parse_theme(text, str(file), file.stem)


def _looks_like_path(name: str) -> bool:
    return os.sep in name or "/" in name or name.endswith(THEME_SUFFIXES)


def discover_themes(dirs: Iterable[Path] | None = None) -> ThemeSet:
    """Every loadable theme in the theme directories; broken files are listed in ``errors``."""
    themes: dict[str, Theme] = {}
    paths: dict[str, Path] = {}
    errors: list[str] = []
    for directory in dirs if dirs is not None else theme_dirs():
        for file in _theme_files(directory):
            try:
                theme = load_theme_file(file)
            except ThemeError as exc:
                errors.append(str(exc))
                continue
            if theme.name not in themes:
                themes[theme.name] = theme
                paths[theme.name] = file
    return ThemeSet(themes=themes, paths=paths, errors=tuple(errors))


def load_theme(name_or_path: str, dirs: Iterable[Path] | None = None) -> Theme:
    """A theme by file path, by name (user dir, then shipped), or a Textual built-in name.

    Raises :class:`ThemeError` for a broken file and :class:`UsageError` for an unknown name.
    """
    if _looks_like_path(name_or_path):
        return load_theme_file(name_or_path)
    search = list(dirs) if dirs is not None else theme_dirs()
    for directory in search:
        for suffix in THEME_SUFFIXES:
            file = directory / f"{name_or_path}{suffix}"
            # is_regular, not Path.is_file: a 300-character name raised ENAMETOOLONG from stat.
            if is_regular(str(file)):
                return load_theme_file(file)
    found = discover_themes(search)
    if name_or_path in found.themes:
        return found.themes[name_or_path]
    if name_or_path in BUILTIN_THEMES:
        return BUILTIN_THEMES[name_or_path]
    available = sorted(found.themes) or [DEFAULT_THEME]
    raise UsageError(
        f"--theme: no theme named {name_or_path!r}; available: {', '.join(available)} "
        f"(or a path to a YAML theme file; user themes go in {user_theme_dir()})"
    )


def fallback_variables(theme: Theme) -> dict[str, str]:
    """Values for every ``sm-*`` variable the theme leaves unset, taken from its own colours."""
    generated = theme.to_color_system().generate()
    return {name: generated[source] for name, source in VARIABLE_FALLBACKS.items() if source in generated}
