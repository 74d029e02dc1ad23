"""perf's control words, read as perf 6.1 reads them (tools/perf/util/evlist.c)."""

from __future__ import annotations

import pytest

from sectormon.rotation.control_commands import (
    ACK,
    DISABLE,
    ENABLE,
    MAX_LENGTH,
    PING,
    SNAPSHOT,
    STOP,
    UNKNOWN,
    CommandReader,
    ControlCommand,
    parse_command,
)


@pytest.mark.parametrize(
    ("text", "verb", "name", "malformed", "acked"),
    [
        ("enable", ENABLE, None, False, True),
        ("disable", DISABLE, None, False, True),
        ("enable page-faults:u", ENABLE, "page-faults:u", False, True),
        ("disable SW1", DISABLE, "SW1", False, True),
        ("enablex", ENABLE, None, True, True),  # perf: "wrong command", acked all the same
        ("ping", PING, None, False, True),
        ("pingpong", PING, None, False, True),  # perf matches the word's start only
        ("stop", STOP, None, False, True),
        ("snapshot", SNAPSHOT, None, False, False),  # perf stat never acks it
        ("ack", "ack", None, False, False),
        ("bogus", UNKNOWN, None, False, False),
        ("Enable", UNKNOWN, None, False, False),  # perf's match is case-sensitive
    ],
)
def test_a_command_is_read_as_perf_reads_it(
    text: str, verb: str, name: str | None, malformed: bool, acked: bool
) -> None:
    command = parse_command(text)
    assert (command.verb, command.name, command.malformed, command.acked) == (verb, name, malformed, acked)
    assert command.text == text


def test_the_ack_is_perfs_five_bytes() -> None:
    """perf writes sizeof("ack\\n"): the newline and the C string's NUL (seen on perf 6.1)."""
    assert ACK == b"ack\n\x00"


def test_commands_end_at_a_newline_or_a_nul_and_wait_for_the_rest_of_a_line() -> None:
    reader = CommandReader()
    assert reader.feed(b"enable\ndisa") == [ControlCommand(ENABLE, "enable")]
    done = [ControlCommand(DISABLE, "disable"), ControlCommand(PING, "ping")]
    assert reader.feed(b"ble\x00\n\nping\n") == done
    assert reader.feed(b"") == []


def test_a_line_longer_than_perfs_buffer_is_cut_where_perf_cuts_it() -> None:
    long = b"disable " + b"x" * 100 + b"\n"
    commands = CommandReader().feed(long)
    assert [c.text for c in commands] == [long[:MAX_LENGTH].decode(), long[MAX_LENGTH:-1].decode()]
    assert commands[0].verb == DISABLE and commands[1].verb == UNKNOWN
