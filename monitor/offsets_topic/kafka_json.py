"""Records rendered as Kafka's own formatters and DumpLogSegments decoders print them (for oracle tests)."""

from __future__ import annotations

import base64
from dataclasses import fields, is_dataclass
from functools import cache

from monitor.offsets_topic.decoder import RECORD_TYPES
from monitor.offsets_topic.records import (
    ZERO_TOPIC_ID,
    ClassicMemberMetadata,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    GroupMember,
    GroupMetadata,
    OffsetCommit,
    Record,
    ShareGroupTargetAssignmentMetadata,
    ShareSnapshot,
    ShareStateRecord,
    ShareTopicPartitions,
    ShareUpdate,
    Skipped,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupTargetAssignmentMetadata,
    TaskIds,
    TopicIdPartitions,
)
from monitor.offsets_topic.share_state import SHARE_STATE_KEY

_NOT_KAFKA = {"record_type", "value_version", "tombstone", "consumer_subscription", "consumer_assignment", "note"}
_VERSIONS = {  # (class, field) -> value versions that carry it (others print nothing)
    (OffsetCommit, "leader_epoch"): range(3, 32767),
    (OffsetCommit, "expire_timestamp"): range(1, 2),
    (GroupMetadata, "current_state_timestamp"): range(2, 32767),
    (GroupMember, "group_instance_id"): range(3, 32767),
    (GroupMember, "rebalance_timeout"): range(1, 32767),
}
_TAGGED_DEFAULTS = {  # tagged fields Kafka prints only when not at their default (a null is printed)
    (OffsetCommit, "topic_id"): (None, ZERO_TOPIC_ID),
    (ConsumerGroupMetadata, "metadata_hash"): (None, 0),
    (ConsumerGroupTargetAssignmentMetadata, "assignment_timestamp"): (None, 0),
    (TopicIdPartitions, "assignment_epochs"): (None,),
    (ConsumerGroupMemberMetadata, "classic_member_metadata"): (ClassicMemberMetadata(0, ()),),
    (ShareGroupTargetAssignmentMetadata, "assignment_timestamp"): (None, 0),
    (StreamsGroupMetadata, "validated_topology_epoch"): (None, -1),
    (StreamsGroupMetadata, "last_assignment_configs"): ((),),
    (StreamsGroupTargetAssignmentMetadata, "assignment_timestamp"): (None, 0),
    (TaskIds, "assignment_epochs"): ((),),
    (ShareSnapshot, "delivery_complete_count"): (None, -1),
    (ShareUpdate, "delivery_complete_count"): (None, -1),
    (ShareTopicPartitions, "partitions"): (None,),  # deleting_topics: the struct has no partitions
}
_NOT_IN = {  # fields a record's sub-structs do not have there, although the dataclass does
    StreamsGroupTargetAssignmentMember: ("assignment_epochs",),
}
_DECLARED_AFTER = {  # tagged fields Kafka declares (and prints) before fields our dataclass puts first
    (ShareSnapshot, "delivery_complete_count"): "start_offset",
    (ShareUpdate, "delivery_complete_count"): "start_offset",
}
_JSON_NAMES = {"regex_version": "version"}


@cache
def _kafka_order(cls) -> tuple[str, ...]:
    names = [f.name for f in fields(cls)]
    for (owner, name), after in _DECLARED_AFTER.items():
        if owner is cls:
            names.remove(name)
            names.insert(names.index(after) + 1, name)
    return tuple(names)


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return _JSON_NAMES.get(name) or head + "".join(w.title() for w in rest)


def _json(value, version: int, skip: tuple[str, ...] = (), hidden: tuple[str, ...] = ()):
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")  # Jackson's binary encoding
    if isinstance(value, tuple):
        return [_json(item, version, (), hidden) for item in value]
    if not is_dataclass(value):
        return value
    cls, out = type(value), {}
    for name in _kafka_order(cls):
        if name in _NOT_KAFKA or name in skip or version not in _VERSIONS.get((cls, name), (version,)):
            continue
        item = getattr(value, name)
        if name not in hidden and item not in _TAGGED_DEFAULTS.get((cls, name), ()):
            out[_json_name(name)] = _json(item, version, (), hidden)
    return out


def _grouped(parts) -> list[dict]:
    """ConsumerProtocol's [{topic, partitions}] from flattened TopicPartitions, topics in first-seen order."""
    topics: dict[str, list[int]] = {}
    for tp in parts:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": ps} for t, ps in topics.items()]


def _user_data(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _protocol_json(member: dict, m: GroupMember) -> dict:
    """Subscription and assignment as DumpLogSegments --offsets-decoder prints them: decoded when possible."""
    s, a = m.consumer_subscription, m.consumer_assignment
    if s is not None:
        sub = {"topics": list(s.topics), "userData": _user_data(s.user_data)}
        if s.version >= 1:
            sub["ownedPartitions"] = _grouped(s.owned_partitions)
        if s.version >= 2:
            sub["generationId"] = s.generation_id
        if s.version >= 3:
            sub["rackId"] = s.rack_id
        member["subscription"] = sub
    if a is not None:
        member["assignment"] = {"assignedPartitions": _grouped(a.partitions), "userData": _user_data(a.user_data)}
    return member


def to_kafka_json(rec: Record | ShareStateRecord, protocols: bool = False) -> dict | None:
    """The record as Kafka's formatters print it, parsed.

    `{"key": {"type", "data"}, "value": {"version", "data"} | None}` with Kafka's
    field names, order and omissions (all but types 0-2 as Kafka's generated
    CoordinatorRecordJsonConverters render them, which is what
    ShareGroupMessageFormatter, ShareGroupStateMessageFormatter and
    `kafka.tools.DumpLogSegments --offsets-decoder` / `--share-group-state-decoder`
    print); None for Skipped, which Kafka does not print either. Lets an oracle
    test compare with Kafka field by field. With `protocols`, classic members'
    subscription and assignment are decoded as DumpLogSegments prints them.
    """
    if isinstance(rec, Skipped):
        return None
    share_state = isinstance(rec, (ShareSnapshot, ShareUpdate))  # its own topic: types 0/1 are not commits
    key_fields = SHARE_STATE_KEY if share_state else RECORD_TYPES[rec.record_type][1]
    group_id = share_state or rec.record_type > 2  # Kafka's generated converters say groupId
    key = {("groupId" if name == "group" and group_id else _json_name(name)): getattr(rec, name) for name in key_fields}
    value = None
    if not rec.tombstone:
        data = _json(rec, rec.value_version, key_fields, _NOT_IN.get(type(rec), ()))
        value = {"version": rec.value_version, "data": data}
    if protocols and value is not None and isinstance(rec, GroupMetadata):
        value["data"]["members"] = [
            _protocol_json(j, m) for j, m in zip(value["data"]["members"], rec.members, strict=True)
        ]
    return {"key": {"type": rec.record_type, "data": key}, "value": value}
