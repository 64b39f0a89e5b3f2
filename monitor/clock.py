"""Clocks that a jump of the wall clock cannot fool (docs/production.md, "When things break").

The wall clock is what a cycle is stamped with and what retention ages rows by, and it
can jump: NTP stepping a drifted clock, a VM resumed, an operator's mistake. Two rules:
- `CycleClock`: a cycle's time never goes back. After a backward jump the collector
  stamps on from its last cycle by the monotonic clock until the wall clock catches up,
  so no interval ends before it starts and no lag in seconds is measured against an
  earlier "now". A forward jump is taken (it may be a correction) and said once.
- `RetentionClock`: retention's "now" never runs ahead of the time that really passed
  since the collector started, so a forward jump folds or deletes nothing early; a
  restart takes the new wall clock as its start.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from monitor.logs import get_logger

JUMP_MS = 60_000  # a wall clock this far from the monotonic one is a jump, not drift

log = get_logger("collector")


def wall_ms() -> int:
    return int(time.time() * 1000)


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class CycleClock:
    """Epoch milliseconds for stamping cycles: the wall clock, but never earlier than the previous stamp."""

    def __init__(self, wall: Callable[[], int] = wall_ms, monotonic: Callable[[], int] = monotonic_ms):
        self.wall = wall
        self.monotonic = monotonic
        self._last: tuple[int, int] | None = None  # (stamp, monotonic ms) of the previous call
        self._behind = False  # the wall clock is behind the stamps since a backward jump

    def __call__(self) -> int:
        wall, mono = self.wall(), self.monotonic()
        if self._last is None:
            stamp = wall
        else:
            last, last_mono = self._last
            steady = last + (mono - last_mono)
            if wall < last:
                if not self._behind:
                    self._behind = True
                    log.warning(
                        "the wall clock went back by %.0fs: cycles are stamped on from the last one "
                        "until it catches up",
                        (steady - wall) / 1000,
                    )
                stamp = steady
            else:
                if self._behind:
                    self._behind = False
                    log.info("the wall clock caught up with the cycles' stamps")
                elif wall - steady > JUMP_MS:
                    log.warning("the wall clock jumped forward by %.0fs", (wall - steady) / 1000)
                stamp = wall
        self._last = (stamp, mono)
        return stamp


class RetentionClock:
    """Epoch milliseconds for retention: the wall clock, never ahead of its start plus the time that passed."""

    def __init__(self, wall: Callable[[], int] = wall_ms, monotonic: Callable[[], int] = monotonic_ms):
        self.wall = wall
        self.monotonic = monotonic
        self._start = (wall(), monotonic())

    def __call__(self) -> int:
        start_wall, start_mono = self._start
        return min(self.wall(), start_wall + (self.monotonic() - start_mono))
