"""The replay thread's one lifecycle (TimelineSession): start once, stop and release, end on an
error, and pace stream time against a clock."""

from __future__ import annotations

import math
import threading

from sectormon.errors import SectormonError
from sectormon.session.timeline import TimelineSession


class Player(TimelineSession):
    """Plays until stopped, or fails at once with ``problem``; counts what the lifecycle calls."""

    def __init__(self, problem: str | None = None, clock: list[float] | None = None) -> None:
        now = clock if clock is not None else [0.0]
        super().__init__(
            None, start=0.0, end=10.0, speed=1.0, paused=False, time_scale=1.0, clock=lambda: now[0]
        )
        self.problem = problem
        self.playing = threading.Event()
        self.plays = 0
        self.stopped_by: list[str] = []
        self.closed = 0

    def _play(self) -> None:
        self.plays += 1
        if self.problem is not None:
            raise SectormonError(self.problem)
        self.playing.set()
        while not self._wait_for_control(-1):
            pass

    def _stopped_by(self, problem: str) -> None:
        self.stopped_by.append(problem)

    def _close(self) -> None:
        self.closed += 1


def test_start_plays_once_on_its_own_thread_and_stop_releases_after_the_thread_ends() -> None:
    player = Player()
    player.start()
    player.start()
    assert player.playing.wait(5.0)
    thread = player._thread
    assert thread is not None and thread is not threading.current_thread()
    assert thread.name == TimelineSession.THREAD_NAME
    player.stop()
    assert not thread.is_alive()
    assert (player.plays, player.closed) == (1, 1)
    assert player.finished.is_set() and player.error() is None


def test_an_error_ends_playback_and_is_told() -> None:
    player = Player("line 7: bad slice")
    player.start()
    assert player.finished.wait(5.0)
    assert player.error() == "line 7: bad slice"
    assert player.stopped_by == ["line 7: bad slice"]
    player.stop()
    assert player.closed == 1


def test_stop_before_start_still_releases() -> None:
    player = Player()
    player.stop()
    assert (player.plays, player.closed) == (0, 1)


def test_pacing_waits_for_stream_time_and_skips_holes() -> None:
    now = [100.0]
    player = Player(clock=now)
    anchor, due = player._wait_until_due(0.0, None, 1.0, 1.0, seen=-1)  # from the position: due now
    assert (anchor, due) == ((0.0, 100.0), True)
    now[0] = 100.5
    # 1 s of stream time at 2x is due 0.5 s after the anchor: now.
    assert player._wait_until_due(1.0, anchor, 2.0, 5.0, seen=-1) == (anchor, True)
    # A jump past the hole is not waited through: it anchors again at once.
    assert player._wait_until_due(50.0, anchor, 1.0, 5.0, seen=-1) == ((50.0, 100.5), True)
    # At an infinite speed nothing is waited for.
    assert player._wait_until_due(9.0, anchor, math.inf, 5.0, seen=-1) == (anchor, True)


def test_pacing_gives_way_to_a_control_change() -> None:
    player = Player(clock=[0.0])
    player.set_speed(2.0)  # a control changed after version 0: the wait ends at once, not due
    assert player._wait_until_due(5.0, (0.0, 0.0), 1.0, 10.0, seen=0) == ((0.0, 0.0), False)
