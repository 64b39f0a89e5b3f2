"""monitor.store.retention against real databases: raw samples roll up to 1 and 10 minutes, old history goes,
what is current stays, within a time budget."""

from __future__ import annotations

import pytest
from factories import T0, make_group, make_snapshot
from store_rows import count

from monitor.models import ConfigError, Event, EventKind, GroupState, PartitionOffsets, Rebalance, TopicPartition
from monitor.store import (
    LagPoint,
    RetentionPolicy,
    RetentionResult,
    apply_retention,
    read_events,
    read_group_lag,
    read_groups,
    read_lag_history,
    read_rebalances,
    read_samples,
)

MIN = 60_000
HOUR = 3_600_000
TP = TopicPartition


def write_every_10s(store, start, n, *, skip_tp_at=(), lag_of=lambda i: 10):
    """n samples 10 s apart from `start`; log end = 1000 + i, committed = log end - lag_of(i)."""
    for i in range(n):
        at = start + i * 10_000
        committed = {TP("t", 0): 1000 + i - lag_of(i), TP("t", 1): 2000 + i}
        if at in skip_tp_at:
            del committed[TP("t", 1)]
        parts = {TP("t", 0): PartitionOffsets(0, 1000 + i), TP("t", 1): PartitionOffsets(0, 2000 + i)}
        store.write_snapshot(make_snapshot(at, groups=[make_group(committed=committed)], partitions=parts))


POLICY = RetentionPolicy(raw_ms=HOUR, minute_ms=2 * HOUR, ten_minute_ms=4 * HOUR, history_ms=4 * HOUR, pause_ms=0)


def test_raw_samples_roll_into_the_last_value_per_minute(db_store, db_engine):
    # 3 minutes of 10 s samples; t:1 is missing from the last sample of the 2nd minute.
    write_every_10s(db_store, T0, 18, skip_tp_at={T0 + MIN + 50_000})
    now = T0 + 3 * MIN + HOUR  # all three minutes are older than raw_ms

    result = apply_retention(db_engine, "c1", now, POLICY)

    assert (result.rolled_to_minute, result.rolled_to_ten_minutes, result.deleted_samples, result.done) == (
        15,
        0,
        0,
        True,
    )
    assert [(s.taken_at, s.resolution_ms) for s in read_samples(db_engine, "c1")] == [
        (T0 + 50_000, MIN),
        (T0 + MIN + 50_000, MIN),
        (T0 + 2 * MIN + 50_000, MIN),
    ]
    assert read_lag_history(db_engine, "c1", "g1", since=T0) == [
        LagPoint(T0 + 50_000, "t", 0, 995, 1005, 10, MIN),
        LagPoint(T0 + 50_000, "t", 1, 2005, 2005, 0, MIN),
        LagPoint(T0 + MIN + 50_000, "t", 0, 1001, 1011, 10, MIN),
        LagPoint(T0 + MIN + 50_000, "t", 1, 2010, 2011, 1, MIN),  # kept from 10 s earlier
        LagPoint(T0 + 2 * MIN + 50_000, "t", 0, 1007, 1017, 10, MIN),
        LagPoint(T0 + 2 * MIN + 50_000, "t", 1, 2017, 2017, 0, MIN),
    ]
    assert (count(db_engine, "offset_samples"), count(db_engine, "partition_samples")) == (6, 6)
    assert apply_retention(db_engine, "c1", now, POLICY).rolled_to_minute == 0  # idempotent


def test_rollup_moves_a_groups_newest_offsets_into_the_kept_sample(db_store, db_engine):
    for i in range(5):
        db_store.write_snapshot(make_snapshot(T0 + i * 10_000, groups=[make_group("g1"), make_group("g2")]))
    # a sharded collector's cycle that did not include g2 (so g2 stays open)
    db_store.write_snapshot(make_snapshot(T0 + 50_000, groups=[make_group("g1")]), close_missing=False)

    apply_retention(db_engine, "c1", T0 + MIN + HOUR, POLICY)

    assert [(g.group_id, g.total_lag, g.last_sample_at) for g in read_groups(db_engine)] == [
        ("g1", 70, T0 + 50_000),
        ("g2", 70, T0 + 50_000),
    ]
    assert [r.committed for r in read_group_lag(db_engine, "c1", "g2")] == [90, 40]


def test_rollup_keeps_the_last_ok_sample_of_a_minute(db_store, db_engine):
    write_every_10s(db_store, T0, 3)
    db_store.write_sample_error("c1", T0 + 30_000, 1_000, ["timeout"])
    apply_retention(db_engine, "c1", T0 + MIN + HOUR, POLICY)
    assert [(s.taken_at, s.ok, s.resolution_ms) for s in read_samples(db_engine, "c1")] == [(T0 + 20_000, True, MIN)]


def test_history_stays_queryable_across_resolutions(db_store, db_engine):
    # 80 minutes every 10 s; keep raw 10 min, per-minute 30 min, per-10-minutes 60 min.
    policy = RetentionPolicy(raw_ms=10 * MIN, minute_ms=30 * MIN, ten_minute_ms=60 * MIN, pause_ms=0)
    write_every_10s(db_store, T0, 80 * 6, lag_of=lambda i: i % 7)
    now = T0 + 80 * MIN

    result = apply_retention(db_engine, "c1", now, policy)

    samples = read_samples(db_engine, "c1")
    by_res = {res: [s.taken_at for s in samples if s.resolution_ms == res] for res in (0, MIN, 10 * MIN)}
    assert (len(by_res[10 * MIN]), len(by_res[MIN]), len(by_res[0])) == (3, 20, 60)
    assert by_res[10 * MIN] == [T0 + 30 * MIN - 10_000, T0 + 40 * MIN - 10_000, T0 + 50 * MIN - 10_000]
    assert (by_res[MIN][0], by_res[MIN][-1]) == (T0 + 51 * MIN - 10_000, T0 + 70 * MIN - 10_000)
    assert (by_res[0][0], by_res[0][-1]) == (T0 + 70 * MIN, T0 + 80 * MIN - 10_000)
    assert (result.rolled_to_minute, result.rolled_to_ten_minutes, result.deleted_samples) == (420 - 70, 50 - 5, 2)
    history = read_lag_history(db_engine, "c1", "g1", since=0)
    assert len(history) == 2 * len(samples) == count(db_engine, "offset_samples")
    for point in history:  # every surviving point is the exact raw value of its instant
        i = (point.at - T0) // 10_000
        log_end = (1000 if point.partition == 0 else 2000) + i
        committed = log_end - i % 7 if point.partition == 0 else log_end
        assert (point.committed, point.log_end, point.lag) == (committed, log_end, log_end - committed)
    window = read_lag_history(db_engine, "c1", "g1", since=T0 + 45 * MIN, until=T0 + 70 * MIN + 30_000)
    assert [(p.at, p.resolution_ms) for p in window[:2] + window[-2:]] == [
        (T0 + 50 * MIN - 10_000, 10 * MIN),
        (T0 + 50 * MIN - 10_000, 10 * MIN),
        (T0 + 70 * MIN + 20_000, 0),
        (T0 + 70 * MIN + 20_000, 0),
    ]
    assert apply_retention(db_engine, "c1", now, policy) == RetentionResult()  # nothing left to do


def test_retention_deletes_old_history_but_keeps_what_is_current(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0))
    db_store.write_snapshot(make_snapshot(T0 + 1, groups=[make_group(state=GroupState.EMPTY, members=[])]))
    db_store.write_events(
        "c1", [Event(T0, "g1", EventKind.STATE_CHANGED), Event(T0 + 5 * HOUR, "g1", EventKind.MEMBER_LEFT)]
    )
    db_store.write_rebalances("c1", [Rebalance("g1", T0, T0 + 1, "eager"), Rebalance("g1", T0 + 2, None, "eager")])

    result = apply_retention(db_engine, "c1", T0 + 5 * HOUR, POLICY)

    assert result.deleted_history == 1 + 1 + 1 + 1 + 2  # event, rebalance, state, member, 2 assignments
    assert [e.at for e in read_events(db_engine)] == [T0 + 5 * HOUR]
    assert [r.rebalance.started_at for r in read_rebalances(db_engine)] == [T0 + 2]  # still in progress
    assert [g.state for g in read_groups(db_engine)] == [GroupState.EMPTY]
    assert count(db_engine, "samples") == 0  # older than ten_minute_ms


def test_retention_with_a_time_budget_stops_and_resumes(db_store, db_engine):
    write_every_10s(db_store, T0, 30)
    partial = apply_retention(db_engine, "c1", T0 + 5 * MIN + HOUR, POLICY, max_seconds=0)
    assert partial.done is False
    final = apply_retention(db_engine, "c1", T0 + 5 * MIN + HOUR, POLICY)
    assert final.done is True
    assert [s.resolution_ms for s in read_samples(db_engine, "c1")] == [MIN] * 5


def test_retention_policy_is_validated():
    with pytest.raises(ConfigError):
        RetentionPolicy(raw_ms=2 * HOUR, minute_ms=HOUR)
    with pytest.raises(ConfigError):
        RetentionPolicy(batch_rows=0)
