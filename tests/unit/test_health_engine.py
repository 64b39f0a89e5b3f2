"""The health engine over scripted snapshots: what it re-judges, what it keeps, what it forgets."""

from __future__ import annotations

import sys

import pytest
from factories import SHARE_ON_T, make_share_group, make_snapshot

from monitor.health import HealthEngine, HealthSettings
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    PartitionOffsets,
    RecordTime,
    SharePartition,
    Status,
    TopicPartition,
)

TP = TopicPartition("orders", 0)
S = 1000


def snapshot(at_s: int, committed: dict[str, int], log_end: int = 100, errors=()) -> ClusterSnapshot:
    groups = {g: GroupSnapshot(g, GroupState.EMPTY, committed={TP: c}) for g, c in committed.items()}
    return ClusterSnapshot("c", at_s * S, groups, {TP: PartitionOffsets(0, log_end)}, errors=tuple(errors))


def test_an_unchanged_group_keeps_its_entry_and_is_not_reported_as_changed():
    engine = HealthEngine("c")
    first = engine.observe(snapshot(0, {"a": 90, "b": 100}))
    assert first.changed == {"a", "b"}
    second = engine.observe(snapshot(1, {"a": 90, "b": 100}))
    assert second.changed == frozenset()
    assert second.groups["a"] is first.groups["a"] and second.groups["b"] is first.groups["b"]
    third = engine.observe(snapshot(2, {"a": 95, "b": 100}))
    assert third.changed == {"a"} and third.groups["b"] is first.groups["b"]
    assert (third.groups["a"].total_lag, third.groups["a"].partitions[0].committed) == (5, 95)


def test_a_moving_log_end_re_judges_the_groups_on_it():
    engine = HealthEngine("c")
    engine.observe(snapshot(0, {"a": 90, "b": 100}))
    report = engine.observe(snapshot(1, {"a": 90, "b": 100}, log_end=110))
    assert report.changed == {"a", "b"}
    assert {g: h.total_lag for g, h in report.groups.items()} == {"a": 20, "b": 10}


def test_a_stuck_group_is_judged_on_the_clock_without_new_input():
    """Rule 2 runs on the clock: the same snapshot, later, turns a stuck consumer to STOP."""
    engine = HealthEngine("c", HealthSettings(stuck_after_s=60))
    engine.observe(snapshot(0, {"a": 10}, log_end=10))  # caught up
    engine.observe(snapshot(1, {"a": 20}, log_end=20))
    engine.observe(snapshot(2, {"a": 20}, log_end=30))  # records after offset 20 arrive; no commit
    assert engine.observe(snapshot(50, {"a": 20}, log_end=30)).groups["a"].status is Status.OK
    late = engine.observe(snapshot(70, {"a": 20}, log_end=30)).groups["a"]
    assert (late.status, late.worst) == (Status.ERR, Status.STOP)


def test_gone_groups_are_forgotten_only_after_a_clean_cycle():
    engine = HealthEngine("c")
    engine.observe(snapshot(0, {"a": 90, "b": 100}))
    partial = engine.observe(snapshot(1, {"a": 90}, errors=["describe b: timed out"]))
    assert set(partial.groups) == {"a", "b"} and partial.removed == frozenset()
    clean = engine.observe(snapshot(2, {"a": 90}))
    assert set(clean.groups) == {"a"} and clean.removed == {"b"}


def test_exact_commits_of_groups_it_does_not_watch_are_not_kept():
    engine = HealthEngine("c")
    engine.record_commits([("filtered-out", TP.topic, TP.partition, 5, 0)])
    engine.observe(snapshot(0, {"a": 90}))
    kept = [tuple(record[1:4]) for record in engine.export_state() if record[0] == "w"]
    assert kept == [("a", "orders", 0)]


def test_exported_state_restores_the_same_verdicts():
    engine = HealthEngine("c", HealthSettings(window=3))
    for i, committed in enumerate([10, 20, 30, 40]):
        engine.observe(snapshot(i, {"a": committed}, log_end=committed + 5))
    restored = HealthEngine("c", HealthSettings(window=3))
    assert restored.restore_state(engine.export_state())
    later = snapshot(30, {"a": 40}, log_end=60)
    assert restored.observe(later).groups["a"] == engine.observe(later).groups["a"]
    assert not HealthEngine("c").restore_state([["lagmon-health-state", 2, sys.byteorder]])
    assert not HealthEngine("c").restore_state([{"version": 2, "partitions": []}])  # saved whole, before 3


def test_a_state_that_breaks_off_while_read_restores_nothing():
    engine = HealthEngine("c")
    engine.observe(snapshot(0, {"a": 90, "b": 100}))

    def broken():
        records = list(engine.export_state())
        yield from records[:-1]
        raise ValueError("truncated")

    restored = HealthEngine("c")
    with pytest.raises(ValueError):
        restored.restore_state(broken())
    assert restored.groups() == set() and list(restored.export_state())[1:] == []


def test_a_restored_window_keeps_the_newest_commits_a_smaller_window_holds():
    wide, narrow = HealthEngine("c", HealthSettings(window=4)), HealthEngine("c", HealthSettings(window=2))
    for i, committed in enumerate([10, 20, 30, 40]):
        for engine in (wide, narrow):
            engine.observe(snapshot(i, {"a": committed}, log_end=committed + 5))
    restored = HealthEngine("c", HealthSettings(window=2))
    assert restored.restore_state(wide.export_state())
    assert list(restored.export_state()) == list(narrow.export_state())


def share_cycle(engine: HealthEngine, at_s: int, **archived: int):
    """One cycle of share group `s` whose t:0 and t:1 have these archived counts (default 0); its entry."""
    share = {
        TopicPartition("t", 0): SharePartition(80, 5, archived=archived.get("t0", 0)),
        TopicPartition("t", 1): SharePartition(40, 0, archived=archived.get("t1", 0), max_delivery_count=5),
    }
    return engine.observe(make_snapshot(at_s * S, groups=[make_share_group("s", share=share)])).groups["s"]


def test_a_share_groups_archived_count_rising_is_remembered_with_when_and_by_how_much():
    engine = HealthEngine("c1")
    first = share_cycle(engine, 0, t0=4)  # archived before lagmon looked: a baseline, not news
    assert [(sh.tp.partition, sh.archived, sh.archived_rose_at, sh.archived_total) for sh in first.share] == [
        (0, 4, None, 0),
        (1, 0, None, 0),
    ]
    assert first.share[1].max_delivery_count == 5 and first.total_lag == 15 + 60  # positions 85 and 40, log end 100
    rose = share_cycle(engine, 10, t0=7)
    assert (rose.share[0].archived_rose_at, rose.share[0].archived_rise, rose.share[0].archived_total) == (10 * S, 3, 3)
    # the start offset passed some archived records: the count falls, which gives nothing up
    fell = share_cycle(engine, 20, t0=2)
    assert (fell.share[0].archived_rose_at, fell.share[0].archived_total) == (10 * S, 3)
    again = share_cycle(engine, 30, t0=3, t1=1)
    assert [(sh.archived_rose_at, sh.archived_total) for sh in again.share] == [(30 * S, 4), (30 * S, 1)]


def test_an_unchanged_share_group_keeps_its_entry_and_a_changed_share_state_alone_re_judges_it():
    engine = HealthEngine("c1")
    first = share_cycle(engine, 0)
    # the factory's default share-partitions: the same positions (85, 40), other records in flight
    changed = engine.observe(make_snapshot(1 * S, groups=[make_share_group("s", share=SHARE_ON_T)]))
    assert changed.changed == {"s"} and changed.groups["s"].share != first.share
    same = engine.observe(make_snapshot(2 * S, groups=[make_share_group("s", share=SHARE_ON_T)]))
    assert same.changed == frozenset() and same.groups["s"] is changed.groups["s"]


def test_a_restart_neither_forgets_an_archived_rise_nor_sees_one_anew():
    engine = HealthEngine("c1")
    share_cycle(engine, 0, t0=4)
    share_cycle(engine, 10, t0=6)
    restored = HealthEngine("c1")
    assert restored.restore_state(engine.export_state())
    after = share_cycle(restored, 20, t0=6)
    t0 = after.share[0]
    assert (t0.archived_rose_at, t0.archived_rise, t0.archived_total) == (10 * S, 2, 2)
    assert after == share_cycle(engine, 20, t0=6)


class Timestamps:
    """Record timestamps as a LogAppendTime or CreateTime topic would give them: offset -> epoch ms."""

    def __init__(self, times: dict[int, int], log_append: bool):
        self.times, self.log_append, self.asked = times, log_append, []

    def fetch_timestamps(self, wanted):
        self.asked.append(dict(wanted))
        return {tp: RecordTime(self.times[o], self.log_append) for tp, o in wanted.items() if o in self.times}


def test_exact_lag_seconds_are_read_every_cycle_and_believed_only_where_the_history_allows():
    """Record 95 was appended at 4.5 s, between the samples at 0 s (log end 90) and 10 s (100)."""
    for log_append, told, exact in [(True, 4_500, True), (False, 4_500, True), (False, 4_500 - 3_600_000, False)]:
        reader = Timestamps({95: told}, log_append)
        engine = HealthEngine("c", exact_reader=reader, exact_top=5)
        engine.observe(snapshot(0, {"a": 95}, log_end=90))
        for at_s in (10, 11, 12):
            lag = engine.observe(snapshot(at_s, {"a": 95}, log_end=100)).groups["a"].partitions[0].clock.at(at_s * S)
            # interpolated: 95 + 1 is 6/10 of the way from 90 to 100, so appended at 6 s, within 6 s of the truth;
            # a CreateTime of 4.5 s is within 5.5 s of any time from 0 s to 10 s
            assert (lag.seconds, lag.exact, lag.error) == (
                (at_s - 4.5, True, 0.0 if log_append else 5.5) if exact else (at_s - 6.0, False, 6.0)
            ), (log_append, told)
        assert reader.asked[-2:] == [{TP: 95}, {TP: 95}]  # read again each cycle, not every other one
