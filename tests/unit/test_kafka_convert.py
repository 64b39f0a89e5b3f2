"""Pure pieces of the Kafka edge: where a group lives, the KIP-848 states librdkafka hides, its errors by code."""

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, Uuid

from monitor.config import CollectorSettings
from monitor.kafka.common import compute_kafka_error
from monitor.kafka.offsets_topic_reader import OffsetsTopicReader, compute_topic_id
from monitor.kafka.sampler import compute_group_on_wanted_topics, convert_state
from monitor.models import GroupSnapshot, GroupState, GroupType, KafkaUnavailable, Member, NotAuthorized, TopicPartition
from monitor.shard import coordinator_partition, java_string_hash


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", 0),  # empty string hashes to 0
        ("hello", 99162322),  # "hello".hashCode() in Java
        ("polygenelubricants", -2147483648),  # Integer.MIN_VALUE: the case Utils.abs exists for
        ("é", 233),  # one UTF-16 code unit
        ("😀", 1772899),  # a surrogate pair counts as two code units (checked with jshell)
    ],
)
def test_java_string_hash_matches_java(text, expected):
    assert java_string_hash(text) == expected


@pytest.mark.parametrize(
    "group, partitions, expected",
    [
        ("hello", 50, 99162322 % 50),
        ("polygenelubricants", 50, 0),  # Utils.abs(MIN_VALUE) is 0, not a negative number
        ("console-consumer-12345", 12, abs(java_string_hash("console-consumer-12345")) % 12),
    ],
)
def test_coordinator_partition_follows_kafka(group, partitions, expected):
    assert coordinator_partition(group, partitions) == expected


@pytest.mark.parametrize(
    "msb, lsb, expected",
    [
        (-1, -2, "_____________________g"),  # str(Uuid) says "/////////////////////g"
        (0x3E3F_0000_0000_0000, 1, "Pj8AAAAAAAAAAAAAAAAAAQ"),
        (0x7BEF_BF00_0000_0000, 0, "e--_AAAAAAAAAAAAAAAAAA"),  # str(Uuid) says "e++/AAAAAAAAAAAAAAAAAA"
    ],
)
def test_topic_ids_are_named_as_kafka_writes_them_in_the_offsets_topic(msb, lsb, expected):
    """Kafka's Uuid.toString() (URL-safe base64, as java.util.Base64 gives it): the ids KIP-848 records carry."""
    assert compute_topic_id(Uuid(msb, lsb)) == expected


A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def member(assigned, target):
    return Member("m", "c", "h", assignment=assigned, target_assignment=target)


@pytest.mark.parametrize(
    "state, group_type, members, expected",
    [
        # librdkafka's own states pass through unchanged, never marked inferred
        (ConsumerGroupState.STABLE, GroupType.CONSUMER, [member((A,), (A,))], (GroupState.STABLE, False)),
        (ConsumerGroupState.EMPTY, GroupType.CLASSIC, [], (GroupState.EMPTY, False)),
        # a classic group in an unknown state stays unknown: no KIP-848 reasoning applies
        (ConsumerGroupState.UNKNOWN, GroupType.CLASSIC, [member((A,), None)], (GroupState.UNKNOWN, False)),
        # KIP-848, a member still moving toward its target: reconciling
        (ConsumerGroupState.UNKNOWN, GroupType.CONSUMER, [member((A,), (A, B))], (GroupState.RECONCILING, True)),
        # KIP-848, every member at its target while the coordinator says neither stable nor empty: assigning
        (ConsumerGroupState.UNKNOWN, GroupType.CONSUMER, [member((A,), (A,))], (GroupState.ASSIGNING, True)),
        # KIP-848 with no members: nothing to infer from
        (ConsumerGroupState.UNKNOWN, GroupType.CONSUMER, [], (GroupState.UNKNOWN, False)),
    ],
)
def test_convert_state_restores_kip848_states(state, group_type, members, expected):
    assert convert_state(state, group_type, members) == expected


@pytest.mark.parametrize(
    "code, expected",
    [
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, NotAuthorized),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, NotAuthorized),
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, NotAuthorized),
        (KafkaError._TRANSPORT, KafkaUnavailable),
        (KafkaError._AUTHENTICATION, KafkaUnavailable),  # a wrong password: not an ACL, and retried
    ],
)
def test_kafka_errors_are_named_by_their_code(code, expected):
    error = compute_kafka_error(KafkaError(code), "cannot read it")
    assert type(error) is expected and str(error) == "cannot read it"


def test_kafka_errors_are_not_named_by_their_wording():
    error = compute_kafka_error(KafkaError(KafkaError._TRANSPORT, "authorization server unreachable"), "x")
    assert type(error) is KafkaUnavailable


class _Message:
    def __init__(self, error: KafkaError):
        self._error = error

    def error(self):
        return self._error


class _Consumer:
    def __init__(self, *messages):
        self.messages = list(messages)

    def consume(self, num_messages, timeout):
        return self.messages


def test_offsets_topic_reader_raises_not_authorized_when_read_is_refused():
    reader = OffsetsTopicReader({})
    reader.consumer = _Consumer(_Message(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    with pytest.raises(NotAuthorized, match="cannot read __consumer_offsets"):
        reader.fetch_batch()


def test_topics_left_out_leave_the_offsets_and_the_assignments_but_not_the_group():
    tp = TopicPartition
    settings = CollectorSettings.from_env({"LAGMON_TOPIC_ALLOW": "^orders", "LAGMON_TOPIC_DENY": "-dlq$"})
    group = GroupSnapshot(
        "g",
        GroupState.RECONCILING,
        GroupType.CONSUMER,
        members=(
            Member("m1", "c", "h", assignment=(tp("orders", 0), tp("orders-dlq", 0)), target_assignment=(tp("x", 0),)),
            Member("m2", "c", "h", assignment=(tp("audit", 0),)),
        ),
        committed={tp("orders", 0): 5, tp("orders-dlq", 0): 1, tp("audit", 0): None},
        state_inferred=True,
    )
    kept = compute_group_on_wanted_topics(group, settings.topic_filter.wants)
    assert kept.committed == {tp("orders", 0): 5}
    assert [(m.member_id, m.assignment, m.target_assignment) for m in kept.members] == [
        ("m1", (tp("orders", 0),), ()),
        ("m2", (), None),  # a member stays, whatever it holds
    ]
    assert (kept.state, kept.state_inferred) == (GroupState.RECONCILING, True)  # judged on the whole assignment
    nothing = compute_group_on_wanted_topics(
        group, CollectorSettings.from_env({"LAGMON_TOPIC_DENY": "."}).topic_filter.wants
    )
    assert (nothing.group_id, nothing.committed, len(nothing.members)) == ("g", {}, 2)  # still listed
    assert compute_group_on_wanted_topics(group, lambda topic: True) is group  # nothing to cut: the same object


def test_the_topic_lists_work_as_the_group_lists():
    both = CollectorSettings.from_env({"LAGMON_TOPIC_ALLOW": "^a", "LAGMON_TOPIC_DENY": "^ab"})
    assert [t for t in ("a", "ab", "b") if both.topic_filter.wants(t)] == ["a"]  # allow first, then deny wins
    assert CollectorSettings.from_env({}).topic_filter.unfiltered
    assert CollectorSettings.from_env({"LAGMON_TOPIC_DENY": ""}).topic_filter.unfiltered  # blank is unset
    assert not CollectorSettings.from_env({"LAGMON_TOPIC_DENY": "^_"}).topic_filter.unfiltered
