"""Garbage collection between cycles, not inside them.

CPython's automatic collector runs a full collection whenever the objects that
survived since the last one reach a quarter of the heap. A busy collector
(20,000 group-partitions all committing) replaces that many windows, clocks and
health entries every cycle, so it crossed the mark about twice a second and
scanned its whole heap each time: 70 full collections in 40 s, 6-11 CPU-s of
them. Collecting the young generations after every cycle instead still cost
about 50 ms a cycle, since a collection scans every object alive at that moment
and each cycle's report is. So the collector process collects after the cycle
once `young_every_s` has passed (young generations) and once a minute (the whole
heap): objects that die in between, most of them, are never scanned. Reference
counting still frees everything else at once; only garbage in reference cycles
waits, at most `young_every_s`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

YOUNG_EVERY_S = 10.0
FULL_EVERY_S = 60.0


class GarbagePacer:
    """A collector observer: automatic collection off, garbage collected after the cycles that are due."""

    def __init__(
        self,
        young_every_s: float = YOUNG_EVERY_S,
        full_every_s: float = FULL_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.young_every_s = young_every_s
        self.full_every_s = full_every_s
        self.clock = clock
        self._young_at = self._full_at = clock()
        gc.disable()

    def __call__(self, *_cycle) -> None:
        now = self.clock()
        if now - self._full_at >= self.full_every_s:
            self._young_at = self._full_at = now
            gc.collect()
        elif now - self._young_at >= self.young_every_s:
            self._young_at = now
            gc.collect(1)
