"""One set-associative LRU cache with A64FX sector partitioning (a core's L1D or a CMG's L2).

Layout chosen for speed in pure Python: per set a list of line numbers in LRU order (index 0 = LRU,
last = MRU) and one dict ``tags`` from line number to a packed state word::

    ready_tick << 4 | dirty << 3 | kind << 2 | sector        (+ PF_MARK: prefetched, not used yet)

``ready_tick`` is when the line's data arrive (engine ticks). The engine's hit path is one dict
lookup and one comparison against ``(now + 1) << 4``: an in-flight or not-yet-used prefetched line
compares greater and takes the slow path. ``kind`` records who allocated a line (L2: demand or
prefetch, for the refill-buffer match events) or where its data came from (L1D: L2 or memory, for
the stall attribution).

Sector rules (facts sheet), applied at fill time only, so changing a maximum takes effect gradually:

- a hit uses the line whatever its sector;
- a sector at or over its maximum evicts its own LRU line (even if the set has an invalid way);
- a sector under its maximum takes an invalid way if there is one, else the LRU line among the
  sectors over their maximum, else (maxima summing to more than the ways) the set's LRU line;
- a sector whose maximum is 0 and holds no line cannot allocate: the line is not cached (bypass);
- with the restriction off every sector is unrestricted: plain LRU.

Two cases need no sector bookkeeping: the restriction is off (every sector fills as plain LRU
with all the ways), or every line in the cache belongs to one sector and so does the fill (plain
LRU with that sector's maximum: at its maximum the sector evicts its own LRU line, which is the
set's LRU line). ``plain[sector]`` is the ways of such a fill. A cache stays in the second case
until a line of another sector arrives; per-set counts are kept only outside both cases
(``counts`` derives them in the second), which is what lets a miss-bound stream skip them.
"""

from __future__ import annotations

NO_VICTIM = -1
SECTOR_MASK = 3
KIND_SHIFT = 2
DIRTY = 8
STATE_BITS = 4
PF_MARK = 1 << 60
# SectorCache.single when no line is cached yet / when lines of several sectors are.
ANY = -1
MIXED = -2
# SectorCache.plain of a sector whose fills follow the sector rules on per-set counts.
COUNTED = -1


class SectorCache:
    """Tags with packed state, LRU order, and (while the restriction is on) per-set sector counts."""

    __slots__ = (
        "enabled",
        "live_counts",
        "mask",
        "maxima",
        "nsets",
        "plain",
        "sets",
        "single",
        "tags",
        "ways",
    )

    def __init__(self, nsets: int, ways: int, maxima: tuple[int, ...], enabled: bool) -> None:
        if nsets & (nsets - 1):
            raise ValueError("the number of sets must be a power of two")
        self.nsets = nsets
        self.ways = ways
        self.mask = nsets - 1
        self.sets: list[list[int]] = [[] for _ in range(nsets)]
        self.tags: dict[int, int] = {}
        # Lines per sector in each set, kept while ``plain`` says COUNTED (see ``counts``).
        self.live_counts: list[list[int]] = [[0, 0, 0, 0] for _ in range(nsets)]
        self.maxima = list(maxima)
        self.enabled = enabled
        # The sector every line belongs to while per-set counts are not kept (ANY: no line yet,
        # MIXED: counts are kept), and per sector the ways of a plain LRU fill, else COUNTED (the
        # sector rules on kept counts) or 0 (the next fill of that sector changes the case).
        self.single = ANY
        self.plain = [0, 0, 0, 0]
        self._update_plain()

    @property
    def counts(self) -> list[list[int]]:
        """Lines per sector in each set while the restriction is on (the model's live list when it
        keeps counts, else derived: every line is in sector ``single``)."""
        if self.single == MIXED or not self.enabled:
            return self.live_counts
        out = [[0, 0, 0, 0] for _ in range(self.nsets)]
        if self.single != ANY:
            for counts, s in zip(out, self.sets, strict=True):
                counts[self.single] = len(s)
        return out

    def _update_plain(self) -> None:
        plain = self.plain
        if not self.enabled:
            plain[:] = [self.ways] * 4
            return
        plain[:] = [COUNTED] * 4 if self.single == MIXED else [0, 0, 0, 0]
        if self.single >= 0:
            plain[self.single] = min(self.maxima[self.single], self.ways)

    def set_maxima(self, maxima: tuple[int, ...], enabled: bool) -> None:
        """New maxima: nothing is evicted now; fills converge to them (the hardware's behaviour)."""
        if enabled and not self.enabled:
            self._recount()
        self.maxima = list(maxima)
        self.enabled = enabled
        self._update_plain()

    def _recount(self) -> None:
        """Counts from the lines, and ``single`` if they all belong to one sector."""
        tags = self.tags
        sectors = set()
        for s, counts in zip(self.sets, self.live_counts, strict=True):
            counts[:] = [0, 0, 0, 0]
            for line in s:
                sec = tags[line] & SECTOR_MASK
                counts[sec] += 1
                sectors.add(sec)
        self.single = sectors.pop() if len(sectors) == 1 else ANY if not sectors else MIXED

    def _keep_counts(self) -> None:
        """Leave the one-sector case: count the lines per set from now on."""
        sec = self.single
        for s, counts in zip(self.sets, self.live_counts, strict=True):
            counts[:] = [0, 0, 0, 0]
            if sec >= 0:
                counts[sec] = len(s)
        self.single = MIXED
        self._update_plain()

    def __contains__(self, line: int) -> bool:
        return line in self.tags

    def touch(self, line: int) -> None:
        s = self.sets[line & self.mask]
        if s[-1] != line:
            s.remove(line)
            s.append(line)

    def sector_of(self, line: int) -> int:
        return self.tags[line] & SECTOR_MASK

    def kind_of(self, line: int) -> int:
        return (self.tags[line] >> KIND_SHIFT) & 1

    def is_dirty(self, line: int) -> bool:
        return bool(self.tags[line] & DIRTY)

    def mark_dirty(self, line: int) -> None:
        self.tags[line] |= DIRTY

    def fill(self, line: int, state: int) -> tuple[int, int]:
        """Insert ``line`` (absent) as MRU of its set with packed ``state``; returns ``(victim, its state)``.

        ``victim`` is NO_VICTIM when nothing was evicted. If the sector may not allocate at all
        (maximum 0) the line is not inserted and NO_VICTIM is returned too: callers check
        ``line in tags`` when they need to know.
        """
        s = self.sets[line & self.mask]
        tags = self.tags
        sec = state & SECTOR_MASK
        ways = self.plain[sec]
        if not ways:
            if self.single == ANY and self.maxima[sec]:
                self.single = sec
                self._update_plain()
                ways = self.plain[sec]
            else:
                self._keep_counts()
        if ways > 0:
            s.append(line)
            tags[line] = state
            if len(s) <= ways:
                return NO_VICTIM, 0
            victim = s.pop(0)
            return victim, tags.pop(victim)
        counts = self.live_counts[line & self.mask]
        maxima = self.maxima
        if counts[sec] >= maxima[sec]:
            # At its maximum the sector replaces its own LRU line (the counts do not change); with
            # a maximum of 0 and no line of its own it cannot allocate at all.
            for victim in s:
                if tags[victim] & SECTOR_MASK == sec:
                    s.remove(victim)
                    s.append(line)
                    tags[line] = state
                    return victim, tags.pop(victim)
            return NO_VICTIM, 0
        counts[sec] += 1
        s.append(line)
        tags[line] = state
        if len(s) <= self.ways:
            return NO_VICTIM, 0
        # Under its maximum in a full set: the LRU line among the sectors over their maximum (the
        # filling sector is not one of them), else the set's LRU line.
        for victim in s:
            vsec = tags[victim] & SECTOR_MASK
            if counts[vsec] > maxima[vsec]:
                break
        else:
            victim = s[0]
        s.remove(victim)
        vstate = tags.pop(victim)
        counts[vstate & SECTOR_MASK] -= 1
        return victim, vstate

    def occupancy(self, set_index: int) -> list[int]:
        """Lines per sector in one set (tests and the sector view)."""
        out = [0, 0, 0, 0]
        for line in self.sets[set_index]:
            out[self.tags[line] & SECTOR_MASK] += 1
        return out

    def lines(self) -> int:
        return len(self.tags)
