"""Every numeric command-line option's range, checked in one place.

An option gets ``type=RANGE.parser("--option")``: the value is parsed and checked while argparse
reads the command line, so a bad one is a one-line :class:`~sectormon.errors.UsageError` (exit 2)
that names the option and the range, before anything starts. :meth:`Range.check` applies the
same rule to a value known only later (a default that depends on the source). The ranges are
wide enough for every real use and narrow enough that no value overflows, spins or floods:
``--speed 1e-308`` would make a replay wait longer than a float holds, ``--timeslice 1e-9``
would have the sampler do nothing but switch groups.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from sectormon.errors import UsageError
from sectormon.files.text import is_ascii_digits

DAY = 86_400.0
YEAR = 365 * DAY


def _g(value: float) -> str:
    exact = isinstance(value, int) or (value == int(value) and abs(value) < 1e15)
    return str(int(value)) if exact else f"{value:g}"


@dataclass(frozen=True, slots=True)
class Range:
    """A closed range ``[low, high]`` (``low_open``: ``low`` itself excluded), of whole numbers
    when ``integer``. ``noun`` is what to give (``a number of seconds``), ``suffix`` the unit
    after the bounds (``frames``), as the help and the errors say them."""

    low: float
    high: float
    noun: str = "a number"
    suffix: str = ""
    integer: bool = False
    low_open: bool = False

    def describe(self) -> str:
        """The range in words: ``a whole number from 1 to 48``, ``a number of seconds > 0 and <= 60``."""
        suffix = f" {self.suffix}" if self.suffix else ""
        if self.low_open:
            return f"{self.noun} > {_g(self.low)} and <= {_g(self.high)}{suffix}"
        return f"{self.noun} from {_g(self.low)} to {_g(self.high)}{suffix}"

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def check(self, option: str, value: float) -> None:
        """Raise the option's one-line error unless ``value`` is in the range."""
        if not self.contains(value):
            raise UsageError(f"{option} {value}: give {self.describe()}")

    def parser(self, option: str) -> RangeParser:
        """An argparse ``type`` for ``option``: the text as a number in this range."""
        return RangeParser(self, option)

    def help(self, text: str) -> str:
        """``text`` with the range appended, for the option's help."""
        return f"{text}; {self.describe()}"


class RangeParser:
    """The argparse ``type`` of one option (:meth:`Range.parser`)."""

    def __init__(self, bounds: Range, option: str) -> None:
        self.bounds = bounds
        self.option = option

    def __call__(self, text: str) -> float:
        stripped = text.strip()
        try:
            value: float = _parse_ascii(stripped, integer=self.bounds.integer)
        except ValueError:
            raise UsageError(f"{self.option} {text!r}: give {self.bounds.describe()}") from None
        self.bounds.check(self.option, value)
        return value


def _parse_ascii(text: str, *, integer: bool) -> float:
    """``text`` as an int (``integer``) or a float, written in ASCII: ``int`` and ``float`` also
    read ``２`` (fullwidth), ``٣`` and ``1_000``, and ``--pid ２`` then counted pid 2."""
    if not text.isascii() or "_" in text:
        raise ValueError(text)
    if integer:
        if not is_ascii_digits(text[1:] if text[:1] in ("+", "-") else text):
            raise ValueError(text)
        return int(text)
    return float(text)


def whole(low: int, high: int, suffix: str = "") -> Range:
    return Range(low, high, "a whole number", suffix, integer=True)


def seconds(low: float, high: float, *, low_open: bool = False) -> Range:
    return Range(low, high, "a number of seconds", low_open=low_open)


# -- shared by several commands ------------------------------------------------------------------

PID = whole(1, 2**31 - 1)
"""What a pid_t holds; a pid beyond the system's pid_max is "no such process", which says more."""


class ListParser:
    """An argparse ``type`` for a comma list of numbers in one range (``--pid 41,42``)."""

    def __init__(self, bounds: Range, option: str) -> None:
        self.item = RangeParser(bounds, option)
        self.option = option

    def __call__(self, text: str) -> tuple[int, ...]:
        items = text.split(",")
        if not all(item.strip() for item in items):
            raise UsageError(
                f"{self.option} {text!r}: give {self.item.bounds.describe()}, or several joined by commas"
            )
        return tuple(int(self.item(item)) for item in items)


COUNT = whole(1, 1_000_000_000, "frames")
DURATION = seconds(0.0, 10 * YEAR, low_open=True)
BASELINE_AFTER = seconds(0.0, 10 * YEAR)

# The live session's clock: perf counts in wall-clock seconds, the simulator in simulated seconds
# (a simulated run lasts milliseconds: its slices are microseconds long).
TIMESLICE = {"perf": seconds(0.001, 60.0), "sim": Range(1e-6, 1.0, "a number of simulated seconds")}
INTERVAL = {"perf": seconds(0.001, DAY), "sim": Range(1e-6, 60.0, "a number of simulated seconds")}
RECENT = {"perf": seconds(0.001, 7 * DAY), "sim": Range(1e-6, 3600.0, "a number of simulated seconds")}
MAX_OVERHEAD = Range(0.0, 100.0, "a percentage of one core", low_open=True)


class ClockParser:
    """The argparse ``type`` of a live session's time option (:data:`TIMESLICE`, :data:`INTERVAL`,
    :data:`RECENT`), whose range depends on the source, known only once the whole command line is
    read. It keeps the text; :meth:`parse` reads it against the source's range, so a bad value,
    too small, too large or no number at all, gets one error stating that one range."""

    def __init__(self, by_clock: dict[str, Range], option: str) -> None:
        self.by_clock = by_clock
        self.option = option

    def __call__(self, text: str) -> str:
        return text

    def parse(self, text: str, clock: str) -> float:
        """``text`` as seconds of ``clock`` (``perf`` or ``sim``), or the option's one-line error."""
        return self.by_clock[clock].parser(self.option)(text)

    def help(self, text: str) -> str:
        """``text`` with each source's range appended, for the option's help."""
        return text + "; " + "; ".join(f"{kind}: {r.describe()}" for kind, r in self.by_clock.items())


TIMESLICE_OPTION = ClockParser(TIMESLICE, "--timeslice")
INTERVAL_OPTION = ClockParser(INTERVAL, "--interval")
RECENT_OPTION = ClockParser(RECENT, "--recent")


def read_clock_options(args: argparse.Namespace, clock: str) -> None:
    """Read the time options kept as text in ``args`` against ``clock``'s ranges, in place, as
    seconds; options read already (or not given) are left as they are."""
    options = (("timeslice", TIMESLICE_OPTION), ("interval", INTERVAL_OPTION), ("recent", RECENT_OPTION))
    for dest, parser in options:
        text = getattr(args, dest, None)
        if isinstance(text, str):
            setattr(args, dest, parser.parse(text, clock))


# -- replay ----------------------------------------------------------------------------------------

SPEED = Range(0.01, 10_000.0, "a speed", "times real time")
STREAM_TIME = seconds(0.0, 10 * YEAR)

# -- the simulator ---------------------------------------------------------------------------------

WARMUP = Range(0.0, 1.0, "a number of simulated seconds")
PACE = Range(0.0, 60.0, "a number of wall seconds")
SEED = whole(0, 2**32 - 1)

# -- sampling (hotspots) ------------------------------------------------------------------------------

PERIOD = whole(1, 2**63 - 1, "events")
FREQUENCY = whole(1, 1_000_000, "samples a second")
RING_PAGES = whole(1, 65_536, "pages")
LINE_SIZE = whole(8, 4096, "bytes")
TOP = whole(1, 100_000, "rows")
PROXY = whole(1, 4096, "units per CMG")
DELAY_MS = whole(-1, 7 * 86_400_000, "ms")
REGION_LEVEL = whole(0, 2**31 - 1, "a fapp region level")
BUDGET = whole(1, 1_000_000, "simulations")
ADVISE_TIME_LIMIT = Range(1.0, DAY, "a number of wall seconds")
PRECISE = whole(0, 3)

# -- reports ---------------------------------------------------------------------------------------

REPORT_WIDTH = whole(40, 1000, "columns")
