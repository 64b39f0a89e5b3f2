"""monitor.offsets_topic: every record type and version, built byte by byte here.

The layouts below are written from Kafka 4.3's message JSON with struct.pack, not
with the decoder's own code; GOLDEN holds bytes and formatter output produced by
Kafka 4.3.0's own serializers and Offsets/GroupMetadataMessageFormatter.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_wire import arr, b32, carr, cb, cints, cs, i8, i16, i32, i64, s16, tags, uv

from monitor import offsets_topic as ot
from monitor.models import DecodeError
from monitor.models import TopicPartition as TP
from monitor.offsets_topic import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerAssignment,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerSubscription,
    GroupMember,
    GroupMetadata,
    OffsetCommit,
    PartitionRacks,
    Skipped,
    TopicIdPartitions,
    TopicMetadata,
    decode,
    decoder,
    resolve_topic_ids,
    to_kafka_json,
    topic_id_str,
)

T1, T1_RAW = "AAECAwQFBgcICQoLDA0ODw", bytes(range(16))
T2, T2_RAW = "8Jd7xVUmQVmdlQvWVq1Jmw", bytes.fromhex("f0977bc5552641599d950bd656ad499b")
TS = 1_700_000_000_000


def commit_key(group="g1", topic="orders", partition=3, rtype=1):
    return i16(rtype) + s16(group) + s16(topic) + i32(partition)


def group_key(rtype, group="g1", *more):
    return i16(rtype) + s16(group) + b"".join(s16(m) for m in more)


def subscription(
    v, topics=("orders", "payments"), user_data=b"\x01\x02", owned=(("orders", (0, 1)),), generation=5, rack="rack-a"
):
    out = i16(v) + arr([s16(t) for t in topics]) + b32(user_data)
    if v >= 1:
        out += arr([s16(t) + arr([i32(p) for p in ps]) for t, ps in owned])
    if v >= 2:
        out += i32(generation)
    if v >= 3:
        out += s16(rack)
    return out


def assignment(v, parts=(("orders", (0,)), ("payments", (2,))), user_data=None):
    return i16(v) + arr([s16(t) + arr([i32(p) for p in ps]) for t, ps in parts]) + b32(user_data)


SUB3, ASG3 = subscription(3), assignment(3)
CSUB3 = ConsumerSubscription(3, ("orders", "payments"), b"\x01\x02", (TP("orders", 0), TP("orders", 1)), 5, "rack-a")
CASG3 = ConsumerAssignment(3, (TP("orders", 0), TP("payments", 2)), None)


def classic_member(v, sub=SUB3, asg=ASG3, instance="inst-1"):
    if v >= 4:
        return (
            cs("m-1")
            + cs(instance)
            + cs("c1")
            + cs("/10.0.0.1")
            + i32(300_000)
            + i32(45_000)
            + cb(sub)
            + cb(asg)
            + tags()
        )
    return (
        s16("m-1")
        + (s16(instance) if v >= 3 else b"")
        + s16("c1")
        + s16("/10.0.0.1")
        + (i32(300_000) if v >= 1 else b"")
        + i32(45_000)
        + b32(sub)
        + b32(asg)
    )


def group_value(v, members, protocol_type="consumer", protocol="range", leader="m-1"):
    if v >= 4:
        return (
            i16(v) + cs(protocol_type) + i32(12) + cs(protocol) + cs(leader) + i64(TS + 1000) + carr(members) + tags()
        )
    return (
        i16(v)
        + s16(protocol_type)
        + i32(12)
        + s16(protocol)
        + s16(leader)
        + (i64(TS + 1000) if v >= 2 else b"")
        + arr(members)
    )


def member(v, **kw):
    base = {
        "member_id": "m-1",
        "group_instance_id": "inst-1" if v >= 3 else None,
        "client_id": "c1",
        "client_host": "/10.0.0.1",
        "rebalance_timeout": 300_000 if v >= 1 else None,
        "session_timeout": 45_000,
        "subscription": SUB3,
        "assignment": ASG3,
        "consumer_subscription": CSUB3,
        "consumer_assignment": CASG3,
    }
    return GroupMember(**(base | kw))


def gm(v, members, **kw):
    base = {
        "group": "g1",
        "protocol_type": "consumer",
        "generation": 12,
        "protocol": "range",
        "leader": "m-1",
        "current_state_timestamp": TS + 1000 if v >= 2 else None,
        "members": members,
        "value_version": v,
    }
    return GroupMetadata(**(base | kw))


def oc(**kw):
    return OffsetCommit(**({"group": "g1", "topic": "orders", "partition": 3} | kw))


def cur_partitions(tid_raw, parts, epochs=None):
    return tid_raw + cints(parts) + (tags({0: cints(epochs)}) if epochs is not None else tags())


# --- decoded records, one reason per case ------------------------------------------

CASES = [
    # offset commits (key type 0/1)
    (
        "commit v0",
        commit_key(),
        i16(0) + i64(42) + s16("m") + i64(TS),
        oc(offset=42, metadata="m", commit_timestamp=TS, value_version=0),
    ),
    (
        "commit v1 carries expireTimestamp",
        commit_key(),
        i16(1) + i64(42) + s16("") + i64(TS) + i64(TS + 86_400_000),
        oc(offset=42, metadata="", commit_timestamp=TS, expire_timestamp=TS + 86_400_000, value_version=1),
    ),
    (
        "commit v2 drops expireTimestamp",
        commit_key(),
        i16(2) + i64(42) + s16("") + i64(TS),
        oc(offset=42, metadata="", commit_timestamp=TS, value_version=2),
    ),
    (
        "commit v3 adds leaderEpoch",
        commit_key(),
        i16(3) + i64(42) + i32(7) + s16("meta") + i64(TS),
        oc(offset=42, leader_epoch=7, metadata="meta", commit_timestamp=TS, value_version=3),
    ),
    (
        "commit v3 with non-ASCII metadata",
        commit_key(),
        i16(3) + i64(42) + i32(-1) + s16("café ✓") + i64(TS),
        oc(offset=42, leader_epoch=-1, metadata="café ✓", commit_timestamp=TS, value_version=3),
    ),
    (
        "commit v4 is flexible",
        commit_key(),
        i16(4) + i64(42) + i32(7) + cs("meta") + i64(TS) + tags(),
        oc(offset=42, leader_epoch=7, metadata="meta", commit_timestamp=TS, value_version=4),
    ),
    (
        "commit v4 tagged topicId",
        commit_key(),
        i16(4) + i64(42) + i32(-1) + cs("") + i64(TS) + tags({0: T2_RAW}),
        oc(offset=42, leader_epoch=-1, metadata="", commit_timestamp=TS, topic_id=T2, value_version=4),
    ),
    (
        "commit v4 unknown tag is skipped",
        commit_key(),
        i16(4) + i64(42) + i32(7) + cs("") + i64(TS) + tags({5: b"future", 0: T1_RAW}),
        oc(offset=42, leader_epoch=7, metadata="", commit_timestamp=TS, topic_id=T1, value_version=4),
    ),
    (
        "legacy key type 0",
        commit_key(rtype=0),
        i16(0) + i64(5) + s16("x") + i64(1),
        oc(offset=5, metadata="x", commit_timestamp=1, record_type=0, value_version=0),
    ),
    ("commit tombstone: offset deleted or expired", commit_key(), None, oc(tombstone=True)),
    (
        "empty group and topic names",
        commit_key("", "", 0),
        i16(3) + i64(0) + i32(0) + s16("") + i64(0),
        OffsetCommit("", "", 0, 0, 0, "", 0, value_version=3),
    ),
    # classic group metadata (key type 2)
    *[
        (f"group metadata v{v}", group_key(2), group_value(v, [classic_member(v)]), gm(v, (member(v),)))
        for v in range(5)
    ],
    (
        "group metadata, no members, null protocol and leader",
        group_key(2, "g2"),
        i16(3) + s16("connect") + i32(0) + s16(None) + s16(None) + i64(-1) + arr([]),
        GroupMetadata("g2", "connect", 0, None, None, -1, (), value_version=3),
    ),
    (
        "non-consumer protocol keeps raw bytes",
        group_key(2),
        group_value(3, [classic_member(3, sub=b"\x00\x01cfg", asg=b"\x00\x01x")], protocol_type="connect"),
        gm(
            3,
            (
                member(
                    3,
                    subscription=b"\x00\x01cfg",
                    assignment=b"\x00\x01x",
                    consumer_subscription=None,
                    consumer_assignment=None,
                    note="protocol type 'connect' is not 'consumer': kept as raw bytes",
                ),
            ),
            protocol_type="connect",
        ),
    ),
    (
        "empty assignment while rebalancing",
        group_key(2),
        group_value(3, [classic_member(3, asg=b"")]),
        gm(3, (member(3, assignment=b"", consumer_assignment=None, note="assignment empty"),)),
    ),
    (
        "undecodable subscription is a note, not an error",
        group_key(2),
        group_value(3, [classic_member(3, sub=b"\x00\x00\x00\x00\x00\x09")]),
        gm(
            3,
            (
                member(
                    3,
                    subscription=b"\x00\x00\x00\x00\x00\x09",
                    consumer_subscription=None,
                    note="subscription not decodable: array of 9 items cannot fit in 0 bytes",
                ),
            ),
        ),
    ),
    *[
        (
            f"subscription v{v}",
            group_key(2),
            group_value(3, [classic_member(3, sub=subscription(v))]),
            gm(
                3,
                (
                    member(
                        3,
                        subscription=subscription(v),
                        consumer_subscription=ConsumerSubscription(
                            v,
                            ("orders", "payments"),
                            b"\x01\x02",
                            CSUB3.owned_partitions if v >= 1 else (),
                            5 if v >= 2 else -1,
                            "rack-a" if v >= 3 else None,
                        ),
                    ),
                ),
            ),
        )
        for v in range(3)
    ],
    (
        "subscription v3 with trailing bytes is a note",
        group_key(2),
        group_value(3, [classic_member(3, sub=SUB3 + b"?")]),
        gm(
            3,
            (
                member(
                    3,
                    subscription=SUB3 + b"?",
                    consumer_subscription=None,
                    note="subscription not decodable: 1 trailing bytes after subscription",
                ),
            ),
        ),
    ),
    (
        "negative subscription version is a note",
        group_key(2),
        group_value(3, [classic_member(3, sub=i16(-2) + SUB3[2:], asg=i16(-1))]),
        gm(
            3,
            (
                member(
                    3,
                    subscription=i16(-2) + SUB3[2:],
                    assignment=i16(-1),
                    consumer_subscription=None,
                    consumer_assignment=None,
                    note="subscription not decodable: negative subscription version -2; "
                    "assignment not decodable: negative assignment version -1",
                ),
            ),
        ),
    ),
    (
        "future subscription v4 reads as v3",
        group_key(2),
        group_value(3, [classic_member(3, sub=i16(4) + SUB3[2:] + b"new-field")]),
        gm(
            3,
            (
                member(
                    3,
                    subscription=i16(4) + SUB3[2:] + b"new-field",
                    consumer_subscription=ConsumerSubscription(
                        4,
                        *[
                            getattr(CSUB3, f)
                            for f in ("topics", "user_data", "owned_partitions", "generation_id", "rack_id")
                        ],
                    ),
                ),
            ),
        ),
    ),
    (
        "assignment v0 with user data",
        group_key(2),
        group_value(3, [classic_member(3, asg=assignment(0, user_data=b"ud"))]),
        gm(
            3,
            (
                member(
                    3,
                    assignment=assignment(0, user_data=b"ud"),
                    consumer_assignment=ConsumerAssignment(0, CASG3.partitions, b"ud"),
                ),
            ),
        ),
    ),
    ("group tombstone: group deleted", group_key(2), None, GroupMetadata("g1", tombstone=True)),
    # KIP-848 consumer groups
    ("group epoch", group_key(3, "g3"), i16(0) + i32(9) + tags(), ConsumerGroupMetadata("g3", 9, 0, value_version=0)),
    (
        "group epoch with metadata hash",
        group_key(3, "g3"),
        i16(0) + i32(9) + tags({0: i64(-123456789012)}),
        ConsumerGroupMetadata("g3", 9, -123456789012, value_version=0),
    ),
    ("group epoch tombstone", group_key(3, "g3"), None, ConsumerGroupMetadata("g3", tombstone=True)),
    (
        "partition metadata",
        group_key(4, "g3"),
        i16(0)
        + carr([T1_RAW + cs("orders") + i32(2) + carr([i32(0) + carr([cs("r1"), cs("r2")]) + tags()]) + tags()])
        + tags(),
        ConsumerGroupPartitionMetadata(
            "g3", (TopicMetadata(T1, "orders", 2, (PartitionRacks(0, ("r1", "r2")),)),), value_version=0
        ),
    ),
    (
        "member metadata",
        group_key(5, "g3", "mem-A"),
        i16(0)
        + cs(None)
        + cs("rack-1")
        + cs("cli")
        + cs("/127.0.0.1")
        + carr([cs("orders")])
        + cs(None)
        + i32(60_000)
        + cs("uniform")
        + tags(),
        ConsumerGroupMemberMetadata(
            "g3",
            "mem-A",
            None,
            "rack-1",
            "cli",
            "/127.0.0.1",
            ("orders",),
            None,
            60_000,
            "uniform",
            ClassicMemberMetadata(0, ()),
            value_version=0,
        ),
    ),  # Kafka's default
    (
        "member metadata of a classic-protocol member",
        group_key(5, "g3", "mem-B"),
        i16(0)
        + cs("i-1")
        + cs(None)
        + cs("cli")
        + cs("/127.0.0.1")
        + carr([])
        + cs("ord.*")
        + i32(-1)
        + cs(None)
        + tags({0: i8(1) + i32(45_000) + carr([cs("range") + cb(b"\x00\x03") + tags()]) + tags()}),
        ConsumerGroupMemberMetadata(
            "g3",
            "mem-B",
            "i-1",
            None,
            "cli",
            "/127.0.0.1",
            (),
            "ord.*",
            -1,
            None,
            ClassicMemberMetadata(45_000, (ClassicProtocol("range", b"\x00\x03"),)),
            value_version=0,
        ),
    ),
    (
        "member metadata with an explicitly null classic struct",
        group_key(5, "g3", "mem-C"),
        i16(0)
        + cs(None)
        + cs(None)
        + cs("cli")
        + cs("/h")
        + carr([])
        + cs(None)
        + i32(1)
        + cs(None)
        + tags({0: uv(0)}),  # Kafka reads an unsigned varint marker: 0 = null
        ConsumerGroupMemberMetadata("g3", "mem-C", None, None, "cli", "/h", (), None, 1, None, None, value_version=0),
    ),
    ("member left", group_key(5, "g3", "mem-A"), None, ConsumerGroupMemberMetadata("g3", "mem-A", tombstone=True)),
    (
        "target assignment epoch",
        group_key(6, "g3"),
        i16(0) + i32(9) + tags(),
        ConsumerGroupTargetAssignmentMetadata("g3", 9, 0, value_version=0),
    ),
    (
        "target assignment epoch with timestamp",
        group_key(6, "g3"),
        i16(0) + i32(9) + tags({0: i64(TS)}),
        ConsumerGroupTargetAssignmentMetadata("g3", 9, TS, value_version=0),
    ),
    (
        "target assignment of a member",
        group_key(7, "g3", "mem-A"),
        i16(0) + carr([T1_RAW + cints([0, 1]) + tags(), T2_RAW + cints([]) + tags()]) + tags(),
        ConsumerGroupTargetAssignmentMember(
            "g3", "mem-A", (TopicIdPartitions(T1, (0, 1)), TopicIdPartitions(T2, ())), value_version=0
        ),
    ),
    (
        "current assignment with pending revocation",
        group_key(8, "g3", "mem-A"),
        i16(0)
        + i32(9)
        + i32(8)
        + i8(1)
        + carr([cur_partitions(T1_RAW, [0], epochs=[9])])
        + carr([cur_partitions(T2_RAW, [1, 2])])
        + tags(),
        ConsumerGroupCurrentMemberAssignment(
            "g3",
            "mem-A",
            9,
            8,
            1,
            (TopicIdPartitions(T1, (0,), (9,)),),
            (TopicIdPartitions(T2, (1, 2)),),
            value_version=0,
        ),
    ),
    (
        "current assignment with explicitly null epochs",
        group_key(8, "g3", "mem-A"),
        i16(0) + i32(9) + i32(9) + i8(0) + carr([T1_RAW + cints([3]) + tags({0: cints(None)})]) + carr([]) + tags(),
        ConsumerGroupCurrentMemberAssignment(
            "g3", "mem-A", 9, 9, 0, (TopicIdPartitions(T1, (3,)),), (), value_version=0
        ),
    ),
    (
        "current assignment tombstone",
        group_key(8, "g3", "mem-A"),
        None,
        ConsumerGroupCurrentMemberAssignment("g3", "mem-A", tombstone=True),
    ),
    (
        "regular expression",
        group_key(16, "g3", "ord.*"),
        i16(0) + carr([cs("orders"), cs("orders2")]) + i64(17) + i64(TS) + tags(),
        ConsumerGroupRegularExpression("g3", "ord.*", ("orders", "orders2"), 17, TS, value_version=0),
    ),
    (
        "regular expression tombstone",
        group_key(16, "g3", "ord.*"),
        None,
        ConsumerGroupRegularExpression("g3", "ord.*", tombstone=True),
    ),
    # skipped on purpose: types Kafka 4.3 does not write (share and streams groups: test_offsets_share_streams.py)
    (
        "type 9",
        group_key(9, "s"),
        b"\x00\x00anything",
        Skipped(9, "share-group record type Kafka 4.3 does not write"),
    ),
    ("type 18", group_key(18, "s"), None, Skipped(18, "streams-group record type Kafka 4.3 does not write")),
    ("newer type", group_key(99, "s"), b"\x00\x00", Skipped(99, "record type unknown to Kafka 4.3")),
    (
        "future offset commit version",
        commit_key(),
        i16(5) + b"whatever",
        Skipped(1, "unknown value version 5 of OffsetCommit (known 0-4)", 5),
    ),
    (
        "future group metadata version",
        group_key(2),
        i16(9) + b"\x00",
        Skipped(2, "unknown value version 9 of GroupMetadata (known 0-4)", 9),
    ),
    (
        "future KIP-848 version",
        group_key(6, "g3"),
        i16(1) + i32(9) + tags(),
        Skipped(6, "unknown value version 1 of ConsumerGroupTargetAssignmentMetadata (known 0-0)", 1),
    ),
]


@pytest.mark.parametrize("key, value, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decode(key, value, expected):
    assert decode(key, value) == expected
    assert decode(key, value) == expected  # a second time: offset-commit keys now come from the memo
    assert decode(bytearray(key), None if value is None else memoryview(value)) == expected


ERRORS = [
    ("no key", None, None, "record has no key"),
    ("empty key", b"", None, "key of 0 bytes"),
    ("one-byte key", b"\x00", None, "key of 1 bytes"),
    ("negative record type", i16(-3) + s16("g"), None, "unknown record type -3"),
    ("key cut inside the group", commit_key()[:5], None, "record type 1: truncated"),
    ("key without partition", i16(1) + s16("g") + s16("t"), None, "truncated: 4 bytes needed"),
    ("trailing bytes after the key", commit_key() + b"\x00", None, "1 trailing bytes after the key"),
    ("negative string length", i16(1) + i16(-2) + s16("t") + i32(0), None, "negative string length -2"),
    ("null group", i16(2) + s16(None), None, "null string in a non-nullable field"),
    ("invalid UTF-8 in a topic", i16(1) + s16("g") + i16(2) + b"\xff\xfe" + i32(0), None, "invalid UTF-8"),
    ("value without a version", commit_key(), b"\x00", "truncated: 2 bytes needed at byte 0"),
    ("negative value version", commit_key(), i16(-1) + i64(0), "negative value version -1"),
    ("commit v3 cut short", commit_key(), (i16(3) + i64(42) + i32(7) + s16("") + i64(TS))[:-1], "truncated"),
    (
        "commit v3 with trailing bytes",
        commit_key(),
        i16(3) + i64(42) + i32(7) + s16("") + i64(TS) + b"\x00",
        "1 trailing bytes after the value",
    ),
    (
        "commit v3 metadata longer than the value",
        commit_key(),
        i16(3) + i64(42) + i32(7) + i16(50) + i64(TS),
        "string of 50 bytes",
    ),
    (
        "commit v4 varint longer than 5 bytes",
        commit_key(),
        i16(4) + i64(1) + i32(1) + b"\xff" * 5 + b"\x01",
        "longer than 5",
    ),
    ("commit v4 varint cut short", commit_key(), i16(4) + i64(1) + i32(1) + b"\x80", "truncated unsigned varint"),
    (
        "commit v4 tagged topicId of the wrong size",
        commit_key(),
        i16(4) + i64(1) + i32(1) + cs("") + i64(TS) + tags({0: T1_RAW + b"\x00"}),
        "trailing bytes after tagged field 0",
    ),
    (
        "commit v4 tagged field longer than the value",
        commit_key(),
        i16(4) + i64(1) + i32(1) + cs("") + i64(TS) + uv(1) + uv(0) + uv(200),
        "truncated: 200 bytes needed",
    ),
    (
        "group metadata null subscription",
        group_key(2),
        group_value(3, [classic_member(3, sub=None)]),
        "null bytes in a non-nullable field",
    ),
    (
        "group metadata absurd member count",
        group_key(2),
        i16(3) + s16("consumer") + i32(1) + s16(None) + s16(None) + i64(0) + i32(2_000_000_000),
        "array of 2000000000 items cannot fit",
    ),
    (
        "flexible null where not nullable",
        group_key(5, "g", "m"),
        i16(0) + cs(None) + cs(None) + cs(None),
        "null string in a non-nullable field",
    ),
    (
        "KIP-848 partitions array cut short",
        group_key(7, "g", "m"),
        i16(0) + carr([T1_RAW + uv(3) + i32(0)]),
        "truncated: 8 bytes needed",
    ),
    ("KIP-848 member key missing its member id", group_key(8, "g3"), None, "truncated: 2 bytes needed"),
    (
        "KIP-848 value with trailing bytes",
        group_key(3, "g3"),
        i16(0) + i32(9) + tags() + b"\x00",
        "1 trailing bytes after the value",
    ),
]


@pytest.mark.parametrize("key, value, reason", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_decode_error(key, value, reason):
    with pytest.raises(DecodeError) as info:
        decode(key, value)
    assert reason in str(info.value)
    assert type(info.value) is DecodeError


def forget(key):
    """As if the decoder had never seen `key` (in either generation of its memo)."""
    decoder._OFFSET_KEYS.pop(key, None)
    decoder._OLDER_KEYS.pop(key, None)


def test_fast_path_and_checked_path_agree():
    key = commit_key("fast-group", "fast-topic", 11)
    value = i16(3) + i64(99) + i32(2) + s16("ckpt") + i64(TS)
    forget(key)
    first = decode(key, value)  # checked path, remembers the key
    assert key in decoder._OFFSET_KEYS
    assert (
        decode(key, value) == first == OffsetCommit("fast-group", "fast-topic", 11, 99, 2, "ckpt", TS, value_version=3)
    )
    assert repr(decode(key, value)) == repr(first) and hash(decode(key, value)) == hash(first)


@pytest.mark.parametrize(
    "value",
    [
        i16(4) + i64(99) + i32(-1) + cs("") + i64(TS) + tags({0: T2_RAW}),  # what Kafka 4.3 writes
        i16(4) + i64(99) + i32(7) + cs("") + i64(TS) + tags(),
        i16(4) + i64(99) + i32(7) + cs("") + i64(TS) + tags({0: T2_RAW, 5: b"x"}),  # unusual: checked path
        i16(4) + i64(99) + i32(7) + cs("m") + i64(TS) + tags(),
    ],
    ids=["topic id", "no tags", "unknown tag", "metadata"],
)
def test_v4_fast_path_and_checked_path_agree(value):
    key = commit_key("fast4-group", "fast4-topic", 5)
    forget(key)
    first = decode(key, value)  # checked path, remembers the key
    again = decode(key, value)
    assert again == first and repr(again) == repr(first) and to_kafka_json(again) == to_kafka_json(first)
    assert first.value_version == 4 and first.offset == 99


def fresh_key_memo(monkeypatch, clock=None):
    for name, value in (("_OFFSET_KEYS", {}), ("_OLDER_KEYS", {}), ("_generation_at", 0.0)):
        monkeypatch.setattr(decoder, name, value)
    monkeypatch.setattr(decoder, "_clock", clock or (lambda: 0.0))


def usual_commit(key):
    return decoder.decode_usual_commit(key, i16(3) + i64(1) + i32(1) + s16("") + i64(TS))


def test_offset_key_memo_is_bounded(monkeypatch):
    fresh_key_memo(monkeypatch)
    monkeypatch.setattr(decoder, "_OFFSET_KEYS_MAX", 10)
    for p in range(35):
        decode(commit_key(partition=p), None)
    assert 1 <= len(decoder._OFFSET_KEYS) <= 10 and len(decoder._OLDER_KEYS) <= 10


def test_every_live_key_stays_remembered_past_the_old_bound_of_65536(monkeypatch):
    fresh_key_memo(monkeypatch)
    keys = [commit_key(f"group-{i // 20}", "orders", i % 20) for i in range(70_000)]  # 3,500 groups x 20
    for key in keys:
        decode(key, None)  # first sightings: the checked path
    assert all(usual_commit(key) is not None for key in keys)  # then the fast path for every one


def test_keys_not_committed_for_two_generations_are_forgotten_the_others_kept(monkeypatch):
    now = [0.0]
    fresh_key_memo(monkeypatch, clock=lambda: now[0])
    busy, idle, new, newer = (commit_key(partition=p) for p in range(4))
    decode(busy, None)
    decode(idle, None)
    now[0] += decoder.KEY_GENERATION_S
    decode(new, None)  # a new generation: busy and idle are older now
    assert usual_commit(busy) is not None  # committed again: back in the young generation
    now[0] += decoder.KEY_GENERATION_S
    decode(newer, None)  # and another: idle was not committed for a whole generation
    assert usual_commit(idle) is None
    assert usual_commit(busy) is not None and usual_commit(new) is not None
    assert usual_commit(busy)[:2] == ("g1", ("orders", 0))


def test_records_are_frozen():
    rec = decode(commit_key(), i16(3) + i64(1) + i32(1) + s16("") + i64(1))
    with pytest.raises(AttributeError):
        rec.offset = 2


# --- topic ids ----------------------------------------------------------------------


def test_topic_id_string_form_matches_kafka():
    assert topic_id_str(T1_RAW) == T1 and topic_id_str(T2_RAW) == T2
    assert topic_id_str(bytes(16)) == ot.ZERO_TOPIC_ID


def test_resolve_topic_ids_keeps_unknown_ids_visible():
    parts = (TopicIdPartitions(T1, (0, 1)), TopicIdPartitions(T2, (4,)))
    assert resolve_topic_ids(parts, {T1: "orders"}) == ((TP("orders", 0), TP("orders", 1)), (T2,))
    assert resolve_topic_ids(parts, {T1: "orders", T2: "pay"}) == ((TP("orders", 0), TP("orders", 1), TP("pay", 4)), ())
    assert resolve_topic_ids((), {}) == ((), ())


# --- Kafka's formatter JSON -------------------------------------------------------


def test_to_kafka_json_names_fields_like_kafka():
    rec = decode(commit_key(), i16(1) + i64(42) + s16("") + i64(TS) + i64(TS + 1))
    assert to_kafka_json(rec) == {
        "key": {"type": 1, "data": {"group": "g1", "topic": "orders", "partition": 3}},
        "value": {
            "version": 1,
            "data": {"offset": 42, "metadata": "", "commitTimestamp": TS, "expireTimestamp": TS + 1},
        },
    }
    assert to_kafka_json(decode(group_key(8, "g3", "m"), None)) == {
        "key": {"type": 8, "data": {"groupId": "g3", "memberId": "m"}},
        "value": None,
    }
    assert to_kafka_json(Skipped(9, "share-group record type Kafka 4.3 does not write")) is None


# Produced with Kafka 4.3.0's jars (kafka/libs): generated message classes serialised with
# MessageUtil, then OffsetsMessageFormatter / GroupMetadataMessageFormatter (types 0-2) or
# CoordinatorRecordJsonConverters in the same {"key","value"} shape (KIP-848 types).
GOLDEN = [  # long lines: bytes and JSON exactly as Kafka wrote them
    (
        "00010002673100066f726465727300000003",
        "0000000000000000002a00016d0000018bcfe56800",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":0,"data":{"offset":42,"metadata":"m","commitTimestamp":1700000000000}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        "0001000000000000002a00000000018bcfe568000000018bd50bc400",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":1,"data":{"offset":42,"metadata":"","commitTimestamp":1700000000000,"expireTimestamp":1700086400000}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        "0002000000000000002a00000000018bcfe56800",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":2,"data":{"offset":42,"metadata":"","commitTimestamp":1700000000000}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        "0003000000000000002a0000000700046d6574610000018bcfe56800",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":3,"data":{"offset":42,"leaderEpoch":7,"metadata":"meta","commitTimestamp":1700000000000}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        "0004000000000000002a00000007056d6574610000018bcfe5680000",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":4,"data":{"offset":42,"leaderEpoch":7,"metadata":"meta","commitTimestamp":1700000000000}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        "0004000000000000002affffffff010000018bcfe56800010010f0977bc5552641599d950bd656ad499b",
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":4,"data":{"offset":42,"leaderEpoch":-1,"metadata":"","commitTimestamp":1700000000000,"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw"}}}',
    ),
    (
        "00000002673100066f726465727300000003",
        "000000000000000000050001780000000000000001",
        '{"key":{"type":0,"data":{"group":"g1","topic":"orders","partition":3}},"value":{"version":0,"data":{"offset":5,"metadata":"x","commitTimestamp":1}}}',
    ),
    (
        "00010002673100066f726465727300000003",
        None,
        '{"key":{"type":1,"data":{"group":"g1","topic":"orders","partition":3}},"value":null}',
    ),
    (
        "000200026731",
        "00000008636f6e73756d65720000000c000572616e676500036d2d310000000100036d2d310002633100092f31302e302e302e310000afc80000004200030000000200066f726465727300087061796d656e74730000000201020000000100066f72646572730000000200000000000000010000000500067261636b2d610000002c00030000000200066f7264657273000000010000000000087061796d656e74730000000100000002ffffffff",
        '{"key":{"type":2,"data":{"group":"g1"}},"value":{"version":0,"data":{"protocolType":"consumer","generation":12,"protocol":"range","leader":"m-1","members":[{"memberId":"m-1","clientId":"c1","clientHost":"/10.0.0.1","sessionTimeout":45000,"subscription":"AAMAAAACAAZvcmRlcnMACHBheW1lbnRzAAAAAgECAAAAAQAGb3JkZXJzAAAAAgAAAAAAAAABAAAABQAGcmFjay1h","assignment":"AAMAAAACAAZvcmRlcnMAAAABAAAAAAAIcGF5bWVudHMAAAABAAAAAv////8="}]}}}',
    ),
    (
        "000200026731",
        "000409636f6e73756d65720000000c0672616e6765046d2d310000018bcfe56be802046d2d3107696e73742d310363310a2f31302e302e302e31000493e00000afc84300030000000200066f726465727300087061796d656e74730000000201020000000100066f72646572730000000200000000000000010000000500067261636b2d612d00030000000200066f7264657273000000010000000000087061796d656e74730000000100000002ffffffff0000",
        '{"key":{"type":2,"data":{"group":"g1"}},"value":{"version":4,"data":{"protocolType":"consumer","generation":12,"protocol":"range","leader":"m-1","currentStateTimestamp":1700000001000,"members":[{"memberId":"m-1","groupInstanceId":"inst-1","clientId":"c1","clientHost":"/10.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":"AAMAAAACAAZvcmRlcnMACHBheW1lbnRzAAAAAgECAAAAAQAGb3JkZXJzAAAAAgAAAAAAAAABAAAABQAGcmFjay1h","assignment":"AAMAAAACAAZvcmRlcnMAAAABAAAAAAAIcGF5bWVudHMAAAABAAAAAv////8="}]}}}',
    ),
    (
        "000200026732",
        "00030007636f6e6e65637400000000ffffffffffffffffffffffff00000000",
        '{"key":{"type":2,"data":{"group":"g2"}},"value":{"version":3,"data":{"protocolType":"connect","generation":0,"protocol":null,"leader":null,"currentStateTimestamp":-1,"members":[]}}}',
    ),
    (
        "000300026733",
        "000000000009010008ffffffe34166e5ec",
        '{"key":{"type":3,"data":{"groupId":"g3"}},"value":{"version":0,"data":{"epoch":9,"metadataHash":-123456789012}}}',
    ),
    (
        "000400026733",
        "000002000102030405060708090a0b0c0d0e0f076f726465727300000002020000000003037231037232000000",
        '{"key":{"type":4,"data":{"groupId":"g3"}},"value":{"version":0,"data":{"topics":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","topicName":"orders","numPartitions":2,"partitionMetadata":[{"partition":0,"racks":["r1","r2"]}]}]}}}',
    ),
    (
        "00050002673300056d656d2d42",
        "000004692d310004636c690b2f3132372e302e302e3101066f72642e2affffffff00010015010000afc8020672616e6765070003000000000000",
        '{"key":{"type":5,"data":{"groupId":"g3","memberId":"mem-B"}},"value":{"version":0,"data":{"instanceId":"i-1","rackId":null,"clientId":"cli","clientHost":"/127.0.0.1","subscribedTopicNames":[],"subscribedTopicRegex":"ord.*","rebalanceTimeoutMs":-1,"serverAssignor":null,"classicMemberMetadata":{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"AAMAAAAA"}]}}}}',
    ),
    (
        "000600026733",
        "0000000000090100080000018bcfe56fd0",
        '{"key":{"type":6,"data":{"groupId":"g3"}},"value":{"version":0,"data":{"assignmentEpoch":9,"assignmentTimestamp":1700000002000}}}',
    ),
    (
        "00070002673300056d656d2d41",
        "000002000102030405060708090a0b0c0d0e0f0300000000000000010000",
        '{"key":{"type":7,"data":{"groupId":"g3","memberId":"mem-A"}},"value":{"version":0,"data":{"topicPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,1]}]}}}',
    ),
    (
        "00080002673300056d656d2d41",
        "000000000009000000080002000102030405060708090a0b0c0d0e0f0200000000010005020000000902f0977bc5552641599d950bd656ad499b0300000001000000020000",
        '{"key":{"type":8,"data":{"groupId":"g3","memberId":"mem-A"}},"value":{"version":0,"data":{"memberEpoch":9,"previousMemberEpoch":8,"state":0,"assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0],"assignmentEpochs":[9]}],"partitionsPendingRevocation":[{"topicId":"8Jd7xVUmQVmdlQvWVq1Jmw","partitions":[1,2]}]}}}',
    ),
    (
        "00100002673300056f72642e2a",
        "000003076f7264657273086f72646572733200000000000000110000018bcfe573b800",
        '{"key":{"type":16,"data":{"groupId":"g3","regularExpression":"ord.*"}},"value":{"version":0,"data":{"topics":["orders","orders2"],"version":17,"timestamp":1700000003000}}}',
    ),
]


@pytest.mark.parametrize("key, value, printed", GOLDEN, ids=[f"golden-{i}" for i in range(len(GOLDEN))])
def test_matches_kafka_formatter_output(key, value, printed):
    rec = decode(bytes.fromhex(key), None if value is None else bytes.fromhex(value))
    assert to_kafka_json(rec) == json.loads(printed)
    assert json.dumps(to_kafka_json(rec), separators=(",", ":")) == printed  # same field order too


# --- robustness: DecodeError or a record, never another exception --------------------

VALID = [(c[1], c[2]) for c in CASES] + [
    (bytes.fromhex(k), None if v is None else bytes.fromhex(v)) for k, v, _ in GOLDEN
]


def _decode_or_error(key, value):
    try:
        rec = decode(key, value)
    except DecodeError as e:
        assert str(e)
        return None
    assert hasattr(rec, "__dataclass_fields__")
    return rec


@pytest.mark.parametrize("key, value", VALID, ids=[f"valid-{i}" for i in range(len(VALID))])
def test_every_truncation_is_a_decode_error_or_a_record(key, value):
    for cut in range(len(key)):
        _decode_or_error(key[:cut], value)
    for cut in range(len(value or b"")):
        _decode_or_error(key, value[:cut])


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(key=st.binary(max_size=40), value=st.one_of(st.none(), st.binary(max_size=120)))
def test_random_bytes_never_raise_anything_else(key, value):
    _decode_or_error(key, value)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rtype=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 16]),
    key_tail=st.binary(max_size=30),
    version=st.integers(-1, 5),
    body=st.binary(max_size=200),
)
def test_random_bodies_of_known_types_never_raise_anything_else(rtype, key_tail, version, body):
    _decode_or_error(i16(rtype) + key_tail, i16(version) + body)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(case=st.sampled_from(VALID), data=st.data())
def test_mutated_valid_records_never_raise_anything_else(case, data):
    key, value = case
    value = value or b"\x00\x00"
    at = data.draw(st.integers(0, len(value) - 1))
    byte = data.draw(st.integers(0, 255))
    _decode_or_error(key, value[:at] + bytes([byte]) + value[at + 1 :])


def test_member_metadata_with_a_tagged_null_classic_member_as_kafka_4_3_writes_it():
    # a real record from a Kafka 4.3 broker: tag 0 present with the one-byte marker 0x00 = null
    value = bytes.fromhex(
        "00000000116f7461332d6b69703834382d322d63300b2f3132372e302e302e3102076f74772d613301000493e00001000100"
    )
    rec = decode(group_key(5, "ota3-kip848-2", "+j4qBKY+Tn221KUa2wm48Q"), value)
    # what kafka.tools.DumpLogSegments --offsets-decoder printed for it
    assert to_kafka_json(rec)["value"] == {
        "version": 0,
        "data": {
            "instanceId": None,
            "rackId": None,
            "clientId": "ota3-kip848-2-c0",
            "clientHost": "/127.0.0.1",
            "subscribedTopicNames": ["otw-a3"],
            "subscribedTopicRegex": "",
            "rebalanceTimeoutMs": 300000,
            "serverAssignor": None,
            "classicMemberMetadata": None,
        },
    }
