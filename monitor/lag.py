"""Lag in offsets and in seconds (pure): the one definition every part of lagmon computes.

Lag is log_end - committed, never negative, unknown without either (compute_lag).
Lag in seconds is kafka-lag-exporter's method over the log-end history, with its
artefacts fixed (compute_time_lag); spark.transforms computes the same in columns.

Per partition the history is a table of (log_end, observed_at) points, read as
their running maximum (a log end only grows; a restarted broker may briefly
report a lower one). The record at offset C was appended when the log end went
from C to C + 1, so its time is interpolated at C + 1 between the last point
whose log end was <= C and the next one (DESIGN.md section 5); lag seconds =
now - that time. The guards:

- never negative (#138): clamped at 0, and C at or past the newest log end is 0;
- never infinite on a flat table (#121): a flat segment is a plateau, not a slope
  to divide by; with no point at or below C the answer is a bound, not a ratio;
- no absurd extrapolation for a consumer replaying far behind the table (#496):
  the answer is "at least now - oldest point" (`at_least=True`);
- no quantisation to the poll interval (#353): the interpolation uses the
  bracketing pair around C + 1, not the nearest point, so a steady log end gives
  a smooth answer between polls.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TimeLag:
    seconds: float
    at_least: bool = False  # True: the record is older than the history; `seconds` is a lower bound
    exact: bool = False  # True: from the record's own timestamp, not interpolated

    def __str__(self) -> str:
        return f"{'≥ ' if self.at_least else ''}{self.seconds:.1f}s"


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
    if committed >= running[-1]:
        return TimeLag(0.0)
    target = committed + 1  # the log end right after the record at `committed` was appended
    i = bisect_right(running, committed)  # first point whose log end passed `committed`
    if i == 0:  # older than the whole history: only a lower bound is known (none yet on the first point)
        bound = (now - history[0][1]) / 1000
        return TimeLag(bound, at_least=True) if bound > 0 else None
    (end_a, at_a), (end_b, at_b) = (running[i - 1], history[i - 1][1]), (running[i], history[i][1])
    appended_at = at_a + (target - end_a) / (end_b - end_a) * (at_b - at_a)
    return TimeLag(max(0.0, (now - appended_at) / 1000))


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
