"""Hostile theme files: bounded YAML, UTF-8, and values that cannot inject stylesheet rules; the
app falls back to the default theme instead of a blank screen; ``--theme`` is checked with
``--json`` too."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.ui.app import SectormonApp
from sectormon.ui.themes import DEFAULT_THEME, ThemeError, discover_themes, load_theme_file
from tests.e2e.helpers import run_sectormon
from tests.ui.fake_controller import FakeSession
from tests.yaml_cases import HOSTILE

REPO = Path(__file__).resolve().parents[2]
INJECTION = 'primary: "#123456"\nvariables:\n  block-cursor-background: "red; } Screen { display: none"\n'


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "text", "line", "words"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_yaml_in_a_theme_is_one_line(
    tmp_path: Path, name: str, text: str, line: int, words: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text('primary: "#123456"\n' + text, encoding="utf-8")
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert str(info.value).startswith(f"{path}:{line}: YAML refused: ") and words in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (INJECTION, 3, "is neither a colour nor a plain value"),
        ('primary: "#123456"\nvariables:\n  footer-background: "#000 }"\n', 3, "neither a colour"),
        ('primary: "#123456"\nvariables:\n  border: "red;"\n', 3, "neither a colour"),
        ('primary: "#123456"\nvariables:\n  "x; } Screen {": red\n', 3, "is not a name"),
        ('primary: "#123456"\nvariables:\n  link-style: "bold not underline"\n', None, ""),
        ('primary: "#123456"\nvariables:\n  text-muted: "auto 60%"\n', None, ""),
        ('primary: "#123456"\nvariables:\n  input-selection-background: "rgb(1, 2, 3)"\n', None, ""),
    ],
)
def test_variable_values_are_colours_or_plain_words(
    tmp_path: Path, text: str, line: int | None, problem: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    if not problem:
        assert load_theme_file(path).variables
        return
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert str(info.value).startswith(f"{path}:{line}: ") and problem in str(info.value)


def test_a_theme_that_is_not_utf8_is_listed_as_broken(tmp_path: Path) -> None:
    (tmp_path / "latin1.yaml").write_bytes(b'name: caf\xe9\nprimary: "#123456"\n')
    (tmp_path / "good.yaml").write_text('primary: "#123456"\n', encoding="utf-8")
    found = discover_themes([tmp_path])
    assert list(found.themes) == ["good"]
    [error] = found.errors
    assert "latin1.yaml: cannot read theme: line 1: not UTF-8 (byte 0xe9)" in error


@pytest.mark.asyncio
async def test_an_injecting_theme_falls_back_to_the_default_instead_of_a_blank_screen(
    tmp_path: Path, a64fx_session: FakeSession
) -> None:
    path = tmp_path / "inject.yaml"
    path.write_text(INJECTION, encoding="utf-8")
    app = SectormonApp(a64fx_session, theme=str(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        assert app.screen.styles.display != "none"
        assert any("neither a colour nor a plain value" in n.message for n in app._notifications)


@pytest.mark.e2e
def test_theme_is_checked_with_json_too(tmp_path: Path) -> None:
    inject = tmp_path / "inject.yaml"
    inject.write_text(INJECTION, encoding="utf-8")
    recording = str(REPO / "recordings" / "scenario-a-sectors-on.jsonl.gz")
    for args, said in [
        (["--json", "--count", "1", "--theme", "no-such-theme"], "--theme: no theme named 'no-such-theme'"),
        (["--json", "--count", "1", "--theme", str(inject)], f"{inject}:3: variable block-cursor-background"),
        (["sim", "--json", "--count", "1", "--theme", str(inject)], f"{inject}:3: "),
        (["replay", recording, "--json", "--theme", str(inject)], f"{inject}:3: "),
    ]:
        done = run_sectormon(*args, timeout=60)
        assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
        assert done.stderr.count("\n") == 1 and said in done.stderr, (args, done.stderr)
    done = run_sectormon("--json", "--count", "1", "--theme", "light", timeout=60)
    assert done.returncode == 0 and done.stdout.count("\n") == 3, done.stderr


def test_a_primary_with_no_value_is_a_missing_field(tmp_path: Path) -> None:
    """Found by the fuzzer: ``primary:`` alone passed the check and failed in Textual's Theme()."""
    path = tmp_path / "t.yaml"
    path.write_text("primary:\nbackground: '#000000'\n", encoding="utf-8")
    with pytest.raises(ThemeError, match="missing field 'primary'"):
        load_theme_file(path)
