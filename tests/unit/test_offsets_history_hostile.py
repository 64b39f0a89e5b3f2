"""The tail's fold (TailState.apply) on valid but hostile records: names empty or enormous, thousands of
members, generations going back, garbage where the consumer protocol's bytes belong.

Whatever the records, `apply` never raises, reads every record once (its position moves past each),
and the committed offsets it holds are those of the last commit of each partition.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_wire import arr, b32, i16, i32, i64, s16

from monitor.models import TopicPartition
from monitor.names import stored_name
from monitor.offsets_topic.history import TailRecord, TailState

TS = 1_700_000_000_000
names = st.one_of(
    st.sampled_from(["", "g", "orders"]),
    st.text(min_size=1, max_size=40),
    st.text(alphabet="x", min_size=2000, max_size=3000),
)
garbage = st.one_of(st.none(), st.binary(max_size=40))


def commit(group: str, topic: str, partition: int, offset: int | None):
    key = i16(1) + s16(group) + s16(topic) + i32(partition)
    value = None if offset is None else i16(3) + i64(offset) + i32(-1) + s16("") + i64(TS)
    return key, value


def member(member_id: str, client: str, host: str, subscription: bytes | None, assignment: bytes | None) -> bytes:
    return (
        s16(member_id)
        + s16(None)
        + s16(client)
        + s16(host)
        + i32(300_000)
        + i32(45_000)
        + b32(subscription)
        + b32(assignment)
    )


def group_metadata(group: str, generation: int, protocol_type: str, members: list[bytes] | None):
    key = i16(2) + s16(group)
    if members is None:
        return key, None
    value = i16(3) + s16(protocol_type) + i32(generation) + s16("range") + s16("m-0") + i64(TS) + arr(members)
    return key, value


commits = st.builds(commit, names, names, st.integers(0, 3), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)))
groups = st.builds(
    group_metadata,
    names,
    st.integers(-(2**31), 2**31 - 1),  # generations going back, negative, at the edges
    st.sampled_from(["consumer", "connect", ""]),
    st.one_of(st.none(), st.lists(st.builds(member, names, names, names, garbage, garbage), max_size=8)),
)
other_types = st.builds(lambda t, k, v: (i16(t) + k, v), st.integers(-5, 40), st.binary(max_size=30), garbage)


def fold(pairs: list[tuple[bytes, bytes | None]]) -> tuple[TailState, object]:
    state = TailState()
    records = [TailRecord(i % 3, i // 3, TS + i, k, v) for i, (k, v) in enumerate(pairs)]
    return state, state.apply(records)


@given(st.lists(st.one_of(commits, groups, other_types), max_size=40))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_any_hostile_sequence_is_folded_without_raising_and_every_record_is_read_once(pairs):
    state, update = fold(pairs)
    assert update.records == len(pairs)
    for partition in range(3):
        count = len(range(partition, len(pairs), 3))
        assert state.read.get(partition, 0) == count  # the offset after its last record, nothing read twice


@given(st.lists(commits, max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_committed_offsets_are_those_of_each_partitions_last_commit(pairs):
    state, _ = fold(pairs)
    expected: dict[str, dict[TopicPartition, int]] = {}
    for key, value in pairs:
        group_len = int.from_bytes(key[2:4], "big")
        group = stored_name(key[4 : 4 + group_len].decode())  # the tail knows groups by their stored names
        topic_len = int.from_bytes(key[4 + group_len : 6 + group_len], "big")
        topic = key[6 + group_len : 6 + group_len + topic_len].decode()
        tp = TopicPartition(topic, int.from_bytes(key[-4:], "big"))
        if value is None:
            expected.get(group, {}).pop(tp, None)
            if group in expected and not expected[group]:
                del expected[group]
        else:
            expected.setdefault(group, {})[tp] = int.from_bytes(value[2:10], "big", signed=True)
    assert state.committed == expected


def test_ten_thousand_members_and_generations_going_back():
    members = [member(f"m-{i}", f"client-{i}", f"/10.0.{i // 256}.{i % 256}", b"", b"") for i in range(10_000)]
    pairs = [group_metadata("big", 7, "consumer", members), group_metadata("big", 3, "consumer", members[:2])]
    state, update = fold(pairs)
    assert (update.records, state.classic["big"].epoch, len(state.classic["big"].members)) == (2, 3, 2)


def test_a_record_that_cannot_be_folded_is_skipped_and_named_and_the_rest_is_folded(monkeypatch):
    """No record found yet breaks the fold; should one (a Kafka version's new field, a bug), it costs that record."""
    fold_commit = TailState._commit

    def broken_for_bad(self, group, *rest):
        if group == "bad":
            raise OverflowError("an offset beyond anything")
        fold_commit(self, group, *rest)

    monkeypatch.setattr(TailState, "_commit", broken_for_bad)
    state, update = fold([commit("good", "t", 0, 5), commit("bad", "t", 0, 6), commit("good", "t", 1, 7)])
    assert state.committed == {"good": {TopicPartition("t", 0): 5, TopicPartition("t", 1): 7}}
    assert (update.records, update.failed, state.read) == (3, 1, {0: 1, 1: 1, 2: 1})
    assert update.errors == [
        "__consumer_offsets-1 offset 0: cannot apply OffsetCommit: OverflowError: an offset beyond anything"
    ]
