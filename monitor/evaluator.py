"""Burrow-style partition and group status without per-group thresholds (pure).

A partition is judged on a window of its last N commits (DESIGN.md section 5):
how the committed offset and the lag at each commit moved, not how big the lag
is. The window can come from either source, so the rules do not care which:

- the offsets-topic tail: every commit with its exact commit timestamp;
- the sampled committed offsets: `compute_sampled_commits` turns the per-cycle
  samples into one point per *change* of the committed offset (a commit that
  repeats the offset is invisible to polling). A consumer that stops making
  progress then shows up as STOP rather than STALL.

The rules, in order (each numbered where it is applied):
 1. nothing usable, too few commits or an incomplete window -> OK (Burrow #123)
 2. lag now 0 (or within the allowed lag) -> OK
 3. STOP: no commit for longer than the window spans, unless the log end was
    recently at the last commit (an idle, caught-up consumer: #145, #223, #338)
 4. REWIND: the offset went backwards and the consumer has not moved on since (#714)
 5. only when every lag in the window is above the allowed lag (#145):
    STALL if all offsets are equal, WARN if lag never decreased and grew overall
    (a steady lag at every commit is a batching consumer keeping pace, not one falling behind)
 6. else OK
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from monitor.models import Status, TopicPartition

DEFAULT_WINDOW = 10


@dataclass(frozen=True)
class CommitPoint:
    """One commit: the offset, when it was committed (or first observed), the lag at that moment."""

    offset: int
    at: int
    lag: int | None  # None: the log end was unknown then (broker restart, failed fetch)


@dataclass(frozen=True)
class PartitionWindow:
    """What the rules need about one partition: its recent commits (oldest first) and log ends."""

    tp: TopicPartition
    commits: tuple[CommitPoint, ...]
    log_ends: tuple[int, ...] = ()  # recent log-end samples, any order
    lag: int | None = None  # lag now (log end now - committed now)


@dataclass(frozen=True)
class EvaluatorConfig:
    window: int = DEFAULT_WINDOW  # N: commits per window
    allowed_lag: int = 0  # lag at or below this never counts as "behind"
    min_complete: float = 0.5  # fraction of N that must be present to judge at all


@dataclass(frozen=True)
class PartitionStatus:
    tp: TopicPartition
    status: Status
    lag: int | None
    complete: float
    reason: str


@dataclass(frozen=True)
class GroupStatus:
    group_id: str
    status: Status  # OK, WARN or ERR: STOP/STALL/REWIND partitions count as ERR
    total_lag: int
    max_lag_tp: TopicPartition | None
    max_lag: int
    complete: float  # fraction of partitions with a full window
    partitions: tuple[PartitionStatus, ...] = field(default=())

    @property
    def worst(self) -> Status:
        """The worst partition status (STOP/STALL/REWIND kept apart)."""
        return max((p.status for p in self.partitions), default=Status.OK)


def evaluate_partition(window: PartitionWindow, now: int, config: EvaluatorConfig = EvaluatorConfig()) -> PartitionStatus:
    """The status of one partition at `now` (epoch ms)."""
    commits = [c for c in window.commits if c.lag is not None][-config.window:]
    complete = min(1.0, len(commits) / config.window)

    def result(status: Status, reason: str) -> PartitionStatus:
        return PartitionStatus(window.tp, status, window.lag, complete, reason)

    # 1. Burrow #123: one commit cannot show a trend, and now - last > last - first is always true for it.
    if len(commits) < 2 or complete < config.min_complete:
        return result(Status.OK, f"only {len(commits)} of {config.window} commits in the window")
    # 2. A consumer at (or within the allowed lag of) the log end is healthy, whatever it did before.
    if window.lag is None or window.lag <= config.allowed_lag:
        return result(Status.OK, "caught up" if window.lag is not None else "log end unknown")
    first, last = commits[0], commits[-1]
    # 3. Not committing for longer than the window spans; but an idle consumer whose last commit
    #    reached a recent log end only lacks traffic (Burrow #145/#223/#338).
    if now - last.at > last.at - first.at and not any(end <= last.offset for end in window.log_ends):
        return result(Status.STOP, f"no commit for {(now - last.at) / 1000:.0f}s, "
                                   f"longer than the window's {(last.at - first.at) / 1000:.0f}s")
    # 4. Offsets went backwards; a consumer that moves forward again after a reset is healthy (#714).
    drop = _last_drop(commits)
    if drop is not None:
        after = commits[drop:]
        if all(c.offset <= after[0].offset for c in after):
            return result(Status.REWIND, f"offset went back from {commits[drop - 1].offset} to {after[0].offset}")
        commits = after  # judge only the progress since the reset
    # 5. Only a window that is behind at every commit can be stalled or falling behind.
    if len(commits) >= 2 and all(c.lag > config.allowed_lag for c in commits):
        if all(c.offset == commits[0].offset for c in commits):
            return result(Status.STALL, f"committing offset {commits[0].offset} again and again with lag")
        if commits[-1].lag > commits[0].lag and all(b.lag >= a.lag for a, b in zip(commits, commits[1:])):
            return result(Status.WARN, f"lag grew from {commits[0].lag} to {commits[-1].lag} over the window")
    # 6.
    return result(Status.OK, "making progress")


def _last_drop(commits: Sequence[CommitPoint]) -> int | None:
    """Index of the commit right after the last backwards step, or None."""
    for i in range(len(commits) - 1, 0, -1):
        if commits[i].offset < commits[i - 1].offset:
            return i
    return None


_GROUP_LEVEL = {Status.OK: Status.OK, Status.WARN: Status.WARN}


def evaluate_group(group_id: str, windows: Iterable[PartitionWindow], now: int,
                   config: EvaluatorConfig = EvaluatorConfig()) -> GroupStatus:
    """Every partition's status plus the roll-up: worst partition (STOP/STALL/REWIND -> ERR), lag totals."""
    return compute_group_rollup(group_id, [evaluate_partition(w, now, config) for w in windows])


def compute_group_rollup(group_id: str, parts: Iterable[PartitionStatus]) -> GroupStatus:
    """The group's view of its partitions' statuses."""
    parts = tuple(parts)
    worst = max((p.status for p in parts), default=Status.OK)
    lags = sorted(((p.lag, p.tp) for p in parts if p.lag is not None), key=lambda x: (-x[0], x[1]))
    max_lag, max_tp = lags[0] if lags else (0, None)
    complete = sum(1 for p in parts if p.complete >= 1.0) / len(parts) if parts else 0.0
    return GroupStatus(group_id, _GROUP_LEVEL.get(worst, Status.ERR), sum(lag for lag, _ in lags), max_tp,
                       max_lag, complete, parts)


def compute_sampled_commits(samples: Iterable[tuple[int, int | None, int | None]]) -> tuple[CommitPoint, ...]:
    """(taken_at, committed, log_end) samples, oldest first -> one point per change of the committed offset.

    The point's time is when the new offset was first seen and its lag is the lag then.
    """
    points: list[CommitPoint] = []
    for at, committed, log_end in samples:
        if committed is None or committed < 0:
            continue
        if points and points[-1].offset == committed:
            if points[-1].lag is None and log_end is not None:  # log end known again: fill the lag in
                points[-1] = CommitPoint(committed, points[-1].at, max(0, log_end - committed))
            continue
        points.append(CommitPoint(committed, at, None if log_end is None else max(0, log_end - committed)))
    return tuple(points)
