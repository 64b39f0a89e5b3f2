"""Garbage collection between cycles, not inside them.

CPython's automatic collector runs a full collection whenever the objects that
survived since the last one reach a quarter of the heap. A busy collector
(20,000 group-partitions all committing) replaces that many windows, clocks and
health entries every cycle, so it crossed the mark about twice a second and
scanned its whole heap each time: 70 full collections in 40 s, 6-11 CPU-s of
them. The collector process instead collects the young generations after each
cycle (about 40 ms there) and its whole heap once a minute. Reference counting
still frees everything else at once; only garbage in reference cycles waits.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable

FULL_EVERY_S = 60.0


class GarbagePacer:
    """A collector observer: automatic collection off, young garbage collected after every cycle."""

    def __init__(self, full_every_s: float = FULL_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.full_every_s = full_every_s
        self.clock = clock
        self._full_at = clock()
        gc.disable()

    def __call__(self, *_cycle) -> None:
        now = self.clock()
        if now - self._full_at >= self.full_every_s:
            self._full_at = now
            gc.collect()
        else:
            gc.collect(1)
