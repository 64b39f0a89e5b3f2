"""Lag in offsets and in seconds (pure): the one definition every part of lagmon computes.

Lag is log_end - committed, never negative, unknown without either (compute_lag).
Lag in seconds is kafka-lag-exporter's method over the log-end history, with its
artefacts fixed (compute_time_lag); spark.transforms computes the same in columns.

Per partition the history is a table of (log_end, observed_at) points, read as
their running maximum (a log end only grows; a restarted broker may briefly
report a lower one). The record at offset C was appended when the log end went
from C to C + 1, so its time is interpolated at C + 1 between the last point
whose log end was <= C and the next one (docs/architecture.md section 6); lag seconds =
now - that time. The guards:

- never negative (#138): clamped at 0, and C at or past the newest log end is 0;
- never infinite on a flat table (#121): a flat segment is a plateau, not a slope
  to divide by; with no point at or below C the answer is a bound, not a ratio;
- no absurd extrapolation for a consumer replaying far behind the table (#496):
  the answer is "at least now - oldest point" (`at_least=True`);
- no quantisation to the poll interval (#353): the interpolation uses the
  bracketing pair around C + 1, not the nearest point, so a steady log end gives
  a smooth answer between polls.

Every answer says how close it is. The record was appended between the two
bracketing points (the first saw a log end <= C, the second one past it), so an
interpolated answer is off by at most the larger of its distances to them: its
`error`, one sampling interval wide at most while every sample is kept. A record
older than the history has only a lower bound; its own timestamp (exact mode) is
believed only where the bracket allows it (compute_exact_clock).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from monitor.models import RecordTime

# A record's CreateTime is set before it waits in the producer's queue, and the broker's clock (its append
# time) and the collector's (the bracket's) may differ a little: a timestamp this close outside is believed.
EXACT_SLACK_MS = 2_000


@dataclass(frozen=True)
class TimeLag:
    seconds: float
    at_least: bool = False  # True: the record is older than the history; `seconds` is a lower bound
    exact: bool = False  # True: from the record's own timestamp, not interpolated
    error: float = 0.0  # the true lag is within `seconds` ± `error` (interpolated answers)

    @property
    def method(self) -> str:
        """How the figure was obtained: "exact", "interpolated" or "bound" (docs/health.md)."""
        return "bound" if self.at_least else "exact" if self.exact else "interpolated"

    @property
    def error_bound(self) -> float:
        """Seconds the true lag may differ by: infinite for a bound (the record may be older still)."""
        return math.inf if self.at_least else self.error

    def __str__(self) -> str:
        if self.at_least:
            return f"≥ {self.seconds:.1f}s"
        return f"{self.seconds:.1f}s" + (f" ±{self.error:.1f}" if self.error >= 0.05 else "")


def compute_lag(committed: int | None, log_end: int | None) -> int | None:
    """Records the consumer at `committed` has still to read: a commit past the log end sampled with it is 0.

    None when either is unknown; a negative committed offset is Kafka's "no offset" (-1), not a position.
    """
    if committed is None or log_end is None or committed < 0:
        return None
    return max(0, log_end - committed)


def compute_time_lag(committed: int | None, history: Sequence[tuple[int, int]], now: int) -> TimeLag | None:
    """Seconds the consumer at `committed` trails, from `history` = (log_end, at_ms) oldest first.

    None when nothing is committed or the history is too short to say anything.
    """
    if committed is None or committed < 0 or not history:
        return None
    # Log ends only grow; a restarted broker may briefly report a lower one: use the running maximum.
    running, top = [], history[0][0]
    for end, _ in history:
        top = max(top, end)
        running.append(top)
    return compute_lag_clock(committed, running, [at for _, at in history]).at(now)


class LagClock(NamedTuple):
    """Lag in seconds as a clock: it runs from when the oldest record not yet consumed was appended.

    It changes only when the committed offset or the log-end history does, so a
    judge that keeps it needs no recomputation while nothing moves.
    """

    since: float | None  # epoch ms; None: nothing waits (caught up)
    at_least: bool = False  # `since` is the start of the history: the record is older still
    exact: bool = False  # from the record's own timestamp, not interpolated
    earliest: float | None = None  # ms: the record was appended between `earliest` and `latest`;
    latest: float | None = None  # None: at `since` itself

    @property
    def error(self) -> float:
        """Ms `since` may be off by: its distance to the farther end of the bracket it lies in."""
        return 0.0 if self.earliest is None else max(self.since - self.earliest, self.latest - self.since)

    def at(self, now: int) -> TimeLag | None:
        if self.since is None:
            return TimeLag(0.0)
        seconds = (now - self.since) / 1000
        if self.at_least:
            return TimeLag(seconds, at_least=True) if seconds > 0 else None
        return TimeLag(max(0.0, seconds), exact=self.exact, error=self.error / 1000)


def compute_lag_clock(committed: int, running: Sequence[int], ats: Sequence[int]) -> LagClock:
    """The clock for `committed` over a history of running-maximum log ends and their times (non-empty)."""
    if committed >= running[-1]:
        return LagClock(None)
    target = committed + 1  # the log end right after the record at `committed` was appended
    i = bisect_right(running, committed)  # first point whose log end passed `committed`
    if i == 0:  # older than the whole history: only a lower bound is known
        return LagClock(ats[0], at_least=True)
    end_a, at_a, end_b, at_b = running[i - 1], ats[i - 1], running[i], ats[i]
    since = at_a + (target - end_a) / (end_b - end_a) * (at_b - at_a)
    return LagClock(since, False, False, at_a, at_b)


def compute_exact_clock(record: RecordTime, interpolated: LagClock | None) -> LagClock | None:
    """The clock from the record's own timestamp where the log-end history allows it, else the interpolated one.

    An append time is exact. A CreateTime is set by the producer: before the record
    waits in its queue, or at any time at all (a replay, a skewed clock). So a
    CreateTime is believed only where the history can check it: moved into the
    bracket the record was appended in, it is off by at most its distance to the
    farther end of the bracket (never more than the bracket is wide). A timestamp
    far outside that bracket (or, for a record older than the history, newer than
    its start) is not when the record was appended.
    """
    timestamp, log_append = record
    if interpolated is None or interpolated.since is None:
        return LagClock(timestamp, exact=True) if log_append else None
    if interpolated.at_least:
        if not log_append or timestamp > interpolated.since + EXACT_SLACK_MS:
            return interpolated
        return LagClock(timestamp, exact=True)
    low, high = interpolated.earliest, interpolated.latest
    if not low - EXACT_SLACK_MS <= timestamp <= high + EXACT_SLACK_MS:
        return interpolated
    if log_append:  # just past the bracket too: the broker's clock stamped it, the collector's the bracket
        return LagClock(timestamp, exact=True)
    at = min(max(timestamp, low), high)
    return LagClock(at, exact=True, earliest=low, latest=high)


def compute_doubt(clock: LagClock, now: int) -> float:
    """How unsure an answer is relative to itself: its error over its seconds (a bound: infinitely)."""
    if clock.at_least:
        return math.inf
    if clock.since is None:
        return 0.0
    return clock.error / max(1.0, now - clock.since)


def compute_compact_history(history: Sequence[tuple[int, int]], max_points: int) -> list[tuple[int, int]]:
    """At most `max_points` points that answer (nearly) like `history`, over the same time span.

    Inner points of plateaus go first (they add nothing: a plateau keeps its first
    and last point, the last saying until when nothing was appended); then the
    older half is thinned to every other point, so the table keeps its horizon
    (no bound where there was an answer) at a coarser resolution for older times.
    """
    out: list[tuple[int, int]] = []
    for point in history:
        if len(out) >= 2 and out[-1][0] == point[0] == out[-2][0]:
            out[-1] = point
        else:
            out.append(point)
    while len(out) > max_points >= 2:
        half = len(out) // 2
        older = out[:half]
        out = older[::2] + ([older[-1]] if len(older) % 2 == 0 else []) + out[half:]
        if len(out) > max_points and half < 2:
            out = out[-max_points:]
    return out


class LogEndHistory:
    """One partition's log-end points for the running collector, kept small and ready to answer.

    Log ends are stored as their running maximum; a plateau keeps only its first
    and last point (an idle partition stays at two points), and past 2 x
    `max_points` the table is compacted as compute_compact_history does.
    """

    __slots__ = ("ats", "ends", "max_points")

    def __init__(self, points: Sequence[tuple[int, int]] = (), max_points: int = 120):
        self.ends: list[int] = []
        self.ats: list[int] = []
        self.max_points = max_points
        for end, at in points:
            self.add(end, at)

    def add(self, log_end: int, at: int) -> bool:
        """Append a sample; True when the newest log end changed (answers for lagging consumers may too)."""
        ends, ats = self.ends, self.ats
        if ends and log_end <= ends[-1]:
            if len(ends) >= 2 and ends[-2] == ends[-1]:
                ats[-1] = at  # inside a plateau: move its end
            else:
                ends.append(ends[-1])
                ats.append(at)
            return False
        ends.append(log_end)
        ats.append(at)
        if len(ends) > 2 * self.max_points:
            kept = compute_compact_history(list(zip(ends, ats, strict=True)), self.max_points)
            self.ends, self.ats = [e for e, _ in kept], [a for _, a in kept]
        return True

    def clock(self, committed: int | None) -> LagClock | None:
        if committed is None or committed < 0 or not self.ends:
            return None
        return compute_lag_clock(committed, self.ends, self.ats)

    def end_at(self, at: int) -> int | None:
        """The log end as of `at` (the newest point at or before it); None before the history starts."""
        i = bisect_right(self.ats, at)
        return self.ends[i - 1] if i else None

    def low_end(self, recent: int) -> int | None:
        """The lowest log end among the newest `recent` points."""
        return self.ends[-recent] if len(self.ends) >= recent else (self.ends[0] if self.ends else None)

    def points(self) -> list[tuple[int, int]]:
        return list(zip(self.ends, self.ats, strict=True))
