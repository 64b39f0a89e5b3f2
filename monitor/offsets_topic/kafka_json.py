"""Records rendered as Kafka's own Offsets/GroupMetadataMessageFormatter print them (for oracle tests)."""

from __future__ import annotations

import base64
from dataclasses import fields, is_dataclass

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
    Skipped,
    TopicIdPartitions,
)

_NOT_KAFKA = {"record_type", "value_version", "tombstone", "consumer_subscription", "consumer_assignment", "note"}
_VERSIONS = {  # (class, field) -> value versions that carry it (others print nothing)
    (OffsetCommit, "leader_epoch"): range(3, 32767),
    (OffsetCommit, "expire_timestamp"): range(1, 2),
    (GroupMetadata, "current_state_timestamp"): range(2, 32767),
    (GroupMember, "group_instance_id"): range(3, 32767),
    (GroupMember, "rebalance_timeout"): range(1, 32767),
}
_TAGGED_DEFAULTS = {  # tagged fields Kafka prints only when not at their default
    (OffsetCommit, "topic_id"): (None, ZERO_TOPIC_ID),
    (ConsumerGroupMetadata, "metadata_hash"): (None, 0),
    (ConsumerGroupTargetAssignmentMetadata, "assignment_timestamp"): (None, 0),
    (TopicIdPartitions, "assignment_epochs"): (None,),
    (ConsumerGroupMemberMetadata, "classic_member_metadata"): (ClassicMemberMetadata(0, ()),),
}
_JSON_NAMES = {"regex_version": "version"}


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return _JSON_NAMES.get(name) or head + "".join(w.title() for w in rest)


def _json(value, version: int, skip: tuple[str, ...] = ()):
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")  # Jackson's binary encoding
    if isinstance(value, tuple):
        return [_json(item, version) for item in value]
    if not is_dataclass(value):
        return value
    cls, out = type(value), {}
    for f in fields(value):
        if f.name in _NOT_KAFKA or f.name in skip or version not in _VERSIONS.get((cls, f.name), (version,)):
            continue
        item = getattr(value, f.name)
        if item not in _TAGGED_DEFAULTS.get((cls, f.name), ()):
            out[_json_name(f.name)] = _json(item, version)
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


def to_kafka_json(rec: Record, protocols: bool = False) -> dict | None:
    """The record as Kafka's Offsets/GroupMetadataMessageFormatter print it, parsed.

    `{"key": {"type", "data"}, "value": {"version", "data"} | None}` with Kafka's
    field names, order and omissions (KIP-848 types as Kafka's generated
    CoordinatorRecordJsonConverters render them); None for Skipped, which Kafka
    does not print either. Lets an oracle test compare with Kafka field by field.
    With `protocols`, classic members' subscription and assignment are decoded
    as `kafka.tools.DumpLogSegments --offsets-decoder` prints them.
    """
    if isinstance(rec, Skipped):
        return None
    key_fields = RECORD_TYPES[rec.record_type][1]
    key = {
        ("groupId" if name == "group" and rec.record_type > 2 else _json_name(name)): getattr(rec, name)
        for name in key_fields
    }
    value = None if rec.tombstone else {"version": rec.value_version, "data": _json(rec, rec.value_version, key_fields)}
    if protocols and value is not None and isinstance(rec, GroupMetadata):
        value["data"]["members"] = [
            _protocol_json(j, m) for j, m in zip(value["data"]["members"], rec.members, strict=True)
        ]
    return {"key": {"type": rec.record_type, "data": key}, "value": value}
