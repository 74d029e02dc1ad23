"""Theme files: shipped themes load, broken ones name file and line, user themes win, and the app
falls back to the default theme with a notification."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.errors import UsageError
from sectormon.ui.app import SectormonApp
from sectormon.ui.themes import (
    DEFAULT_THEME,
    VARIABLE_FALLBACKS,
    ThemeError,
    discover_themes,
    fallback_variables,
    load_theme,
    load_theme_file,
    package_theme_dir,
    repo_theme_dir,
    theme_dirs,
)
from tests.ui.fake_controller import FakeSession

REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"
SHIPPED = ("dark", "light", "high-contrast")


def test_shipped_themes_load_and_set_every_sectormon_variable() -> None:
    for name in SHIPPED:
        theme = load_theme(name)
        assert theme.name == name
        assert set(VARIABLE_FALLBACKS) <= set(theme.variables), name
    assert load_theme("light").dark is False


def test_package_copies_match_the_repo_themes() -> None:
    """themes/ is the source of truth; sectormon/ui/theme_files/ ships the same bytes in wheels."""
    repo = sorted(p.name for p in REPO_THEMES.glob("*.yaml"))
    package = sorted(p.name for p in package_theme_dir().glob("*.yaml"))
    assert repo == package, "copy themes/*.yaml to sectormon/ui/theme_files/"
    for name in repo:
        assert (REPO_THEMES / name).read_bytes() == (package_theme_dir() / name).read_bytes(), (
            f"sectormon/ui/theme_files/{name} differs from themes/{name}: copy it over"
        )


def test_lookup_order_user_then_repo_then_package(isolated_config: Path) -> None:
    dirs = theme_dirs()
    assert dirs[0] == isolated_config / "sectormon" / "themes"
    assert dirs[-1] == package_theme_dir()
    assert repo_theme_dir() == REPO_THEMES


def test_user_theme_overrides_and_adds(isolated_config: Path) -> None:
    user = isolated_config / "sectormon" / "themes"
    user.mkdir(parents=True)
    (user / "dark.yaml").write_text('primary: "#112233"\n', encoding="utf-8")
    (user / "mine.yml").write_text('name: mine\nprimary: "#445566"\ndark: false\n', encoding="utf-8")
    assert load_theme("dark").primary == "#112233"
    assert load_theme("mine").dark is False
    found = discover_themes()
    assert {"dark", "mine", "light", "high-contrast"} <= set(found.themes)
    assert found.paths["dark"] == user / "dark.yaml"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('primary: "#123456"\ncolour: red\n', 2, "unknown field 'colour'"),
        ('primary: "#123456"\nerror: "not-a-colour"\n', 2, "'not-a-colour' is not a colour"),
        ('dark: true\nsecondary: "#123456"\n', None, "missing field 'primary'"),
        ('primary: "#123456"\ndark: maybe\n', 2, "dark must be true or false"),
        ('primary: "#123456"\nvariables:\n  sm-better: "#00ff00"\n  sm-nope: red\n', 4, "sm-nope"),
        ('primary: "#123456"\nvariables:\n  sm-worse: 12\n', 3, "variable sm-worse"),
        ('primary: "#123456"\n  bad: [indent\n', 2, "invalid YAML"),
        ("- just\n- a list\n", 1, "must be a mapping"),
    ],
)
def test_broken_theme_names_file_line_and_problem(
    tmp_path: Path, text: str, line: int | None, problem: str
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:" if line else f"{path}:")
    assert problem in message


def test_unknown_name_lists_the_available_themes() -> None:
    with pytest.raises(UsageError) as info:
        load_theme("no-such-theme")
    assert "dark" in str(info.value) and "high-contrast" in str(info.value)


def test_textual_builtin_names_work_too() -> None:
    assert load_theme("textual-light").name == "textual-light"


def test_fallback_variables_come_from_the_theme() -> None:
    theme = load_theme("textual-dark")
    values = fallback_variables(theme)
    assert set(values) == set(VARIABLE_FALLBACKS)
    generated = theme.to_color_system().generate()
    assert values["sm-worse"] == generated["error"]


def test_discovery_reports_broken_files_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text('primary: "#123456"\n', encoding="utf-8")
    (tmp_path / "bad.yaml").write_text("primary: 12\n", encoding="utf-8")
    found = discover_themes([tmp_path])
    assert list(found.themes) == ["good"]
    assert len(found.errors) == 1 and "bad.yaml:1" in found.errors[0]


@pytest.mark.asyncio
async def test_app_falls_back_to_default_theme_with_a_notification(
    tmp_path: Path, a64fx_session: FakeSession
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text('primary: "#123456"\nbackground: nope\n', encoding="utf-8")
    app = SectormonApp(a64fx_session, theme=str(broken))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        messages = [n.message for n in app._notifications]
        assert any(str(broken) in m and "not a colour" in m and "default theme" in m for m in messages)


@pytest.mark.asyncio
async def test_app_cycles_themes_with_t(a64fx_session: FakeSession) -> None:
    app = SectormonApp(a64fx_session, theme="high-contrast")
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == "high-contrast"
        await pilot.press("t")
        assert app.theme == "light"
        await pilot.press("t")
        assert app.theme == "dark"
        assert app.theme_variables["sm-better"] == load_theme("dark").variables["sm-better"]
