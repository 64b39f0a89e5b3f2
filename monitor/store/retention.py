"""Retention with rollups: raw -> 1 minute -> 10 minutes -> gone.

How rolled rows are stored: in the same tables. Offsets and log ends are
positions, so the right rollup is the last value in each bucket ("where was
the group at the end of that minute"). Rolling a bucket therefore keeps one
sample of it (the last ok sample, else the last), copies into it each
group-partition / topic-partition row that only an earlier sample of the bucket
has (the last such value wins, so a partition missing from the kept cycle is
not lost), deletes the other samples with their rows, and finally marks the
kept sample with `samples.resolution_ms` = the bucket width. Buckets are per
collector shard (`samples.shard`): a shard's samples hold only its groups, and
readers find a group's history among its shard's samples (coordinated collectors
share the shard "kafka": a bucket folds all of theirs into one sample, which
then holds every group's rows). Every reader
(read_lag_history, read_groups, Spark) keeps working unchanged at any age;
the resolution column tells charts what a point stands for.

Every step is its own short transaction (copy one sample's missing rows, or
delete `batch_rows` rows: tens of milliseconds) followed by a short pause, so
the collector's write waits at most one step for the lock, and a crash
between steps leaves a valid state that the next run continues from. Events,
finished rebalances and closed SCD intervals older than `history_ms` are
deleted in batches too. Run it from the collector's loop every minute or so
(a 20,000 group-partition cluster folds ~5 samples a minute); with shards,
only shard 1 runs it, for all of the cluster's samples.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.models import ConfigError
from monitor.store.engine import write_engine
from monitor.store.offsets_tail import apply_tail_retention
from monitor.store.schema import (
    assignments,
    consumer_groups,
    events,
    group_generations,
    group_members,
    group_states,
    offset_samples,
    partition_samples,
    rebalances,
    samples,
    share_partition_samples,
)

MINUTE = 60_000
TEN_MINUTES = 600_000
HOUR = 3_600_000
DAY = 24 * HOUR


@dataclass(frozen=True)
class RetentionPolicy:
    """How long each resolution is kept (milliseconds of age)."""

    raw_ms: int = 6 * HOUR
    minute_ms: int = 7 * DAY
    ten_minute_ms: int = 35 * DAY
    history_ms: int = 35 * DAY  # events, rebalances, closed group/member/assignment intervals
    pause_ms: int = 5  # between steps, so a waiting writer gets the lock
    batch_rows: int = 5_000  # rows deleted per step (sample facts and history)

    def __post_init__(self):
        if not 0 < self.raw_ms <= self.minute_ms <= self.ten_minute_ms:
            raise ConfigError("retention must satisfy 0 < raw_ms <= minute_ms <= ten_minute_ms")
        if self.history_ms <= 0 or self.pause_ms < 0 or self.batch_rows <= 0:
            raise ConfigError("retention history_ms and batch_rows must be > 0, pause_ms >= 0")


@dataclass
class RetentionResult:
    """What one apply_retention call did; `done` is False when it ran out of time."""

    rolled_to_minute: int = 0  # samples folded into a kept per-minute sample
    rolled_to_ten_minutes: int = 0  # per-minute samples folded into a kept 10-minute sample
    deleted_samples: int = 0  # samples that aged out entirely
    deleted_history: int = 0  # events, rebalances and closed intervals
    deleted_commits: int = 0  # offsets-topic commits rolled up (last per bucket kept) or aged out
    done: bool = True


class _OutOfTime(Exception):
    pass


def apply_retention(
    engine: Engine,
    cluster: str,
    now: int,
    policy: RetentionPolicy = RetentionPolicy(),
    *,
    max_seconds: float | None = None,
) -> RetentionResult:
    """Roll up and delete `cluster`'s aged data; call it every few minutes from the collector.

    With `max_seconds` it stops after the step that crosses the budget and
    reports done=False; the next call continues (useful after long downtime).
    """
    writer = write_engine(engine)
    result = RetentionResult()
    deadline = None if max_seconds is None else time.monotonic() + max_seconds

    def step(work, *, write: bool = True):
        if deadline is not None and time.monotonic() > deadline:
            raise _OutOfTime
        if not write:  # a plain read transaction: never holds up the collector
            with engine.connect() as conn:
                return work(conn)
        with writer.begin() as conn:
            n = work(conn)
        if policy.pause_ms:
            time.sleep(policy.pause_ms / 1000)
        return n

    try:
        result.rolled_to_minute = _roll(step, cluster, MINUTE, _floor(now - policy.raw_ms, MINUTE), policy.batch_rows)
        result.rolled_to_ten_minutes = _roll(
            step, cluster, TEN_MINUTES, _floor(now - policy.minute_ms, TEN_MINUTES), policy.batch_rows
        )
        result.deleted_samples = _expire(step, cluster, now - policy.ten_minute_ms, policy.batch_rows)
        result.deleted_history = _expire_history(step, cluster, now - policy.history_ms, policy.batch_rows)
        result.deleted_commits = apply_tail_retention(  # the tail's commits age like the samples
            step,
            engine,
            cluster,
            [(MINUTE, _floor(now - policy.raw_ms, MINUTE)), (TEN_MINUTES, _floor(now - policy.minute_ms, TEN_MINUTES))],
            now - policy.ten_minute_ms,
        )
    except _OutOfTime:
        result.done = False
    return result


def _floor(t: int, width: int) -> int:
    return t // width * width


def _roll(step, cluster: str, width: int, cutoff: int, batch: int) -> int:
    """Fold every finer sample taken before `cutoff` into one kept sample per `width` bucket."""
    s = samples
    with_finer = (
        sa.select(s.c.id, s.c.taken_at, s.c.ok, s.c.shard)
        .where(s.c.cluster == cluster, s.c.resolution_ms < width, s.c.taken_at < cutoff)
        .order_by(s.c.taken_at, s.c.id)
    )
    buckets: dict[tuple[int, str], list[tuple[int, int, bool]]] = {}
    for sample_id, taken_at, ok, shard in step(lambda conn: conn.execute(with_finer).all(), write=False):
        buckets.setdefault((taken_at // width, shard), []).append((sample_id, taken_at, bool(ok)))

    folded = 0
    for members in buckets.values():
        keep = max(members, key=lambda m: (m[2], m[1], m[0]))[0]
        others = sorted((m for m in members if m[0] != keep), key=lambda m: (m[1], m[0]), reverse=True)
        for sample_id, _, _ in others:  # newest first, so the last value per row wins
            _fold(step, sample_id, keep, batch)
            folded += 1
        step(lambda conn, k=keep: conn.execute(s.update().where(s.c.id == k).values(resolution_ms=width)).rowcount)
    return folded


_SAMPLE_FACTS = ((offset_samples, "gp_id"), (partition_samples, "tp_id"), (share_partition_samples, "gp_id"))


def _fold(step, drop: int, keep: int, batch: int) -> None:
    """Copy rows only `drop` has into `keep`, then delete `drop` and its rows, in short steps.

    Every intermediate state is a valid database: `drop` merely loses rows that
    `keep` already has, and a rerun after a crash repeats nothing harmful.
    """
    for table, key in _SAMPLE_FACTS:
        step(lambda conn, t=table, k=key: _copy_missing(conn, t, k, drop, keep))
    _delete_sample(step, drop, batch)


def _copy_missing(conn: Connection, table: sa.Table, key: str, drop: int, keep: int) -> int:
    src, kept = table.alias("src"), table.alias("kept")
    columns = [c.name for c in table.columns]
    absent = ~sa.exists().where(kept.c.sample_id == keep, kept.c[key] == src.c[key])
    select = sa.select(
        *[sa.literal(keep, sa.Integer).label("sample_id") if name == "sample_id" else src.c[name] for name in columns]
    ).where(src.c.sample_id == drop, absent)
    conn.execute(table.insert().from_select(columns, select))
    if table is offset_samples:  # groups whose newest offsets were in `drop` now find them in `keep`
        g = consumer_groups
        conn.execute(g.update().where(g.c.last_sample_id == drop).values(last_sample_id=keep))
    return 0


def _delete_sample(step, sample_id: int, batch: int) -> int:
    """Delete one sample's fact rows `batch` at a time, then the sample itself."""
    for table, key in _SAMPLE_FACTS:
        first = sa.select(table.c[key]).where(table.c.sample_id == sample_id).limit(batch)
        delete = table.delete().where(table.c.sample_id == sample_id, table.c[key].in_(first))
        while step(lambda conn, d=delete: conn.execute(d).rowcount) >= batch:
            pass
    return step(lambda conn: conn.execute(samples.delete().where(samples.c.id == sample_id)).rowcount)


def _expire(step, cluster: str, cutoff: int, batch: int) -> int:
    """Delete samples (any resolution) taken before `cutoff`, one per step."""
    s = samples
    ids = step(
        lambda conn: (
            conn.execute(sa.select(s.c.id).where(s.c.cluster == cluster, s.c.taken_at < cutoff).order_by(s.c.id))
            .scalars()
            .all()
        ),
        write=False,
    )
    return sum(_delete_sample(step, sid, batch) for sid in ids)


def _expire_history(step, cluster: str, cutoff: int, batch: int) -> int:
    """Delete old events, finished rebalances and closed intervals, `batch` rows per step."""
    targets = (
        [
            (events, sa.and_(events.c.cluster == cluster, events.c.at < cutoff)),
            (
                rebalances,
                sa.and_(
                    rebalances.c.cluster == cluster,
                    rebalances.c.started_at < cutoff,
                    rebalances.c.ended_at.is_not(None),
                ),
            ),
        ]
        + [
            (t, sa.and_(t.c.cluster == cluster, t.c.valid_to.is_not(None), t.c.valid_to < cutoff))
            for t in (group_states, group_members, assignments)
        ]
        + [(group_generations, sa.and_(group_generations.c.cluster == cluster, group_generations.c.at < cutoff))]
    )
    total = 0
    for table, where in targets:
        while True:
            # Look first in a read transaction: most calls find nothing and take no lock.
            query = sa.select(table.c.id).where(where).order_by(table.c.id).limit(batch)
            ids = step(lambda conn, q=query: conn.execute(q).scalars().all(), write=False)
            if ids:
                total += step(lambda conn, t=table, ids=ids: conn.execute(t.delete().where(t.c.id.in_(ids))).rowcount)
            if len(ids) < batch:
                break
    return total
