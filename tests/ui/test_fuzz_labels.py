"""Fuzzing the text the TUI and stderr show from files and profiles: 10,000 hostile labels and
names (random code points with controls and lone surrogates, Rich/Textual markup fragments,
brackets, escape sequences, very long strings) through the functions the widgets draw them with,
rendered by Rich into a string, in this process; a few hundred through a running app (Pilot); and
every one through the stderr warning printer. 0 tracebacks, no control character reaches the
terminal, every warning is one line.

Seeded (``random.Random``): a failing case is printed with its seed and index, and reproduced with
:func:`hostile_text`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import time
from random import Random

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual.content import Content

from sectormon.data.header import SourceInfo, TargetInfo
from sectormon.files.text import print_warning, printable
from sectormon.ui.app import make_app
from sectormon.ui.header_fit import Field, fit
from sectormon.ui.header_info import describe_source, describe_target
from sectormon.ui.messages import FrameArrived, SessionWarning
from sectormon.ui.screens.help import HelpContent, View, help_text
from sectormon.ui.screens.warnings import WarningEntry, WarningsScreen, warning_lines
from sectormon.ui.widgets.metric_table import _fit
from tests.ui.fake_controller import FakeSession
from tests.ui.frames_fixture import a64fx_frames, a64fx_header
from tests.ui.screen_text import screen_text

FRAGMENTS = (
    "[/]", "[", "]", "[]", "[b]", "[/b]", "[link=file:///etc/passwd]", "[/link]", "[@click=app.quit]",
    "[$primary]", "\\[", "[on red]", "[bold red on #ff0000]", "[not b]", "[/ ]", "[[", "]]",
    "\x1b[2J", "\x1b]0;pwned\x07", "\x1b]8;;file:///x\x1b\\", "\x1bP", "\x9b31m", "\r", "\n", "\r\n",
    "\t", "\x00", "\x07", "\x08", "\x7f", "\x85", "\u2028", "\u2029", "\u202e", "\u200b", "\ufeff",
    "\ud800", "\udfff", "é", "漢字", "👍🏽", "e\u0301", "%s", "{}", "{0}", "\\", "'", '"', "sectormon: fake",
)  # fmt: skip
CONTROL = ("\x1b", "\x07", "\r", "\x00", "\x9b", "\x85", "\u2028")
SAFE = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None, legacy_windows=False)


def hostile_text(seed: int, index: int) -> str:
    """Case ``index`` of the generator seeded with ``seed``."""
    rng = Random(seed * 1_000_003 + index)
    kind = rng.random()
    if kind < 0.45:
        return "".join(
            rng.choice(FRAGMENTS) + rng.choice(("", "x", " ", "12")) for _ in range(rng.randint(1, 8))
        )
    if kind < 0.75:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(1, 40)))
    if kind < 0.9:
        return rng.choice(FRAGMENTS) * rng.randint(50, 2000)
    return "".join(chr(rng.randrange(0x20)) + rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 20)))


def rendered(*texts: str) -> str:
    """What Rich writes for ``texts`` as Text and as Textual Content (a Static with markup off)."""
    SAFE.file = io.StringIO()
    for text in texts:
        SAFE.print(Text(text, no_wrap=True, overflow="crop"))  # as the widgets draw: one line each
        SAFE.print(Content(text), no_wrap=True, crop=True)
    return SAFE.file.getvalue()


def assert_no_control(what: str, out: str) -> None:
    assert not any(c in out for c in CONTROL), (what, out[:200])


def one_case(seed: int, index: int) -> None:
    label = hostile_text(seed, index)
    where = f"seed {seed} case {index}"
    for width in (0, 1, 6, 7, 12):
        cell = _fit(label, width, right=bool(index % 2))  # every table cell and column label
        assert cell_len(cell) == width, (where, width, cell)
        assert_no_control(where, cell)
    target = describe_target(
        {"pid": 1, "cmdline": [label, label], "threads": 1, "cpus": label, "mode": label}
    )
    source = describe_source({"kind": label, "path": label})
    fields = [Field(target, key="target", priority=100, keep=True), Field(source, key="source", priority=40)]
    shown = [value for _field, value in fit(fields, 80)]
    content = HelpContent(
        replay=bool(index % 2),
        presets=True,
        views=[View("1", label)],
        columns=[label],
        simulator=[label],
        record_folder=label,
        bookmarks_file=label,
        proxy=label,
        warnings=[label],
    )
    help_lines = help_text(content)
    log = warning_lines([WarningEntry(label, time.time(), 1.5, 2)])
    assert_no_control(where, help_lines)
    assert_no_control(where, "".join(log))
    out = rendered(*log, *(line for line in help_lines.splitlines() if label[:1] in line))
    assert_no_control(where, out)
    assert_no_control(where, rendered(*(printable(v) for v in shown)))  # as HeaderBar draws them
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        print_warning(label)
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("sectormon: warning: "), where
    assert_no_control(where, err.getvalue())


def fuzz(seed: int, count: int) -> int:
    done = 0
    for index in range(count):
        try:
            one_case(seed, index)
        except Exception as exc:  # a traceback: say which case, so it can be pinned
            raise AssertionError(f"seed {seed} case {index}: {exc!r}") from exc
        done += 1
    return done


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ten_thousand_hostile_labels_render_as_plain_one_line_text() -> None:
    start = time.perf_counter()
    assert fuzz(seed=28, count=10_000) == 10_000
    print(f"10,000 hostile labels in {time.perf_counter() - start:.1f} s")


@pytest.mark.timeout(120)
def test_hostile_labels_default_run() -> None:
    assert fuzz(seed=34, count=300) == 300


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.timeout(900)
async def test_hostile_labels_through_a_running_app() -> None:
    """Group names, the target and source, warnings: drawn by the real widgets of one app."""
    fake = FakeSession(a64fx_header(), a64fx_frames(2))
    app = make_app(fake)
    frame = fake.next_frame()
    cases = 0
    start = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        for index in range(300):
            label = hostile_text(7, index)
            app.use_header(
                app.header.with_fields(
                    target=TargetInfo.of({"pid": 7, "cmdline": [label], "threads": 1, "mode": label}),
                    source=SourceInfo.of({"kind": label, "path": label}),
                )
            )
            app.dashboard._group_names = [label, "SC2"]
            groups = {label: 0.5, "SC2": 0.5}
            app.post_message(SessionWarning(label))
            app.post_message(
                FrameArrived(
                    dataclasses.replace(frame, groups=groups, active_group=label, warnings=(label[:50],)),
                    index + 1,
                )
            )
            await pilot.pause()
            text = screen_text(app)
            assert_no_control(f"app case {index}", text)
            if index % 50 == 0:
                await pilot.press("l")
                await pilot.pause()
                assert isinstance(app.screen, WarningsScreen)
                assert_no_control(f"app case {index} (log)", screen_text(app))
                await pilot.press("escape")
                await pilot.press("question_mark")
                await pilot.pause()
                assert_no_control(f"app case {index} (help)", screen_text(app))
                await pilot.press("escape")
            cases += 1
    assert app.return_code in (None, 0)
    assert cases == 300
    print(f"300 hostile labels through the app in {time.perf_counter() - start:.1f} s")
