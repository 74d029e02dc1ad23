"""The control descriptor's reader and the acks, over real pipes: commands reach the control as
written, an ack is written only once the sampler thread has applied its command."""

from __future__ import annotations

import os

from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.control import CountingControl
from sectormon.rotation.control_commands import ACK
from sectormon.rotation.plan import RotationPlan, plan_rotation, select_groups
from sectormon.session.control_channel import ControlChannel, ControlFds, DelayTimer
from tests.e2e.helpers import wait_until


def _plan() -> RotationPlan:
    profile = Profile("t", "test", 8, {"A": EventDef("A", "ra")}, (GroupDef("G1", ("A",)),), ())
    return plan_rotation(profile, select_groups(profile, None), {})


def _readable(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 64)
    except BlockingIOError:
        return b""


def test_commands_are_posted_as_written_and_acked_once_applied() -> None:
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    warnings: list[str] = []
    control = CountingControl(_plan(), start_enabled=True, on_warning=warnings.append)
    woken: list[int] = []
    control.attach(wake=lambda: woken.append(1), stop=lambda: None)
    channel = ControlChannel(ControlFds(ctl_r, ack_w, owned=False, shown="fd:x,y"), control, warnings.append)
    channel.start()
    try:
        os.write(ctl_w, b"disable\nbogus\npi")
        wait_until(lambda: len(woken) >= 2, "two commands posted")
        assert _readable(ack_r) == b""  # nothing is acked before the sampler applies it
        control.apply(0.5)
        assert control.all_held
        assert _readable(ack_r) == ACK  # 'bogus' is not acked, as perf does not ack it
        os.write(ctl_w, b"ng\n")
        wait_until(lambda: len(woken) >= 3, "ping posted")
        control.apply(0.6)
        assert _readable(ack_r) == ACK
        assert warnings == ["--control: unknown command 'bogus' (ignored)"]
    finally:
        channel.close()
        for fd in (ctl_r, ctl_w, ack_r, ack_w):
            os.close(fd)  # fd: descriptors are the caller's: the channel left them open


def test_a_handed_down_descriptor_at_its_end_is_no_longer_listened_to() -> None:
    ctl_r, ctl_w = os.pipe()
    control = CountingControl(_plan(), start_enabled=True, on_warning=lambda _m: None)
    channel = ControlChannel(ControlFds(ctl_r, None, owned=True, shown="fd:x"), control, lambda _m: None)
    channel.start()
    os.close(ctl_w)
    wait_until(lambda: not channel._thread.is_alive(), "the listener ended")
    channel.close()  # and closes what it owns
    try:
        os.fstat(ctl_r)
        raise AssertionError("the owned descriptor is still open")
    except OSError:
        pass


def test_an_ack_nobody_reads_is_said_once_and_counting_goes_on() -> None:
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    os.set_blocking(ack_w, False)
    os.close(ack_r)  # the script went away: writes fail with EPIPE
    warnings: list[str] = []
    control = CountingControl(_plan(), start_enabled=True, on_warning=warnings.append)
    woken: list[int] = []
    control.attach(wake=lambda: woken.append(1), stop=lambda: None)
    channel = ControlChannel(ControlFds(ctl_r, ack_w, owned=True, shown="fd:3,4"), control, warnings.append)
    channel.start()
    try:
        os.write(ctl_w, b"disable\nenable\n")
        wait_until(lambda: len(woken) == 2, "both commands posted")
        control.apply(1.0)
        assert not control.all_held
        assert len([w for w in warnings if "acks stopped" in w]) == 1
    finally:
        channel.close()
        os.close(ctl_w)


def test_the_delay_timer_enables_counting_without_an_ack() -> None:
    control = CountingControl(_plan(), start_enabled=False, on_warning=lambda _m: None)
    timer = DelayTimer(0.01, control)
    timer.start()
    wait_until(lambda: control.posted, "the timer posted its enable")
    control.apply(0.01)
    assert not control.all_held
    timer.close()
