"""``-e EVENTS``: perf's event-list syntax, read into the events asked for and their groups.

The syntax is perf stat's, so a command line copied from the PMU document's procedures
(``perf stat -e r0004,r0003``) works unchanged: a comma-separated list of events, where ``{a,b}``
asks for events counted together in one group, and ``:u`` / ``:k`` (or ``:uk``) after an event or
a group says which privilege levels it counts. An event is a profile's name (``L1D_CACHE``), a
perf generic name (``page-faults``), a raw code (``r0250``) or a PMU form (``cpu/event=0x3c/``,
whose commas and colons between the slashes are its own). This module only reads the syntax: what
each name means is :mod:`sectormon.profiles.adhoc`'s job, whether the host can count it the
probe's. Pure text in, records out, so the property tests drive it alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sectormon.errors import UsageError

MODIFIERS = "uk"
"""The modifiers sectormon honours: ``u`` (user mode) and ``k`` (kernel mode)."""


@dataclass(frozen=True, slots=True)
class EventChoice:
    """One event of the list: ``text`` as typed (perf prints it so), ``name`` without its
    modifiers, ``modifiers`` the letters of :data:`MODIFIERS` it carries (its group's included,
    in that order; ``""``: none given), ``group`` the index of its ``{...}`` (``None``: ungrouped)."""

    text: str
    name: str
    modifiers: str = ""
    group: int | None = None


def parse_event_list(text: str, option: str = "-e") -> tuple[EventChoice, ...]:
    """The events of ``text`` in the order given; a malformed list is one :class:`UsageError`
    naming ``option``, the part at fault and the fix."""
    if not text.strip():
        raise _bad(option, text, "the list is empty", "name at least one event, e.g. -e cycles,instructions")
    choices: list[EventChoice] = []
    groups = 0
    for item in _split(text, option):
        if item.startswith("{"):
            body, modifiers = _group_parts(item, text, option)
            members = _split(body, option, whole=text)
            if any(member.startswith("{") for member in members):
                raise _bad(option, text, "groups cannot be nested", "write each {...} at the top level")
            for member in members:
                choices.append(_event(member, text, option, group=groups, outer=modifiers))
            groups += 1
        else:
            choices.append(_event(item, text, option, group=None, outer=""))
    return tuple(choices)


def _bad(option: str, text: str, problem: str, fix: str) -> UsageError:
    return UsageError(f"{option} {text!r}: {problem} ({fix})")


def _split(text: str, option: str, *, whole: str | None = None) -> list[str]:
    """The top-level comma-separated items of ``text``: commas inside ``{...}`` or inside a PMU
    form's slashes belong to it."""
    whole = text if whole is None else whole
    items: list[str] = []
    depth = 0
    in_pmu = False
    start = 0
    for index, char in enumerate(text):
        if char == "/":
            in_pmu = not in_pmu
        elif in_pmu:
            continue
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise _bad(option, whole, "'}' without its '{'", "write a group as {a,b}")
        elif char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    if depth > 0:
        raise _bad(option, whole, "'{' without its '}'", "close the group: {a,b}")
    if in_pmu:
        raise _bad(option, whole, "a PMU form without its closing '/'", "write it as pmu/event=0x11/")
    items.append(text[start:].strip())
    if any(not item for item in items):
        raise _bad(option, whole, "an empty event between commas", "remove the extra comma")
    return items


def _group_parts(item: str, whole: str, option: str) -> tuple[str, str]:
    """A ``{...}[:mods]`` item's inside and its modifiers."""
    close = item.rfind("}")
    tail = item[close + 1 :]
    if tail and not tail.startswith(":"):
        raise _bad(option, whole, f"{tail!r} after a group's '}}'", "put a comma after the group")
    body = item[1:close]
    if not body.strip():
        raise _bad(option, whole, "an empty group {}", "name its events: {a,b}")
    return body, _modifiers(tail[1:], whole, option) if tail else ""


def _event(item: str, whole: str, option: str, *, group: int | None, outer: str) -> EventChoice:
    """One event, its modifiers split off (a PMU form's own colons stay in it)."""
    if "{" in item or "}" in item:
        raise _bad(option, whole, f"misplaced brace in {item!r}", "write a group as {a,b}, groups not nested")
    slash = item.rfind("/")
    head, colon, tail = item[slash + 1 :].rpartition(":")
    if colon:
        name = (item[: slash + 1] + head).strip()
        own = _modifiers(tail, whole, option)
    else:
        name = item.strip()
        own = ""
    if not name:
        raise _bad(option, whole, f"no event before ':{tail}'", "write the event first, e.g. cycles:u")
    if any(char.isspace() for char in name):
        raise _bad(option, whole, f"a space inside {name!r}", "separate events with commas")
    if ":" in name[slash + 1 :]:
        raise _bad(
            option, whole, f"more than one ':' in {item!r}", "write the modifiers once, e.g. cycles:uk"
        )
    letters = set(own) | set(outer)
    modifiers = "".join(letter for letter in MODIFIERS if letter in letters)
    text = item.strip() + (f":{outer}" if outer else "")
    return EventChoice(text=text, name=name, modifiers=modifiers, group=group)


def _modifiers(text: str, whole: str, option: str) -> str:
    if not text:
        raise _bad(option, whole, "nothing after ':'", "write a modifier (u or k) or drop the ':'")
    unknown = sorted({char for char in text if char not in MODIFIERS})
    if unknown:
        raise _bad(
            option,
            whole,
            f"modifier {''.join(unknown)!r} is not supported",
            "sectormon honours u (user) and k (kernel) only",
        )
    return text
