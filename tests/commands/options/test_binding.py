"""--bind's checks: a launched command only, CPUs of this host that sectormon itself may use."""

from __future__ import annotations

import pytest

from sectormon.commands.options import binding
from sectormon.errors import UsageError
from sectormon.host.topology import Topology

FOUR = Topology(
    cpus=(0, 1, 2, 3),
    cmg_of={0: 0, 1: 0, 2: 1, 3: 1},
    cmgs={0: (0, 1), 1: (2, 3)},
    is_a64fx=False,
    model="test",
    domain="l2",
)


def test_not_given_is_no_binding() -> None:
    assert binding.bind_cpus(None, (), FOUR) == ()


def test_the_list_is_read_as_cpus_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binding.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert binding.bind_cpus("3,0-1", ["./app"], FOUR) == (0, 1, 3)


@pytest.mark.parametrize(
    ("text", "command", "allowed", "said"),
    [
        ("0", [], {0}, "--bind pins the threads of a command sectormon launches"),
        ("0,7", ["./app"], {0, 1, 2, 3}, "--bind: CPU 7 is not an online compute CPU (choose from 0-3)"),
        ("", ["./app"], {0}, "--bind: empty CPU list"),
        ("1-3", ["./app"], {0, 1}, "--bind: CPU 2-3 is outside the CPUs sectormon may run on (0-1"),
    ],
)
def test_a_bad_bind_names_the_option_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, text: str, command: list[str], allowed: set[int], said: str
) -> None:
    monkeypatch.setattr(binding.os, "sched_getaffinity", lambda _pid: allowed)
    with pytest.raises(UsageError) as raised:
        binding.bind_cpus(text, command, FOUR)
    assert str(raised.value).startswith(said)
