"""A partial answer from Kafka stays partial: what it did not answer keeps its last answer, marked stale
(collector.compute_carried), and is neither stored nor exported as new."""

from __future__ import annotations

import concurrent.futures
from dataclasses import replace
from types import SimpleNamespace

import pytest
from factories import T0, make_group, make_snapshot

from monitor.collector import GONE_AFTER_MS, compute_carried
from monitor.events import compute_events
from monitor.exporter import MetricsExporter
from monitor.health import HealthEngine
from monitor.kafka import KafkaSampler
from monitor.models import EventKind, GroupState, PartitionOffsets, TopicPartition
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


@pytest.mark.parametrize("interval_ms", [1000, 30_000])
def test_a_group_left_out_of_whole_answers_is_gone_after_ten_seconds_and_two_answers(interval_ms):
    """A coordinator taking over a partition leaves its groups out of ListGroups, without an error,
    until it has loaded them: neither one answer nor a few seconds of them make a group gone."""
    snapshot, gone_at = two_groups(), None
    for cycle in range(1, 20):
        snapshot = compute_carried(snapshot, two_groups(T0 + cycle * interval_ms, keep=("a",)))
        if "b" not in snapshot.groups:
            gone_at = cycle
            break
        assert snapshot.groups["b"].stale_since == T0
    assert gone_at == 1 + -(-GONE_AFTER_MS // interval_ms)  # counted from the first answer that left it out


def test_a_group_left_out_keeps_its_lag():
    """Its log offsets were not asked for (the sampler asks for the answered groups' partitions only)."""
    prev = two_groups()
    b_only = {TopicPartition("u", 0)}
    answered = {tp: p for tp, p in prev.partitions.items() if tp not in b_only}
    got = compute_carried(prev, two_groups(T0 + 1000, keep=("a",), partitions=answered))
    assert got.partitions == prev.partitions and got.stale_partitions == b_only


def test_answers_with_errors_do_not_count_toward_gone():
    """Seen in a rolling restart: 13 s of answers with errors, then the first whole one without the group
    (its new coordinator still loading) took it for gone, resolved its alert and fired it again."""
    snapshot = two_groups()
    for cycle in range(1, 14):
        snapshot = compute_carried(snapshot, two_groups(T0 + cycle * 1000, ERR, keep=("a",)))
    snapshot = compute_carried(snapshot, two_groups(T0 + 14_000, keep=("a",)))
    assert snapshot.groups["b"].stale_since == T0
    assert compute_carried(snapshot, two_groups(T0 + 15_000)).groups["b"].stale_since is None


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


def test_a_coordinator_move_across_an_answer_that_names_none_is_one_move_old_to_new():
    """An idle group's coordinator is its __consumer_offsets partition's leader; between two leaders
    metadata names none. Compared as None, the move from the dead broker would be said by no cycle."""
    cycles = [make_snapshot(T0 + i * 1000, groups=[make_group("a", coordinator=c)]) for i, c in enumerate((1, None, 2))]
    between = compute_carried(cycles[0], cycles[1])
    assert between.groups["a"].coordinator == 1
    after = compute_carried(between, cycles[2])
    said = compute_events(cycles[0], between) + compute_events(between, after)
    assert [(e.kind, e.detail) for e in said] == [(EventKind.COORDINATOR_MOVED, {"from": 1, "to": 2})]


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


def _done(value) -> concurrent.futures.Future:
    """A future that is already done, as librdkafka's are once answered."""
    future = concurrent.futures.Future()
    future.set_result(value)
    return future


class _Admin:
    """AdminClient answers for Empty groups on topic t: ListGroups names "a" only, with an error when
    `failed` (librdkafka's result: the groups of the brokers that answered, and the others' errors);
    ListOffsets answers `log_start` and `log_end` for t's partition."""

    def __init__(self, failed: bool = False, log_end: int = 100, log_start: int = 0):
        from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError

        self.log_end, self.log_start = log_end, log_start
        listing = [SimpleNamespace(group_id="a", state=ConsumerGroupState.EMPTY, type=ConsumerGroupType.CLASSIC)]
        self.listed = SimpleNamespace(valid=listing, errors=[KafkaError(KafkaError._TIMED_OUT)] if failed else [])

    def list_consumer_groups(self, request_timeout=None):
        return _done(self.listed)

    def list_topics(self, timeout=None):
        partition = SimpleNamespace(leader=1)
        topic = SimpleNamespace(partitions={0: partition}, error=None)
        return SimpleNamespace(topics={"t": topic, "__consumer_offsets": topic})

    def list_offsets(self, request, isolation_level=None, request_timeout=None):
        def answer(ktp, spec):
            if ktp.topic != "t":
                return 100
            return self.log_start if type(spec).__name__ == "EarliestSpec" else self.log_end

        return {ktp: _done(SimpleNamespace(offset=answer(ktp, spec))) for ktp, spec in request.items()}


class _Tail:
    """An offsets-topic tail that has read every commit: both groups' offsets."""

    partitions, disabled = [0], True
    waited_s = None

    def committed_when_caught_up(self, ends, groups, wait_s):
        self.waited_s = wait_s
        return {"a": {TP0: 5}, "b": {TP0: 7}}


def test_a_cycle_waits_for_the_tail_as_long_as_the_sampler_was_told():
    tail = _Tail()
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1", offsets_tail=tail, tail_wait_s=2.5)
    sampler.admin = _Admin()
    assert sampler.fetch_snapshot(lambda: T0).offsets_from_tail
    assert tail.waited_s == 2.5


@pytest.mark.parametrize("listed_whole", [True, False])
def test_a_group_a_failed_listing_left_out_is_not_read_as_unknown_from_the_tail(listed_whole):
    """The tail names every group with commits; one a whole listing leaves out can only be listed by no one
    (a NUL in its id) and is added with its state unknown. After a listing a broker failed to answer, it is
    unanswered: compute_carried keeps it Empty as last seen, so no Empty-with-lag alert resolves."""
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1", offsets_tail=_Tail())
    sampler.admin = _Admin(failed=not listed_whole)
    snapshot = sampler.fetch_snapshot(lambda: T0)
    assert snapshot.groups["a"].state == GroupState.EMPTY
    if listed_whole:
        assert snapshot.groups["b"].state == GroupState.UNKNOWN  # listable by no one
    else:
        assert "b" not in snapshot.groups and snapshot.errors
        prev = make_snapshot(T0 - 1000, groups=[make_group("b", state=GroupState.EMPTY)])
        assert compute_carried(prev, snapshot).groups["b"].state == GroupState.EMPTY


def test_a_log_offset_librdkafka_answers_as_minus_1001_is_unanswered_and_keeps_the_lag():
    """While a partition's leader moves (a broker killed), librdkafka's ListOffsets can answer -1001 with no
    error. Read as a log end it made every lag 0 and resolved Empty-with-lag alerts for a cycle; it is an
    unanswered partition, whose last log offsets compute_carried keeps."""
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1", offsets_tail=_Tail())
    sampler.admin = _Admin(log_end=-1001)
    snapshot = sampler.fetch_snapshot(lambda: T0)
    assert TP0 not in snapshot.partitions
    assert any("no offset in the answer (-1001)" in e for e in snapshot.errors), snapshot.errors
    prev = make_snapshot(T0 - 1000, groups=[make_group("a", state=GroupState.EMPTY, committed={TP0: 5})])
    carried = compute_carried(prev, snapshot)
    assert carried.partitions[TP0].log_end == 100 and TP0 in carried.stale_partitions
    engine = HealthEngine("c1")
    engine.observe(prev)
    assert engine.observe(carried).groups["a"].total_lag == 95


def test_a_partition_whose_log_start_is_not_answered_is_unanswered_not_stored_with_its_end_as_start():
    """Its end alone would be stored as a log with no records (start = end) for that cycle."""
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1", offsets_tail=_Tail())
    sampler.admin = _Admin(log_start=-1001)
    snapshot = sampler.fetch_snapshot(lambda: T0)
    assert TP0 not in snapshot.partitions and snapshot.errors
    prev = make_snapshot(T0 - 1000, groups=[make_group("a", state=GroupState.EMPTY, committed={TP0: 5})])
    assert compute_carried(prev, snapshot).partitions[TP0] == prev.partitions[TP0]


def test_an_offsets_topic_end_answered_as_minus_1001_is_no_end_for_the_tails():
    """The same answer for __consumer_offsets would tell the tail it had read to the end (and the session
    that its stored positions lie past the end, as if the topic were recreated): it is no answer."""
    from monitor.kafka.offsets_topic_reader import OffsetsTopicReader
    from monitor.kafka.sampler import fetch_offsets_topic_ends
    from monitor.models import KafkaUnavailable

    admin = _Admin()
    assert fetch_offsets_topic_ends(admin, [0]) == {0: 100}
    admin.list_offsets = lambda request, **kw: {ktp: _done(SimpleNamespace(offset=-1001)) for ktp in request}
    assert fetch_offsets_topic_ends(admin, [0]) is None
    reader = OffsetsTopicReader({"bootstrap.servers": "127.0.0.1:9"})
    reader.partitions = [0, 1]
    reader.consumer = SimpleNamespace(
        pause=lambda tps: None,
        resume=lambda tps: None,
        get_watermark_offsets=lambda tp, timeout=None: (0, -1001 if tp.partition == 1 else 40),
    )
    with pytest.raises(KafkaUnavailable, match=r"no end offset for partitions \[1\]"):
        reader.fetch_ends()


class _TailReadSoFar(_Tail):
    """A tail that has caught up; asked for its offsets as read when the end offsets are not answered."""

    def committed_when_caught_up(self, ends, groups, wait_s):
        raise AssertionError("no end offsets were answered")

    def committed_as_read(self, groups):
        return {"a": {TP0: 5}}


def test_without_the_offsets_topics_end_offsets_a_caught_up_tail_answers_and_offsetfetch_is_not_asked():
    """OffsetFetch through the admin client crashes librdkafka when the coordinator asked is stopping,
    which is when __consumer_offsets' leaders move and their end offsets go unanswered."""
    from confluent_kafka import KafkaError, KafkaException

    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1", offsets_tail=_TailReadSoFar())
    admin = sampler.admin = _Admin()
    answer = admin.list_offsets

    def no_ends(request, **kw):
        if any(ktp.topic == "__consumer_offsets" for ktp in request):
            raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
        return answer(request, **kw)

    admin.list_offsets = no_ends  # and it has no list_consumer_group_offsets: asking OffsetFetch would fail
    snapshot = sampler.fetch_snapshot(lambda: T0)
    assert snapshot.offsets_from_tail and snapshot.groups["a"].committed == {TP0: 5}
    assert any("as far as the tail has read" in e for e in snapshot.errors)
