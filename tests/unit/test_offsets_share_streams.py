"""Share-group (KIP-932), streams-group (KIP-1071) and `__share_group_state` records.

CASES are built byte by byte here from Kafka 4.3's schemas (kafka_wire, not the
decoder's own code); GOLDEN and GOLDEN_SHARE_STATE hold bytes and JSON produced
by Kafka 4.3.0's own classes (kafka/golden/GoldenShareStreams.java).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_wire import carr, cints, cs, i8, i16, i32, i64, s16, tags, uv

from monitor.models import DecodeError
from monitor.offsets_topic import (
    CopartitionGroup,
    Endpoint,
    KeyValue,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    ShareSnapshot,
    ShareTopicPartitions,
    ShareUpdate,
    Skipped,
    StateBatch,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupMemberMetadata,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTopology,
    Subtopology,
    TaskIds,
    TopicIdPartitions,
    TopicInfo,
    decode,
    decode_share_state,
    to_kafka_json,
)
from monitor.offsets_topic.decoder import RECORD_TYPES
from monitor.offsets_topic.history import TailRecord, TailState

T1, T1_RAW = "AAECAwQFBgcICQoLDA0ODw", bytes(range(16))
T2, T2_RAW = "8Jd7xVUmQVmdlQvWVq1Jmw", bytes.fromhex("f0977bc5552641599d950bd656ad499b")
TS = 1_700_000_000_000
SHARE_TYPES, STREAMS_TYPES = [10, 11, 12, 13, 14, 15], [17, 19, 20, 21, 22, 23]


def key(rtype, group="g", *more):
    return i16(rtype) + s16(group) + b"".join(s16(m) for m in more)


def type_key(rtype):
    """A valid key of any share or streams type (member records have a member id too)."""
    return key(rtype, "g", *(["m"] if len(RECORD_TYPES[rtype][1]) == 2 else []))


def state_key(rtype=0, group="sg", topic_raw=T1_RAW, partition=3):
    return i16(rtype) + s16(group) + topic_raw + i32(partition)


def tasks(*entries, epochs=False):
    """[]TaskIds: (subtopology, partitions[, epochs or None]); `epochs` = the current-assignment layout."""
    out = []
    for sub, parts, *more in entries:
        body = cs(sub) + cints(parts)
        if epochs:
            body += tags({0: cints(more[0])}) if more else tags()
        else:
            body += tags()
        out.append(body)
    return carr(out)


def kv(*pairs):
    return carr([cs(k) + cs(v) + tags() for k, v in pairs])


def topic_info(name, partitions, rf, *configs):
    return cs(name) + i32(partitions) + i16(rf) + kv(*configs) + tags()


def streams_member(endpoint=b"\xff", instance=None, client_tags=()):
    return (
        i16(0)
        + cs(instance)
        + cs(None)
        + cs("app-1-StreamThread-1")
        + cs("/127.0.0.1")
        + i32(300_000)
        + i32(1)
        + cs("pid-1")
        + endpoint
        + kv(*client_tags)
        + tags()
    )


def batch(first, last, state, count):
    return i64(first) + i64(last) + i8(state) + i16(count) + tags()


def snapshot(tagged=None, batches=()):
    return (
        i16(0)
        + i32(2)
        + i32(1)
        + i32(0)
        + i64(40)
        + i64(TS)
        + i64(TS + 9)
        + carr([batch(*b) for b in batches])
        + tags(tagged)
    )


def int16s(*xs):
    return uv(len(xs) + 1) + b"".join(i16(x) for x in xs)


SUBTOPOLOGY_1 = (
    cs("1")
    + carr([cs("app-repartition")])
    + carr([cs("in-.*")])
    + carr([topic_info("app-changelog", 0, -1, ("cleanup.policy", "compact"))])
    + carr([])
    + carr([topic_info("app-repartition", 4, 3)])
    + carr([int16s(0) + int16s() + int16s(0, 1) + tags()])
    + tags()
)


# --- decoded records, one reason per case ------------------------------------------

CASES = [
    # share groups
    (
        "share member",
        key(10, "sg", "m-1"),
        i16(0) + cs(None) + cs("cli") + cs("/127.0.0.1") + carr([cs("orders")]) + tags(),
        ShareGroupMemberMetadata("sg", "m-1", None, "cli", "/127.0.0.1", ("orders",), value_version=0),
    ),
    ("share member left", key(10, "sg", "m-1"), None, ShareGroupMemberMetadata("sg", "m-1", tombstone=True)),
    (
        "share group epoch",
        key(11, "sg"),
        i16(0) + i32(7) + i64(-5) + tags(),
        ShareGroupMetadata("sg", 7, -5, value_version=0),
    ),
    ("share group deleted", key(11, "sg"), None, ShareGroupMetadata("sg", tombstone=True)),
    (
        "share target epoch, timestamp absent: Kafka's default 0",
        key(12, "sg"),
        i16(0) + i32(7) + tags(),
        ShareGroupTargetAssignmentMetadata("sg", 7, 0, value_version=0),
    ),
    (
        "share target epoch with timestamp and a future tag",
        key(12, "sg"),
        i16(0) + i32(7) + tags({0: i64(TS), 6: b"new"}),
        ShareGroupTargetAssignmentMetadata("sg", 7, TS, value_version=0),
    ),
    (
        "share target of a member",
        key(13, "sg", "m-1"),
        i16(0) + carr([T1_RAW + cints([0, 1]) + tags(), T2_RAW + cints([]) + tags()]) + tags(),
        ShareGroupTargetAssignmentMember(
            "sg", "m-1", (TopicIdPartitions(T1, (0, 1)), TopicIdPartitions(T2, ())), value_version=0
        ),
    ),
    (
        "share current assignment",
        key(14, "sg", "m-1"),
        i16(0) + i32(8) + i32(7) + i8(0) + carr([T2_RAW + cints([3]) + tags()]) + tags(),
        ShareGroupCurrentMemberAssignment("sg", "m-1", 8, 7, 0, (TopicIdPartitions(T2, (3,)),), value_version=0),
    ),
    (
        "share state partition metadata: deleting topics have no partitions",
        key(15, "sg"),
        i16(0)
        + carr([T2_RAW + cs("pay") + cints([0]) + tags()])
        + carr([T1_RAW + cs("orders") + cints([0, 1]) + tags()])
        + carr([T2_RAW + cs("old") + tags()])
        + tags(),
        ShareGroupStatePartitionMetadata(
            "sg",
            (ShareTopicPartitions(T2, "pay", (0,)),),
            (ShareTopicPartitions(T1, "orders", (0, 1)),),
            (ShareTopicPartitions(T2, "old"),),
            value_version=0,
        ),
    ),
    # streams groups
    (
        "streams group epoch, tags absent: Kafka's defaults -1 and []",
        key(17, "app"),
        i16(0) + i32(4) + i64(99) + tags(),
        StreamsGroupMetadata("app", 4, 99, -1, (), value_version=0),
    ),
    (
        "streams group epoch with both tags",
        key(17, "app"),
        i16(0) + i32(5) + i64(-1) + tags({0: i32(0), 1: kv(("num.standby.replicas", "1"))}),
        StreamsGroupMetadata("app", 5, -1, 0, (KeyValue("num.standby.replicas", "1"),), value_version=0),
    ),
    (
        "streams group epoch with explicitly null configs",
        key(17, "app"),
        i16(0) + i32(6) + i64(0) + tags({1: carr(None)}),
        StreamsGroupMetadata("app", 6, 0, -1, None, value_version=0),
    ),
    ("streams group deleted", key(17, "app"), None, StreamsGroupMetadata("app", tombstone=True)),
    (
        "streams member without endpoint (int8 marker -1)",
        key(19, "app", "s-1"),
        streams_member(),
        StreamsGroupMemberMetadata(
            "app",
            "s-1",
            None,
            None,
            "app-1-StreamThread-1",
            "/127.0.0.1",
            300_000,
            1,
            "pid-1",
            None,
            (),
            value_version=0,
        ),
    ),
    (
        "streams member with endpoint and client tags",
        key(19, "app", "s-2"),
        streams_member(i8(1) + cs("h.local") + bytes.fromhex("ffff") + tags(), "i-2", [("zone", "a")]),
        StreamsGroupMemberMetadata(
            "app",
            "s-2",
            "i-2",
            None,
            "app-1-StreamThread-1",
            "/127.0.0.1",
            300_000,
            1,
            "pid-1",
            Endpoint("h.local", 65535),
            (KeyValue("zone", "a"),),
            value_version=0,
        ),
    ),
    ("streams member left", key(19, "app", "s-1"), None, StreamsGroupMemberMetadata("app", "s-1", tombstone=True)),
    (
        "streams target epoch",
        key(20, "app"),
        i16(0) + i32(4) + tags({0: i64(TS)}),
        StreamsGroupTargetAssignmentMetadata("app", 4, TS, value_version=0),
    ),
    (
        "streams target of a member: tasks without epochs",
        key(21, "app", "s-1"),
        i16(0) + tasks(("0", [0, 1]), ("1", [2])) + tasks(("1", [0])) + tasks() + tags(),
        StreamsGroupTargetAssignmentMember(
            "app",
            "s-1",
            (TaskIds("0", (0, 1)), TaskIds("1", (2,))),
            (TaskIds("1", (0,)),),
            (),
            value_version=0,
        ),
    ),
    (
        "streams current assignment: epochs present, absent (Kafka's default []) and null",
        key(22, "app", "s-1"),
        i16(0)
        + i32(5)
        + i32(4)
        + i8(1)
        + tasks(("0", [0, 1], [5, 4]), ("1", [2]), epochs=True)
        + tasks(("1", [0], None), epochs=True)
        + tasks(epochs=True)
        + tasks(("0", [3], [3]), epochs=True)
        + tasks(epochs=True)
        + tasks(("2", [1]), epochs=True)
        + tags(),
        StreamsGroupCurrentMemberAssignment(
            "app",
            "s-1",
            5,
            4,
            1,
            (TaskIds("0", (0, 1), (5, 4)), TaskIds("1", (2,), ())),
            (TaskIds("1", (0,), None),),
            (),
            (TaskIds("0", (3,), (3,)),),
            (),
            (TaskIds("2", (1,), ()),),
            value_version=0,
        ),
    ),
    (
        "streams topology",
        key(23, "app"),
        i16(0)
        + i32(0)
        + carr(
            [
                cs("0")
                + carr([cs("words")])
                + carr([])
                + carr([])
                + carr([cs("app-repartition")])
                + carr([])
                + carr([])
                + tags(),
                SUBTOPOLOGY_1,
            ]
        )
        + tags(),
        StreamsGroupTopology(
            "app",
            0,
            (
                Subtopology("0", ("words",), (), (), ("app-repartition",), (), ()),
                Subtopology(
                    "1",
                    ("app-repartition",),
                    ("in-.*",),
                    (TopicInfo("app-changelog", 0, -1, (KeyValue("cleanup.policy", "compact"),)),),
                    (),
                    (TopicInfo("app-repartition", 4, 3),),
                    (CopartitionGroup((0,), (), (0, 1)),),
                ),
            ),
            value_version=0,
        ),
    ),
    ("streams topology deleted", key(23, "app"), None, StreamsGroupTopology("app", tombstone=True)),
    # forward compatible
    *[
        (
            f"future value version of type {t}",
            type_key(t),
            i16(1) + b"whatever",
            Skipped(t, f"unknown value version 1 of {RECORD_TYPES[t][0].__name__} (known 0-0)", 1),
        )
        for t in SHARE_TYPES + STREAMS_TYPES
    ],
    (
        "type 9, not written by Kafka 4.3",
        key(9, "s"),
        b"\x00\x00",
        Skipped(9, "share-group record type Kafka 4.3 does not write"),
    ),
    (
        "type 18, not written by Kafka 4.3",
        key(18, "s"),
        None,
        Skipped(18, "streams-group record type Kafka 4.3 does not write"),
    ),
    *[
        (f"newer type {t}", key(t, "s"), b"\x00\x00", Skipped(t, "record type unknown to Kafka 4.3"))
        for t in (24, 99, 32767)
    ],
]


@pytest.mark.parametrize("key, value, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decode(key, value, expected):
    assert decode(key, value) == expected
    assert decode(bytearray(key), None if value is None else memoryview(value)) == expected


STATE_CASES = [
    (
        "snapshot, delivery count tag absent: Kafka's default -1",
        state_key(0),
        snapshot(batches=[(40, 44, 0, 1), (45, 45, 4, 5)]),
        ShareSnapshot(
            "sg",
            T1,
            3,
            2,
            1,
            0,
            40,
            TS,
            TS + 9,
            (StateBatch(40, 44, 0, 1), StateBatch(45, 45, 4, 5)),
            -1,
            value_version=0,
        ),
    ),
    (
        "snapshot with delivery count and a future tag",
        state_key(0, partition=0),
        snapshot({0: i32(12), 3: b"xy"}),
        ShareSnapshot("sg", T1, 0, 2, 1, 0, 40, TS, TS + 9, (), 12, value_version=0),
    ),
    ("snapshot tombstone", state_key(0), None, ShareSnapshot("sg", T1, 3, tombstone=True)),
    (
        "update",
        state_key(1, topic_raw=T2_RAW),
        i16(0) + i32(2) + i32(0) + i64(-1) + carr([batch(46, 50, 2, 1)]) + tags({0: i32(0)}),
        ShareUpdate("sg", T2, 3, 2, 0, -1, (StateBatch(46, 50, 2, 1),), 0, value_version=0),
    ),
    ("update tombstone", state_key(1), None, ShareUpdate("sg", T1, 3, tombstone=True)),
    (
        "future snapshot version",
        state_key(0),
        i16(1) + b"?",
        Skipped(0, "unknown value version 1 of ShareSnapshot (known 0-0)", 1),
    ),
    ("newer share-state type", state_key(2), b"\x00\x00", Skipped(2, "share-state record type unknown to Kafka 4.3")),
]


@pytest.mark.parametrize("key, value, expected", [c[1:] for c in STATE_CASES], ids=[c[0] for c in STATE_CASES])
def test_decode_share_state(key, value, expected):
    assert decode_share_state(key, value) == expected
    assert decode_share_state(bytearray(key), None if value is None else memoryview(value)) == expected


ERRORS = [
    (
        "null client id of a share member",
        key(10, "sg", "m"),
        i16(0) + cs(None) + cs(None),
        "record type 10: null string in a non-nullable field",
    ),
    ("share member key without member id", key(10, "sg"), None, "record type 10: truncated: 2 bytes needed"),
    (
        "streams endpoint cut before its port",
        key(19, "app", "s"),
        streams_member(i8(1) + cs("h"))[:-2],  # no port, client tags nor tags
        "record type 19: truncated: 2 bytes needed",
    ),
    (
        "streams tagged configs longer than their tag",
        key(17, "app"),
        i16(0) + i32(1) + i64(1) + tags({1: kv(("k", "v")) + b"\x00"}),
        "1 trailing bytes after tagged field 1",
    ),
    (
        "streams topology with an absurd subtopology count",
        key(23, "app"),
        i16(0) + i32(0) + uv(1_000_000),
        "array of 999999 items cannot fit",
    ),
    (
        "share partitions cut inside a topic id",
        key(13, "sg", "m"),
        i16(0) + carr([T1_RAW[:9]]),
        "truncated: 16 bytes needed",
    ),
    (
        "streams value with trailing bytes",
        key(20, "app"),
        i16(0) + i32(1) + tags() + b"\x00",
        "1 trailing bytes after the value",
    ),
]


@pytest.mark.parametrize("key, value, reason", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_decode_error(key, value, reason):
    with pytest.raises(DecodeError) as info:
        decode(key, value)
    assert reason in str(info.value) and type(info.value) is DecodeError


STATE_ERRORS = [
    ("no key", None, None, "record has no key"),
    ("one-byte key", b"\x00", None, "key of 1 bytes"),
    ("negative type", i16(-1) + s16("g"), None, "unknown record type -1"),
    ("key without partition", state_key(0)[:-4], None, "share-state record type 0: truncated: 4 bytes needed"),
    ("key with trailing bytes", state_key(1) + b"\x00", None, "1 trailing bytes after the key"),
    ("negative value version", state_key(0), i16(-3), "negative value version -3"),
    ("snapshot cut short", state_key(0), snapshot()[:-3], "truncated"),
    ("snapshot with trailing bytes", state_key(0), snapshot() + b"\x00", "1 trailing bytes after the value"),
    ("batch count too large", state_key(1), i16(0) + i32(0) + i32(0) + i64(0) + uv(500), "array of 499 items"),
]


@pytest.mark.parametrize("key, value, reason", [c[1:] for c in STATE_ERRORS], ids=[c[0] for c in STATE_ERRORS])
def test_decode_share_state_error(key, value, reason):
    with pytest.raises(DecodeError) as info:
        decode_share_state(key, value)
    assert reason in str(info.value) and type(info.value) is DecodeError


# --- Kafka's own bytes and JSON ------------------------------------------------------

# Produced with Kafka 4.3.0's jars by kafka/golden/GoldenShareStreams.java: generated message
# classes (some with unknown tagged fields added, as a newer broker would write) serialised by
# GroupCoordinatorRecordSerde / ShareCoordinatorRecordSerde, printed by ShareGroupMessageFormatter
# (10-15), ShareGroupStateMessageFormatter, and for streams (17-23) the same
# CoordinatorRecordMessageFormatter code with CoordinatorRecordJsonConverters (as DumpLogSegments).
GOLDEN = [  # long lines: bytes and JSON exactly as Kafka wrote them
    (
        "000a0002736700036d2d31",
        "00000004636c690b2f3132372e302e302e3103076f72646572730470617900",
        '{"key":{"type":10,"data":{"groupId":"sg","memberId":"m-1"}},"value":{"version":0,"data":{"rackId":null,"clientId":"cli","clientHost":"/127.0.0.1","subscribedTopicNames":["orders","pay"]}}}',
    ),
    (
        "000a0002736700036d2d32",
        "0000077261636b2d31010a2f31302e302e302e310100",
        '{"key":{"type":10,"data":{"groupId":"sg","memberId":"m-2"}},"value":{"version":0,"data":{"rackId":"rack-1","clientId":"","clientHost":"/10.0.0.1","subscribedTopicNames":[]}}}',
    ),
    (
        "000a0002736700036d2d31",
        None,
        '{"key":{"type":10,"data":{"groupId":"sg","memberId":"m-1"}},"value":null}',
    ),
    (
        "000b00027367",
        "000000000007fffffee08e04fb3500",
        '{"key":{"type":11,"data":{"groupId":"sg"}},"value":{"version":0,"data":{"epoch":7,"metadataHash":-1234567890123}}}',
    ),
    (
        "000b00027367",
        None,
        '{"key":{"type":11,"data":{"groupId":"sg"}},"value":null}',
    ),
    (
        "000c00027367",
        "00000000000700",
        '{"key":{"type":12,"data":{"groupId":"sg"}},"value":{"version":0,"data":{"assignmentEpoch":7}}}',
    ),
    (
        "000c00027367",
        "0000000000080100080000018bcfe56805",
        '{"key":{"type":12,"data":{"groupId":"sg"}},"value":{"version":0,"data":{"assignmentEpoch":8,"assignmentTimestamp":1700000000005}}}',
    ),
    (
        "000c00027367",
        None,
        '{"key":{"type":12,"data":{"groupId":"sg"}},"value":null}',
    ),
    (
        "000d0002736700036d2d31",
        "000003000102030405060708090a0b0c0d0e0f0400000000000000010000000200f0977bc5552641599d950bd656ad499b010000",
        '{"key":{"type":13,"data":{"groupId":"sg","memberId":"m-1"}},"value":{"version":0,"data":{"topicPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,1,2]},{"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","partitions":[]}]}}}',
    ),
    (
        "000d0002736700036d2d31",
        None,
        '{"key":{"type":13,"data":{"groupId":"sg","memberId":"m-1"}},"value":null}',
    ),
    (
        "000e0002736700036d2d31",
        "000000000008000000070002f0977bc5552641599d950bd656ad499b02000000030000",
        '{"key":{"type":14,"data":{"groupId":"sg","memberId":"m-1"}},"value":{"version":0,"data":{"memberEpoch":8,"previousMemberEpoch":7,"state":0,"assignedPartitions":[{"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","partitions":[3]}]}}}',
    ),
    (
        "000e0002736700036d2d31",
        None,
        '{"key":{"type":14,"data":{"groupId":"sg","memberId":"m-1"}},"value":null}',
    ),
    (
        "000f00027367",
        "000002f0977bc5552641599d950bd656ad499b0470617902000000000002000102030405060708090a0b0c0d0e0f076f72646572730300000000000000010002f0977bc5552641599d950bd656ad499b046f6c640000",
        '{"key":{"type":15,"data":{"groupId":"sg"}},"value":{"version":0,"data":{"initializingTopics":[{"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","topicName":"pay","partitions":[0]}],"initializedTopics":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","topicName":"orders","partitions":[0,1]}],"deletingTopics":[{"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","topicName":"old"}]}}}',
    ),
    (
        "000f00027367",
        "000001010100",
        '{"key":{"type":15,"data":{"groupId":"sg"}},"value":{"version":0,"data":{"initializingTopics":[],"initializedTopics":[],"deletingTopics":[]}}}',
    ),
    (
        "000f00027367",
        None,
        '{"key":{"type":15,"data":{"groupId":"sg"}},"value":null}',
    ),
    (
        "00110003617070",
        "000000000004000000003ade68b100",
        '{"key":{"type":17,"data":{"groupId":"app"}},"value":{"version":0,"data":{"epoch":4,"metadataHash":987654321}}}',
    ),
    (
        "00110003617070",
        "000000000005ffffffffffffffff02000400000000011902156e756d2e7374616e6462792e7265706c69636173023100",
        '{"key":{"type":17,"data":{"groupId":"app"}},"value":{"version":0,"data":{"epoch":5,"metadataHash":-1,"validatedTopologyEpoch":0,"lastAssignmentConfigs":[{"key":"num.standby.replicas","value":"1"}]}}}',
    ),
    (
        "00110003617070",
        "000000000006000000000000000002000400000002010100",
        '{"key":{"type":17,"data":{"groupId":"app"}},"value":{"version":0,"data":{"epoch":6,"metadataHash":0,"validatedTopologyEpoch":2,"lastAssignmentConfigs":null}}}',
    ),
    (
        "00110003617070",
        None,
        '{"key":{"type":17,"data":{"groupId":"app"}},"value":null}',
    ),
    (
        "001300036170700003732d31",
        "000000001e6170702d312d53747265616d5468726561642d312d636f6e73756d65720b2f3132372e302e302e31000493e0000000000e33663163306432652d70726f63ff0100",
        '{"key":{"type":19,"data":{"groupId":"app","memberId":"s-1"}},"value":{"version":0,"data":{"instanceId":null,"rackId":null,"clientId":"app-1-StreamThread-1-consumer","clientHost":"/127.0.0.1","rebalanceTimeoutMs":300000,"topologyEpoch":0,"processId":"3f1c0d2e-proc","userEndpoint":null,"clientTags":[]}}}',
    ),
    (
        "001300036170700003732d32",
        "000007696e73742d32077261636b2d3202630a2f31302e302e302e32ffffffff00000003037032010c6170702d322e6c6f63616cffff0003057a6f6e650565752d3100057469657205676f6c640000",
        '{"key":{"type":19,"data":{"groupId":"app","memberId":"s-2"}},"value":{"version":0,"data":{"instanceId":"inst-2","rackId":"rack-2","clientId":"c","clientHost":"/10.0.0.2","rebalanceTimeoutMs":-1,"topologyEpoch":3,"processId":"p2","userEndpoint":{"host":"app-2.local","port":65535},"clientTags":[{"key":"zone","value":"eu-1"},{"key":"tier","value":"gold"}]}}}',
    ),
    (
        "001300036170700003732d31",
        None,
        '{"key":{"type":19,"data":{"groupId":"app","memberId":"s-1"}},"value":null}',
    ),
    (
        "00140003617070",
        "00000000000400",
        '{"key":{"type":20,"data":{"groupId":"app"}},"value":{"version":0,"data":{"assignmentEpoch":4}}}',
    ),
    (
        "00140003617070",
        "0000000000050100080000018bcfe56807",
        '{"key":{"type":20,"data":{"groupId":"app"}},"value":{"version":0,"data":{"assignmentEpoch":5,"assignmentTimestamp":1700000000007}}}',
    ),
    (
        "00140003617070",
        None,
        '{"key":{"type":20,"data":{"groupId":"app"}},"value":null}',
    ),
    (
        "001500036170700003732d31",
        "00000302300300000000000000010002310200000002000202310200000000000100",
        '{"key":{"type":21,"data":{"groupId":"app","memberId":"s-1"}},"value":{"version":0,"data":{"activeTasks":[{"subtopologyId":"0","partitions":[0,1]},{"subtopologyId":"1","partitions":[2]}],"standbyTasks":[{"subtopologyId":"1","partitions":[0]}],"warmupTasks":[]}}}',
    ),
    (
        "001500036170700003732d31",
        None,
        '{"key":{"type":21,"data":{"groupId":"app","memberId":"s-1"}},"value":null}',
    ),
    (
        "001600036170700003732d31",
        "0000000000050000000400030230030000000000000001010009030000000500000004023102000000020002023102000000000100010001020230020000000301000502000000030102023202000000010000",
        '{"key":{"type":22,"data":{"groupId":"app","memberId":"s-1"}},"value":{"version":0,"data":{"memberEpoch":5,"previousMemberEpoch":4,"state":0,"activeTasks":[{"subtopologyId":"0","partitions":[0,1],"assignmentEpochs":[5,4]},{"subtopologyId":"1","partitions":[2]}],"standbyTasks":[{"subtopologyId":"1","partitions":[0],"assignmentEpochs":null}],"warmupTasks":[],"activeTasksPendingRevocation":[{"subtopologyId":"0","partitions":[3],"assignmentEpochs":[3]}],"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[{"subtopologyId":"2","partitions":[1]}]}}}',
    ),
    (
        "001600036170700003732d32",
        "000000000006000000050202023002000000010200050200000006030301020301010101010109017f",
        '{"key":{"type":22,"data":{"groupId":"app","memberId":"s-2"}},"value":{"version":0,"data":{"memberEpoch":6,"previousMemberEpoch":5,"state":2,"activeTasks":[{"subtopologyId":"0","partitions":[1],"assignmentEpochs":[6]}],"standbyTasks":[],"warmupTasks":[],"activeTasksPendingRevocation":[],"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[]}}}',
    ),
    (
        "001600036170700003732d31",
        None,
        '{"key":{"type":22,"data":{"groupId":"app","memberId":"s-1"}},"value":null}',
    ),
    (
        "00170003617070",
        "0000000000000302300206776f726473010102166170702d636f756e742d7265706172746974696f6e010100023102166170702d636f756e742d7265706172746974696f6e0206696e2d2e2a02146170702d636f756e742d6368616e67656c6f6700000000ffff020f636c65616e75702e706f6c69637908636f6d7061637400000102166170702d636f756e742d7265706172746974696f6e000000040003030f636c65616e75702e706f6c6963790764656c657465000d726574656e74696f6e2e6d73032d310000020200000200000300000001000000",
        '{"key":{"type":23,"data":{"groupId":"app"}},"value":{"version":0,"data":{"epoch":0,"subtopologies":[{"subtopologyId":"0","sourceTopics":["words"],"sourceTopicRegex":[],"stateChangelogTopics":[],"repartitionSinkTopics":["app-count-repartition"],"repartitionSourceTopics":[],"copartitionGroups":[]},{"subtopologyId":"1","sourceTopics":["app-count-repartition"],"sourceTopicRegex":["in-.*"],"stateChangelogTopics":[{"name":"app-count-changelog","partitions":0,"replicationFactor":-1,"topicConfigs":[{"key":"cleanup.policy","value":"compact"}]}],"repartitionSinkTopics":[],"repartitionSourceTopics":[{"name":"app-count-repartition","partitions":4,"replicationFactor":3,"topicConfigs":[{"key":"cleanup.policy","value":"delete"},{"key":"retention.ms","value":"-1"}]}],"copartitionGroups":[{"sourceTopics":[0],"sourceTopicRegex":[0],"repartitionSourceTopics":[0,1]}]}]}}}',
    ),
    (
        "00170003617070",
        None,
        '{"key":{"type":23,"data":{"groupId":"app"}},"value":null}',
    ),
]

GOLDEN_SHARE_STATE = [
    (
        "000000027367000102030405060708090a0b0c0d0e0f00000003",
        "000000000002000000010000000000000000000000280000018bcfe568000000018bcfe56809030000000000000028000000000000002c00000100000000000000002d000000000000002d0400050000",
        '{"key":{"type":0,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":3}},"value":{"version":0,"data":{"snapshotEpoch":2,"stateEpoch":1,"leaderEpoch":0,"startOffset":40,"createTimestamp":1700000000000,"writeTimestamp":1700000000009,"stateBatches":[{"firstOffset":40,"lastOffset":44,"deliveryState":0,"deliveryCount":1},{"firstOffset":45,"lastOffset":45,"deliveryState":4,"deliveryCount":5}]}}}',
    ),
    (
        "000000027367f0977bc5552641599d950bd656ad499b00000000",
        "00000000000000000000ffffffffffffffffffffffff0000018bcfe568000000018bcfe56800010100040000000c",
        '{"key":{"type":0,"data":{"groupId":"sg","topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","partition":0}},"value":{"version":0,"data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":-1,"startOffset":-1,"deliveryCompleteCount":12,"createTimestamp":1700000000000,"writeTimestamp":1700000000000,"stateBatches":[]}}}',
    ),
    (
        "000000027367000102030405060708090a0b0c0d0e0f00000004",
        "000000000003000000010000000200000000000000070000018bcfe568000000018bcfe56801010200040000000204020909",
        '{"key":{"type":0,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":4}},"value":{"version":0,"data":{"snapshotEpoch":3,"stateEpoch":1,"leaderEpoch":2,"startOffset":7,"deliveryCompleteCount":2,"createTimestamp":1700000000000,"writeTimestamp":1700000000001,"stateBatches":[]}}}',
    ),
    (
        "000000027367000102030405060708090a0b0c0d0e0f00000003",
        None,
        '{"key":{"type":0,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":3}},"value":null}',
    ),
    (
        "000100027367000102030405060708090a0b0c0d0e0f00000003",
        "00000000000200000000ffffffffffffffff02000000000000002e00000000000000320200010000",
        '{"key":{"type":1,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":3}},"value":{"version":0,"data":{"snapshotEpoch":2,"leaderEpoch":0,"startOffset":-1,"stateBatches":[{"firstOffset":46,"lastOffset":50,"deliveryState":2,"deliveryCount":1}]}}}',
    ),
    (
        "000100027367000102030405060708090a0b0c0d0e0f00000003",
        "0000000000020000000100000000000000330101000400000000",
        '{"key":{"type":1,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":3}},"value":{"version":0,"data":{"snapshotEpoch":2,"leaderEpoch":1,"startOffset":51,"deliveryCompleteCount":0,"stateBatches":[]}}}',
    ),
    (
        "000100027367000102030405060708090a0b0c0d0e0f00000003",
        None,
        '{"key":{"type":1,"data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":3}},"value":null}',
    ),
]


@pytest.mark.parametrize("key, value, printed", GOLDEN, ids=[f"golden-{i}" for i in range(len(GOLDEN))])
def test_matches_kafka_output(key, value, printed):
    rec = decode(bytes.fromhex(key), None if value is None else bytes.fromhex(value))
    assert json.dumps(to_kafka_json(rec), separators=(",", ":")) == printed  # same fields, values and order


@pytest.mark.parametrize(
    "key, value, printed", GOLDEN_SHARE_STATE, ids=[f"golden-state-{i}" for i in range(len(GOLDEN_SHARE_STATE))]
)
def test_share_state_matches_kafka_output(key, value, printed):
    rec = decode_share_state(bytes.fromhex(key), None if value is None else bytes.fromhex(value))
    assert json.dumps(to_kafka_json(rec), separators=(",", ":")) == printed


def test_every_type_and_tombstone_is_in_the_golden_records():
    seen = {(json.loads(p)["key"]["type"], v is None) for _, v, p in GOLDEN}
    assert seen == {(t, tomb) for t in SHARE_TYPES + STREAMS_TYPES for tomb in (False, True)}
    assert {(json.loads(p)["key"]["type"], v is None) for _, v, p in GOLDEN_SHARE_STATE} == {
        (t, tomb) for t in (0, 1) for tomb in (False, True)
    }


def test_hand_built_cases_print_as_kafka_would():
    case = {c[0]: c[3] for c in CASES}
    member = to_kafka_json(case["streams member with endpoint and client tags"])["value"]["data"]
    assert member["userEndpoint"] == {"host": "h.local", "port": 65535}
    assert member["clientTags"] == [{"key": "zone", "value": "a"}]
    # a target assignment's tasks have no epochs; the current assignment prints a written null only
    target = to_kafka_json(case["streams target of a member: tasks without epochs"])["value"]["data"]
    assert target["activeTasks"][0] == {"subtopologyId": "0", "partitions": [0, 1]}
    current = case["streams current assignment: epochs present, absent (Kafka's default []) and null"]
    printed = to_kafka_json(current)["value"]["data"]
    assert printed["activeTasks"] == [
        {"subtopologyId": "0", "partitions": [0, 1], "assignmentEpochs": [5, 4]},
        {"subtopologyId": "1", "partitions": [2]},
    ]
    assert printed["standbyTasks"] == [{"subtopologyId": "1", "partitions": [0], "assignmentEpochs": None}]
    deleting = to_kafka_json(case["share state partition metadata: deleting topics have no partitions"])
    assert deleting["value"]["data"]["deletingTopics"] == [{"topicId": T2, "topicName": "old"}]


# --- robustness: DecodeError or a record, never another exception --------------------

VALID = [(c[1], c[2]) for c in CASES] + [
    (bytes.fromhex(k), None if v is None else bytes.fromhex(v)) for k, v, _ in GOLDEN
]
VALID_STATE = [(c[1], c[2]) for c in STATE_CASES] + [
    (bytes.fromhex(k), None if v is None else bytes.fromhex(v)) for k, v, _ in GOLDEN_SHARE_STATE
]


def _decode_or_error(fn, key, value):
    try:
        rec = fn(key, value)
    except DecodeError as e:
        assert str(e)
        return None
    assert hasattr(rec, "__dataclass_fields__")
    return rec


@pytest.mark.parametrize(
    "fn, key, value",
    [(decode, k, v) for k, v in VALID] + [(decode_share_state, k, v) for k, v in VALID_STATE],
    ids=[f"valid-{i}" for i in range(len(VALID) + len(VALID_STATE))],
)
def test_every_truncation_is_a_decode_error_or_a_record(fn, key, value):
    for cut in range(len(key)):
        _decode_or_error(fn, key[:cut], value)
    for cut in range(len(value or b"")):
        _decode_or_error(fn, key, value[:cut])


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rtype=st.sampled_from(SHARE_TYPES + STREAMS_TYPES + [9, 18, 24]),
    key_tail=st.binary(max_size=30),
    version=st.integers(-1, 2),
    body=st.binary(max_size=200),
)
def test_random_bodies_never_raise_anything_else(rtype, key_tail, version, body):
    _decode_or_error(decode, i16(rtype) + key_tail, i16(version) + body)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rtype=st.integers(-2, 3),
    key_tail=st.binary(max_size=40),
    value=st.one_of(st.none(), st.binary(max_size=120)),
)
def test_random_share_state_records_never_raise_anything_else(rtype, key_tail, value):
    _decode_or_error(decode_share_state, i16(rtype) + key_tail, value)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    case=st.sampled_from([(decode, k, v) for k, v in VALID] + [(decode_share_state, k, v) for k, v in VALID_STATE]),
    data=st.data(),
)
def test_mutated_valid_records_never_raise_anything_else(case, data):
    fn, key, value = case
    value = value or b"\x00\x00"
    at = data.draw(st.integers(0, len(value) - 1))
    byte = data.draw(st.integers(0, 255))
    _decode_or_error(fn, key, value[:at] + bytes([byte]) + value[at + 1 :])


def test_the_tail_folds_share_and_streams_records_into_their_groups_not_consumer_groups():
    state = TailState()
    records = [TailRecord(0, i, 1000 + i, k, v) for i, (k, v) in enumerate(VALID)]
    update = state.apply(records)
    assert update.failed == 0
    assert update.skipped == sum(isinstance(decode(k, v), Skipped) for k, v in VALID)
    assert not state.consumer and not update.generations and not update.rebalances
    groups = {r.group for k, v in VALID if not isinstance(r := decode(k, v), Skipped) and hasattr(r, "group")}
    # a group's tombstone (ShareGroupMetadata / StreamsGroupMetadata) deletes it again
    assert set(state.log_groups.groups) <= groups
