"""Partition and group status (pure): Burrow's window rules plus a stuck-consumer rule.

A partition is judged on a window of its last N commits (docs/health.md): how
the committed offset and the lag at each commit moved, not how big the lag is.
The window comes from either source, so the rules do not care which:

- the offsets-topic tail: every commit with its exact commit timestamp;
- the sampled committed offsets: `compute_sampled_commits` turns the per-cycle
  samples into one point per *change* of the committed offset (a commit that
  repeats the offset is invisible to polling).

The rules, in order (each numbered where it is applied):
 1. lag unknown, or within the allowed lag -> OK
 2. STOP (stuck): the offset has not moved while newer records waited for longer
    than a bound that follows the partition's own commit cadence, however few
    commits the window holds (a consumer stuck right after it started)
 3. too few commits or an incomplete window -> OK (Burrow #123: no trend yet)
 4. STOP: no commit for longer than the window spans, unless the log end was
    recently at the last commit (an idle, caught-up consumer: #145, #223, #338)
 5. REWIND: the offset went backwards and the consumer has not moved on since (#714)
 6. only when every lag in the window is above the allowed lag (#145):
    STALL if all offsets are equal, WARN if lag never decreased and grew overall
    (a steady lag at every commit is a batching consumer keeping pace, not one falling behind)
 7. else OK
"""

from __future__ import annotations

import functools
import time
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from monitor.health.report import ShareHealth
from monitor.lag import compute_lag
from monitor.models import SharePartition, Status, TopicPartition

DEFAULT_WINDOW = 10
_new_tuple = tuple.__new__


# One commit: (offset, when it was committed or first observed, the lag then; None: the log end was
# unknown, as after a broker restart).
CommitPoint = tuple[int, int, "int | None"]
OFFSET, AT, LAG = 0, 1, 2

# A window holds its commits flat in one array of 64-bit integers, oldest first: offset, at, lag per
# commit, an unknown lag as NO_LAG: a busy collector's 200,000 commits took about 25 MB as tuples of
# int objects, about 6 MB as arrays (which the garbage collector never scans either).
Window = array
NO_LAG = -1


def make_window(points: Iterable[CommitPoint]) -> Window:
    return array("q", [x for offset, at, lag in points for x in (offset, at, NO_LAG if lag is None else lag)])


def window_points(w: Window) -> list[CommitPoint]:
    return [(w[i], w[i + 1], None if w[i + 2] == NO_LAG else w[i + 2]) for i in range(0, len(w), 3)]


class PartitionWindow(NamedTuple):
    """What the rules need about one partition now."""

    tp: TopicPartition
    commits: Window  # oldest first (make_window)
    lag: int | None = None  # log end now - committed now
    lag_since: float | None = None  # when the oldest record not yet consumed was appended (ms); None: none waits
    low_end: int | None = None  # the lowest log end of the recent samples (was the consumer recently caught up?)
    runs: Runs | None = None  # the commits' trailing runs, kept by the engine (None: computed here)


class Runs(NamedTuple):
    """How the newest commits ran, counted back from the newest (what rules 5 and 6 read).

    The engine extends them point by point (extend_runs), so judging a window of N
    commits costs the same as judging one; compute_runs counts them afresh.
    """

    since_drop: int  # commits since the last backwards step (the one after it included), all if none
    same: int  # trailing commits of the newest offset
    rising: int  # trailing commits whose lag never decreased
    behind: int  # trailing commits with a lag above the allowed lag


def extend_runs(runs: Runs | None, before: CommitPoint | None, point: CommitPoint, allowed_lag: int) -> Runs:
    """The runs once `point` follows `before` (None: the first commit); lags must be known."""
    behind = point[LAG] > allowed_lag
    if runs is None or before is None:
        return Runs(1, 1, 1, int(behind))
    return _new_tuple(  # Runs(...) without namedtuple's Python-level __new__: once per commit
        Runs,
        (
            1 if point[OFFSET] < before[OFFSET] else runs.since_drop + 1,
            runs.same + 1 if point[OFFSET] == before[OFFSET] else 1,
            runs.rising + 1 if point[LAG] >= before[LAG] else 1,
            runs.behind + 1 if behind else 0,
        ),
    )


def compute_runs(commits: Window, allowed_lag: int) -> Runs | None:
    runs, before = None, None
    for point in window_points(commits):
        runs, before = extend_runs(runs, before, point, allowed_lag), point
    return runs


class Verdict(NamedTuple):
    status: Status
    reason: str
    known: int = 0  # commits in the window with a known lag (how complete the window is)
    clocked: bool = False  # the verdict may change with time alone (rules 2 and 4 run on the clock)


@dataclass(frozen=True)
class HealthSettings:
    """The `evaluation` block of the rules file."""

    window: int = DEFAULT_WINDOW  # N: commits per window
    allowed_lag: int = 0  # lag at or below this never counts as "behind"
    min_complete: float = 0.5  # fraction of N that must be present to judge trends at all
    stuck_after_s: float = 120.0  # rule 2's bound with no commit cadence yet, and its floor
    stuck_factor: float = 3.0  # rule 2's bound = this many times the partition's usual gap between commits


def judge_partition(w: PartitionWindow, now: int, s: HealthSettings = HealthSettings()) -> Verdict:
    """The status of one partition at `now` (epoch ms), with the reason in words that stay true later."""
    # 1.
    if w.lag is None:
        return Verdict(Status.OK, "log end or commit unknown")
    # every lag in the window is known (the engine keeps runs only then), else only the known ones count
    c = (
        w.commits
        if w.runs is not None
        else make_window([p for p in window_points(w.commits) if p[LAG] is not None][-s.window :])
    )
    n = len(c) // 3
    if w.lag <= s.allowed_lag:
        return Verdict(Status.OK, "caught up", n)
    if not n:
        return Verdict(Status.OK, _too_few(0, s.window))
    last_offset, last_at, last_lag = c[-3], c[-2], c[-1]
    clocked = n >= 2 or w.lag > last_lag
    # 2. Records arrived after the last commit (lag grew since) and the oldest of them waits longer than the bound.
    if w.lag > last_lag and w.lag_since is not None:
        waited = now - max(last_at, w.lag_since)
        # the bound is never below stuck_after: a shorter wait needs no median (most partitions, most cycles)
        if waited > s.stuck_after_s * 1000 and waited > (bound := compute_stuck_bound(c, s)):
            return Verdict(
                Status.STOP,
                f"offset {last_offset} unchanged since {_utc(last_at)} while newer records "
                f"waited longer than {bound / 1000:g}s",
                n,
                clocked,
            )
    # 3. Burrow #123: one commit cannot show a trend, and now - last > last - first is always true for it.
    if n < 2 or n < s.min_complete * s.window:
        return Verdict(Status.OK, _too_few(n, s.window), n, clocked)
    first_at = c[AT]
    # 4. Not committing for longer than the window spans; but an idle consumer whose last commit
    #    reached a recent log end only lacks traffic (Burrow #145/#223/#338).
    if now - last_at > last_at - first_at and not (w.low_end is not None and w.low_end <= last_offset):
        return Verdict(
            Status.STOP,
            f"no commit since {_utc(last_at)}, longer than the window's {(last_at - first_at) / 1000:.0f}s",
            n,
            clocked,
        )
    # 5. and 6. on the commits since the last backwards step in the window (all of them if none):
    #    REWIND when the offset went back and has not moved on since (a consumer that moves forward
    #    again after a reset is judged on its progress since: #714); then, only when every commit
    #    since was behind (#145), STALL if all offsets are equal, WARN if the lag never decreased
    #    and grew overall.
    runs = w.runs or compute_runs(c, s.allowed_lag)
    start = n - runs.since_drop if runs.since_drop < n else 0
    since = n - start
    same, rising, behind = runs.same >= since, runs.rising >= since, runs.behind >= since
    start_offset, start_lag = c[3 * start + OFFSET], c[3 * start + LAG]
    # 5.
    if start and same:
        return Verdict(
            Status.REWIND, f"offset went back from {c[3 * start - 3 + OFFSET]} to {start_offset}", n, clocked
        )
    # 6.
    if since >= 2 and behind:
        if same:
            return Verdict(Status.STALL, f"committing offset {start_offset} again and again with lag", n, clocked)
        if rising and last_lag > start_lag:
            return Verdict(Status.WARN, f"lag grew from {start_lag} to {last_lag} over the window", n, clocked)
    # 7.
    return Verdict(Status.OK, "making progress", n, clocked)


@functools.lru_cache(maxsize=256)
def _too_few(n: int, window: int) -> str:
    """One string per (n, window), not one per partition: 20,000 partitions starting up all say it."""
    return f"only {n} of {window} commits in the window"


def compute_stuck_bound(commits: Window, s: HealthSettings) -> float:
    """Rule 2's bound (ms): `stuck_factor` x the median gap between offset changes, never below `stuck_after`.

    The median, not the longest gap: an idle hour between two commits says nothing
    about how often the consumer commits while records arrive.
    """
    c = commits
    gaps = sorted(c[i + 3 + AT] - c[i + AT] for i in range(0, len(c) - 3, 3) if c[i + 3 + OFFSET] != c[i + OFFSET])
    floor = s.stuck_after_s * 1000
    return max(floor, s.stuck_factor * gaps[len(gaps) // 2]) if gaps else floor


def _utc(ms: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


# -- the group ------------------------------------------------------------------------------

_GROUP_LEVEL = {Status.OK: Status.OK, Status.WARN: Status.WARN}


def compute_group_status(statuses: Iterable[Status]) -> tuple[Status, Status]:
    """(group status, worst partition status): STOP/STALL/REWIND partitions make the group ERR."""
    worst = max(statuses, default=Status.OK)
    return _GROUP_LEVEL.get(worst, Status.ERR), worst


def compute_sampled_step(
    last: CommitPoint | None, committed: int, at: int, lag: int | None
) -> tuple[CommitPoint, bool] | None:
    """What one sample adds to a sampled window: (a new point, False), (the last point with its
    lag filled in, True) or None. One point per change of the committed offset, timed when the
    new offset was first seen, with the lag then; a lag learnt later fills in an unknown one."""
    if last is None or last[OFFSET] != committed:
        return (committed, at, lag), False
    if last[LAG] is None and lag is not None:
        return (committed, last[AT], lag), True
    return None


def compute_sampled_commits(samples: Iterable[tuple[int, int | None, int | None]]) -> tuple[CommitPoint, ...]:
    """(taken_at, committed, log_end) samples, oldest first -> the sampled window (compute_sampled_step)."""
    points: list[CommitPoint] = []
    for at, committed, log_end in samples:
        if committed is None or committed < 0:
            continue
        step = compute_sampled_step(points[-1] if points else None, committed, at, compute_lag(committed, log_end))
        if step is not None:
            point, replaces = step
            if replaces:
                points[-1] = point
            else:
                points.append(point)
    return tuple(points)


# -- share-partitions -----------------------------------------------------------------------


def compute_share_health(tp: TopicPartition, sp: SharePartition, before: ShareHealth | None, at: int) -> ShareHealth:
    """A share-partition's entry at `at`, carrying forward when its archived count last rose.

    The count only covers records after the start offset, so a fall means the start offset
    passed archived records, and only a rise says records were newly given up on (a lower
    bound: a fall and a rise between two samples hide each other). A first sample is the
    baseline: records archived before lagmon looked are no news.
    """
    if before is None:
        rose_at, rise, total = None, 0, 0
    else:
        rose_at, rise, total = before.archived_rose_at, before.archived_rise, before.archived_total
    if before is not None and sp.archived > before.archived:
        rise = sp.archived - before.archived
        rose_at, total = at, total + rise
    return ShareHealth(
        tp, sp.start_offset, sp.acknowledged, sp.archived, sp.redelivering, sp.max_delivery_count, rose_at, rise, total
    )
