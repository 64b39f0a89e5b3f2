"""A partial answer from Kafka stays partial: what it did not answer keeps its last answer, marked stale
(collector.compute_carried), and is neither stored nor exported as new."""

from __future__ import annotations

from dataclasses import replace

from factories import T0, make_group, make_snapshot

from monitor.collector import compute_carried
from monitor.exporter import MetricsExporter
from monitor.health import HealthEngine
from monitor.models import PartitionOffsets, TopicPartition
from monitor.store.writer import compute_answered

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
ERR = ("describe b: Broker: Coordinator load in progress",)


def two_groups(taken_at=T0, errors=(), keep=("a", "b"), partitions=None):
    groups = [make_group("a"), make_group("b", committed={TopicPartition("u", 0): 5})]
    return make_snapshot(
        taken_at, groups=[g for g in groups if g.group_id in keep], errors=errors, partitions=partitions
    )


def test_a_group_kafka_did_not_answer_for_keeps_its_last_answer_marked_stale():
    prev, cur = two_groups(), two_groups(T0 + 1000, ERR, keep=("a",))
    got = compute_carried(prev, cur)
    assert got.groups["b"] == replace(prev.groups["b"], stale_since=T0)
    assert got.groups["a"] is cur.groups["a"]


def test_a_group_missing_from_two_whole_answers_in_a_row_is_gone():
    """A coordinator still loading leaves a group out of ListGroups without an error: once is not gone."""
    once = compute_carried(two_groups(), two_groups(T0 + 1000, keep=("a",)))
    assert once.groups["b"].stale_since == T0
    assert "b" not in compute_carried(once, two_groups(T0 + 2000, keep=("a",))).groups


def test_staying_unanswered_keeps_the_time_it_was_last_answered():
    first = compute_carried(two_groups(), two_groups(T0 + 1000, ERR, keep=("a",)))
    second = compute_carried(first, two_groups(T0 + 2000, ERR, keep=("a",)))
    assert second.groups["b"].stale_since == T0


def test_log_offsets_kafka_did_not_answer_keep_their_last_values_and_are_named():
    prev = two_groups()
    answered = {tp: p for tp, p in prev.partitions.items() if tp != TP1}
    got = compute_carried(prev, two_groups(T0 + 1000, ("log offsets: 1 partition(s) failed",), partitions=answered))
    assert got.partitions[TP1] == prev.partitions[TP1]
    assert got.stale_partitions == {TP1}


def test_a_whole_answer_is_taken_as_it_is():
    cur = two_groups(T0 + 1000)
    assert compute_carried(two_groups(), cur) is cur


def test_what_was_not_answered_is_not_stored_as_this_samples():
    prev = two_groups()
    answered = {TP0: prev.partitions[TP0]}  # b's partition was not asked for, t:1's did not answer
    got = compute_answered(compute_carried(prev, two_groups(T0 + 1000, ERR, keep=("a",), partitions=answered)))
    assert (sorted(got.groups), sorted(got.partitions)) == (["a"], [TP0])


def test_what_was_not_answered_has_no_series_on_metrics():
    prev = make_snapshot(groups=[make_group("a"), make_group("b", committed={TopicPartition("u", 0): 5})])
    cur = make_snapshot(T0 + 1000, groups=[make_group("a")], errors=ERR, partitions={TP0: PartitionOffsets(0, 100)})
    snapshot = compute_carried(prev, cur)
    engine = HealthEngine("c1")
    engine.observe(prev)
    exporter = MetricsExporter("c1")
    exporter.observe(snapshot, engine.observe(snapshot), 100)
    text = "".join(exporter.exposition())
    lag_lines = [line for line in text.splitlines() if line.startswith("kafka_consumergroup_group_lag{")]
    assert [line.split("partition=")[1].split(",")[0] for line in lag_lines] == ['"0"']  # a/t:0 only
    assert 'group="b"' not in "".join(
        line for line in text.splitlines() if not line.startswith("lagmon_consumergroup_info")
    )
    assert 'kafka_partition_latest_offset{cluster_name="c1",topic="t",partition="1"}' not in text
