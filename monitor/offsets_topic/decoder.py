"""Pure decoder of `__consumer_offsets` records (classic, KIP-848, share and streams groups).

Layouts follow Kafka 4.3's message JSON (group-coordinator `common/message/*.json`,
clients `ConsumerProtocol*.json`): key = int16 record type + body; value = int16
version + body; None value = tombstone; flexible versions use unsigned-varint
lengths (N+1, 0 = null) and a tagged-field block closing every struct. No I/O.
Group ids come out as lagmon's stored names (monitor.names), as from the sampler.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import fields
from struct import Struct
from types import MappingProxyType

from monitor.models import DecodeError, TopicPartition, intern_tp
from monitor.names import stored_name
from monitor.offsets_topic.records import (
    SHARE_GROUP_TYPES,
    STREAMS_GROUP_TYPES,
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
    CopartitionGroup,
    Endpoint,
    GroupMember,
    GroupMetadata,
    KeyValue,
    OffsetCommit,
    PartitionRacks,
    Record,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    ShareTopicPartitions,
    Skipped,
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
    TopicMetadata,
)

NO_CLASSIC_MEMBER = ClassicMemberMetadata(0, ())  # Kafka's default when the tagged field is absent

_I8, _I16, _I32, _I64, _U16 = Struct(">b"), Struct(">h"), Struct(">i"), Struct(">q"), Struct(">H")
_V3_HEAD = Struct(">hqih")  # offset commit v3: version, offset, leaderEpoch, metadata length
_V3_EMPTY = Struct(">hqihq")  # ... then commitTimestamp, when the metadata is empty
_V4_EMPTY = Struct(">hqibq")  # offset commit v4 with empty metadata (compact length byte 1), then tags
_TOPIC_IDS: dict[bytes, str] = {}  # raw topic id -> its string: few topics, millions of commits
_TOMBSTONE = {  # an offset commit deleted or expired, less its key
    "offset": None,
    "leader_epoch": None,
    "metadata": None,
    "commit_timestamp": None,
    "expire_timestamp": None,
    "topic_id": None,
    "value_version": None,
    "tombstone": True,
}

_new_object, _set_attr, _new_tuple = object.__new__, object.__setattr__, tuple.__new__


def _frozen(cls, state: dict):
    """Build a frozen dataclass from its complete field dict in one step.

    The generated frozen __init__ pays one object.__setattr__ per field, as much
    time as decoding a whole offset commit; the result is the same instance.
    """
    obj = _new_object(cls)
    _set_attr(obj, "__dict__", state)
    return obj


# --- reader ------------------------------------------------------------------


def topic_id_str(raw: bytes) -> str:
    """Kafka's string form of a Uuid (URL-safe base64, no padding), as Uuid.toString() in Java."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _fixed(st: Struct):
    size, unpack = st.size, st.unpack_from

    def read(self: _Reader) -> int:
        p = self.pos
        if p + size > self.end:
            raise DecodeError(f"truncated: {size} bytes needed at byte {p}, {self.end - p} left")
        self.pos = p + size
        return unpack(self.buf, p)[0]

    return read


class _Reader:
    """Bounds-checked cursor over bytes; `flexible` switches to compact lengths and tagged fields."""

    __slots__ = ("buf", "end", "flexible", "pos")

    def __init__(self, data: bytes, flexible: bool = False, pos: int = 0):
        self.buf, self.pos, self.end, self.flexible = data, pos, len(data), flexible

    int8, int16, int32, int64, uint16 = _fixed(_I8), _fixed(_I16), _fixed(_I32), _fixed(_I64), _fixed(_U16)

    def take(self, n: int) -> int:
        p = self.pos
        if p + n > self.end:
            raise DecodeError(f"truncated: {n} bytes needed at byte {p}, {self.end - p} left")
        self.pos = p + n
        return p

    def uvarint(self) -> int:
        buf, p = self.buf, self.pos
        if p < self.end and (b := buf[p]) < 0x80:  # one byte: nearly every length, count and tag
            self.pos = p + 1
            return b
        value = shift = 0
        while p < self.end:
            b = buf[p]
            p += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = p
                return value
            shift += 7
            if shift > 28:
                raise DecodeError(f"unsigned varint longer than 5 bytes at byte {self.pos}")
        raise DecodeError(f"truncated unsigned varint at byte {self.pos}")

    def length(self, wide: bool, nullable: bool, what: str) -> int | None:
        """Classic: int16 (strings) or int32 (bytes, arrays), -1 = null; flexible: uvarint N+1."""
        if self.flexible:
            p = self.pos
            if p < self.end and 0 < (b := self.buf[p]) < 0x80:  # inlined: a one-byte N+1, not null
                self.pos = p + 1
                return b - 1
            n = self.uvarint() - 1
        else:
            n = self.int32() if wide else self.int16()
        if n >= 0:
            return n
        if n == -1 and nullable:
            return None
        raise DecodeError(f"null {what} in a non-nullable field" if n == -1 else f"negative {what} length {n}")

    def count(self, nullable: bool = False) -> int | None:
        n = self.length(True, nullable, "array")
        if n is not None and n > self.end - self.pos:  # every item takes >= 1 byte
            raise DecodeError(f"array of {n} items cannot fit in {self.end - self.pos} bytes")
        return n

    def string(self, nullable: bool = False) -> str | None:
        buf, p = self.buf, self.pos
        if self.flexible:
            if p < self.end and 0 < (n := buf[p]) < 0x80:  # inlined: a one-byte N+1, not null
                n, p = n - 1, p + 1
            else:
                n = self.length(False, nullable, "string")
                if n is None:
                    return None
                p = self.pos
        elif p + 2 <= self.end and (n := _I16.unpack_from(buf, p)[0]) >= 0:
            p += 2  # inlined common case: strings are most of a group metadata record
        else:
            n = self.length(False, nullable, "string")
            if n is None:
                return None
            p = self.pos
        if p + n > self.end:
            raise DecodeError(f"truncated: string of {n} bytes at byte {p}, {self.end - p} left")
        self.pos = p + n
        try:
            return buf[p : p + n].decode()
        except UnicodeDecodeError:
            raise DecodeError(f"invalid UTF-8 in the string at byte {p}") from None

    def bytes(self, nullable: bool = False) -> bytes | None:
        n = self.length(True, nullable, "bytes")
        return None if n is None else self.buf[self.take(n) : self.pos]

    def uuid(self) -> str:
        return topic_id_str(self.buf[self.take(16) : self.pos])

    def array(self, item, nullable: bool = False) -> tuple | None:
        n = self.count(nullable)
        return None if n is None else tuple([item(self) for _ in range(n)])

    def int32s(self, nullable: bool = False) -> tuple[int, ...] | None:
        n = self.length(True, nullable, "array")
        if n is None:
            return None
        p = self.take(4 * n)
        st = _INT32S.get(n) or (_INT32S.setdefault(n, Struct(f">{n}i")) if n < 1024 else Struct(f">{n}i"))
        return st.unpack_from(self.buf, p)

    def tags(self, known: Mapping | None = None) -> Mapping:
        """A tagged-field block: decode the `known` tags, skip the others (forward compatible)."""
        if not self.flexible:
            return _NO_TAGS
        p = self.pos
        if p < self.end and self.buf[p] == 0:  # inlined: no tagged fields, as in most structs
            self.pos = p + 1
            return _NO_TAGS
        found: dict = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            p = self.take(size)
            if known and tag in known:
                sub = _Reader(self.buf[p : p + size], True)
                found[tag] = known[tag](sub)
                sub.done(f"tagged field {tag}")
        return found

    def done(self, what: str) -> None:
        if self.pos != self.end:
            raise DecodeError(f"{self.end - self.pos} trailing bytes after {what}")


_INT32S: dict[int, Struct] = {}
_NO_TAGS: Mapping = MappingProxyType({})


# --- value bodies: each returns the dataclass's keyword arguments ----------------


def _offset_commit_value(r: _Reader, v: int) -> dict:
    out = {
        "offset": r.int64(),
        "leader_epoch": r.int32() if v >= 3 else None,
        "metadata": r.string(),
        "commit_timestamp": r.int64(),
    }
    if v == 1:
        out["expire_timestamp"] = r.int64()
    out["topic_id"] = r.tags({0: _Reader.uuid}).get(0)
    return out


def _topic_partitions(r: _Reader) -> tuple[TopicPartition, ...]:
    """ConsumerProtocol []{Topic, []Partitions}, flattened to TopicPartition."""
    out: list[TopicPartition] = []
    for _ in range(r.count()):
        topic = r.string()
        out += [_new_tuple(TopicPartition, (topic, p)) for p in r.int32s()]  # skips NamedTuple's slow __new__
    return tuple(out)


def _subscription(data: bytes) -> ConsumerSubscription:
    r = _Reader(data)
    v = r.int16()
    if v < 0:
        raise DecodeError(f"negative subscription version {v}")
    state = {
        "version": v,
        "topics": tuple([r.string() for _ in range(r.count())]),
        "user_data": r.bytes(True),
        "owned_partitions": _topic_partitions(r) if v >= 1 else (),
        "generation_id": r.int32() if v >= 2 else -1,
        "rack_id": r.string(True) if v >= 3 else None,
    }
    if v <= 3:  # Kafka reads newer versions with the v3 layout and ignores what follows
        r.done("subscription")
    return _frozen(ConsumerSubscription, state)


def _assignment(data: bytes) -> ConsumerAssignment:
    r = _Reader(data)
    v = r.int16()
    if v < 0:
        raise DecodeError(f"negative assignment version {v}")
    state = {"version": v, "partitions": _topic_partitions(r), "user_data": r.bytes(True)}
    if v <= 3:
        r.done("assignment")
    return _frozen(ConsumerAssignment, state)


def _protocol_bytes(data: bytes, what: str, parse, notes: list):
    """Client-written bytes: failing to read them is a note, not a lost group record."""
    if not data:
        notes.append(f"{what} empty")
        return None
    try:
        return parse(data)
    except DecodeError as e:
        notes.append(f"{what} not decodable: {e}")
        return None


def _group_member(r: _Reader, v: int, protocol_type: str) -> GroupMember:
    state = {
        "member_id": r.string(),
        "group_instance_id": r.string(True) if v >= 3 else None,
        "client_id": r.string(),
        "client_host": r.string(),
        "rebalance_timeout": r.int32() if v >= 1 else None,
        "session_timeout": r.int32(),
        "subscription": r.bytes(),
        "assignment": r.bytes(),
    }
    r.tags()
    notes: list[str] = []
    if protocol_type == "consumer":
        state["consumer_subscription"] = _protocol_bytes(state["subscription"], "subscription", _subscription, notes)
        state["consumer_assignment"] = _protocol_bytes(state["assignment"], "assignment", _assignment, notes)
    else:
        state["consumer_subscription"] = state["consumer_assignment"] = None
        notes.append(f"protocol type {protocol_type!r} is not 'consumer': kept as raw bytes")
    state["note"] = "; ".join(notes) or None
    return _frozen(GroupMember, state)


def _group_metadata_value(r: _Reader, v: int) -> dict:
    out = {"protocol_type": r.string(), "generation": r.int32(), "protocol": r.string(True), "leader": r.string(True)}
    if v >= 2:
        out["current_state_timestamp"] = r.int64()
    out["members"] = r.array(lambda r: _group_member(r, v, out["protocol_type"]))
    r.tags()
    return out


def _struct(fn):
    """A flexible struct: its fields via `fn`, then its (skipped) tagged fields."""

    def read(r: _Reader):
        value = fn(r)
        r.tags()
        return value

    return read


def _body(tagged: Mapping[int, tuple[str, object, object]] | None = None, **readers):
    """A flexible value whose fields are read in order, then its tagged fields.

    `tagged` maps a tag to (field, reader, Kafka's default): an absent tag reads as
    the default Kafka's generated class holds, so a record means the same whether
    the broker wrote the default or left it out.
    """
    known = {tag: read for tag, (_, read, _) in (tagged or {}).items()}

    def body(r: _Reader, v: int) -> dict:
        out = {name: read(r) for name, read in readers.items()}
        found = r.tags(known)
        for tag, (name, _, default) in (tagged or {}).items():
            out[name] = found.get(tag, default)
        return out

    return body


def _epoch_body(epoch: str, tagged_int64: str):
    def body(r: _Reader, v: int) -> dict:
        return {epoch: r.int32(), tagged_int64: r.tags({0: _Reader.int64}).get(0, 0)}

    return body


def _nullable_struct(fn):
    # Kafka's generated read(): an unsigned varint marker, 0 = null (Kafka 4.3 writes a tagged
    # null ClassicMemberMetadata as tag 0, one byte 0x00), > 0 = the struct follows
    return lambda r: None if r.uvarint() == 0 else fn(r)


def _optional_struct(fn):
    # a nullable struct that is not tagged: Kafka's generated read() takes an int8 marker, < 0 = null
    return lambda r: None if r.int8() < 0 else fn(r)


def _strings(r: _Reader) -> tuple[str, ...]:
    return r.array(_Reader.string)


def _nullable_string(r: _Reader) -> str | None:
    return r.string(True)


def _array(item):
    return lambda r: r.array(item)


_EPOCHS_TAG = {0: lambda r: r.int32s(True)}


def _member_partitions(r: _Reader) -> TopicIdPartitions:
    topic_id, partitions = r.uuid(), r.int32s()
    return TopicIdPartitions(topic_id, partitions, r.tags({0: lambda s: s.int32s(True)}).get(0))


_racks = _struct(lambda r: PartitionRacks(r.int32(), _strings(r)))
_topic_metadata = _struct(lambda r: TopicMetadata(r.uuid(), r.string(), r.int32(), r.array(_racks)))
_classic_protocol = _struct(lambda r: ClassicProtocol(r.string(), r.bytes()))
_classic_member = _nullable_struct(_struct(lambda r: ClassicMemberMetadata(r.int32(), r.array(_classic_protocol))))
_target_partitions = _struct(
    lambda r: _frozen(TopicIdPartitions, {"topic_id": r.uuid(), "partitions": r.int32s(), "assignment_epochs": None})
)
_key_value = _struct(lambda r: _frozen(KeyValue, {"key": r.string(), "value": r.string()}))
_endpoint = _optional_struct(_struct(lambda r: Endpoint(r.string(), r.uint16())))
_share_topic_partitions = _struct(lambda r: ShareTopicPartitions(r.uuid(), r.string(), r.int32s()))
_share_topic = _struct(lambda r: ShareTopicPartitions(r.uuid(), r.string()))
_target_tasks = _struct(
    lambda r: _frozen(TaskIds, {"subtopology_id": r.string(), "partitions": r.int32s(), "assignment_epochs": None})
)
_topic_info = _struct(lambda r: TopicInfo(r.string(), r.int32(), r.int16(), r.array(_key_value)))
_int16s = _array(_Reader.int16)
_copartition = _struct(lambda r: CopartitionGroup(_int16s(r), _int16s(r), _int16s(r)))
_subtopology = _struct(
    lambda r: Subtopology(
        r.string(),
        _strings(r),
        _strings(r),
        r.array(_topic_info),
        _strings(r),
        r.array(_topic_info),
        r.array(_copartition),
    )
)


def _member_tasks(r: _Reader) -> TaskIds:
    state = {"subtopology_id": r.string(), "partitions": r.int32s()}
    # tagged epochs: absent = Kafka's default (an empty list), a null is written explicitly
    state["assignment_epochs"] = r.tags(_EPOCHS_TAG).get(0, ())
    return _frozen(TaskIds, state)


_MEMBER_EPOCHS = {"member_epoch": _Reader.int32, "previous_member_epoch": _Reader.int32, "state": _Reader.int8}


def _member_metadata_value(r: _Reader, v: int) -> dict:
    out = {
        "instance_id": r.string(True),
        "rack_id": r.string(True),
        "client_id": r.string(),
        "client_host": r.string(),
        "subscribed_topic_names": _strings(r),
        "subscribed_topic_regex": r.string(True),
        "rebalance_timeout_ms": r.int32(),
        "server_assignor": r.string(True),
    }
    # Kafka's default for this tagged field is an empty struct, not null: absent means that
    # default, and a null is written explicitly (marker 0), which Kafka's JSON then prints
    out["classic_member_metadata"] = r.tags({0: _classic_member}).get(0, NO_CLASSIC_MEMBER)
    return out


# The same reader and builders for the share coordinator's topic (share_state.py): public
# names, because another module depends on them.
Reader, flexible_body, flexible_struct, array_of, frozen = _Reader, _body, _struct, _array, _frozen


# --- dispatch ----------------------------------------------------------------

_OFFSET_KEY = ("group", "topic", "partition")
# record type -> (class, key fields, value body, highest known value version, first flexible version)
RECORD_TYPES = {
    0: (OffsetCommit, _OFFSET_KEY, _offset_commit_value, 4, 4),
    1: (OffsetCommit, _OFFSET_KEY, _offset_commit_value, 4, 4),
    2: (GroupMetadata, ("group",), _group_metadata_value, 4, 4),
    3: (ConsumerGroupMetadata, ("group",), _epoch_body("epoch", "metadata_hash"), 0, 0),
    4: (ConsumerGroupPartitionMetadata, ("group",), _body(topics=lambda r: r.array(_topic_metadata)), 0, 0),
    5: (ConsumerGroupMemberMetadata, ("group", "member_id"), _member_metadata_value, 0, 0),
    6: (
        ConsumerGroupTargetAssignmentMetadata,
        ("group",),
        _epoch_body("assignment_epoch", "assignment_timestamp"),
        0,
        0,
    ),
    7: (
        ConsumerGroupTargetAssignmentMember,
        ("group", "member_id"),
        _body(topic_partitions=lambda r: r.array(_target_partitions)),
        0,
        0,
    ),
    8: (
        ConsumerGroupCurrentMemberAssignment,
        ("group", "member_id"),
        _body(
            member_epoch=_Reader.int32,
            previous_member_epoch=_Reader.int32,
            state=_Reader.int8,
            assigned_partitions=lambda r: r.array(_member_partitions),
            partitions_pending_revocation=lambda r: r.array(_member_partitions),
        ),
        0,
        0,
    ),
    16: (
        ConsumerGroupRegularExpression,
        ("group", "regular_expression"),
        _body(topics=_strings, regex_version=_Reader.int64, timestamp=_Reader.int64),
        0,
        0,
    ),
    # share groups (KIP-932)
    10: (
        ShareGroupMemberMetadata,
        ("group", "member_id"),
        _body(
            rack_id=_nullable_string,
            client_id=_Reader.string,
            client_host=_Reader.string,
            subscribed_topic_names=_strings,
        ),
        0,
        0,
    ),
    11: (ShareGroupMetadata, ("group",), _body(epoch=_Reader.int32, metadata_hash=_Reader.int64), 0, 0),
    12: (
        ShareGroupTargetAssignmentMetadata,
        ("group",),
        _epoch_body("assignment_epoch", "assignment_timestamp"),
        0,
        0,
    ),
    13: (
        ShareGroupTargetAssignmentMember,
        ("group", "member_id"),
        _body(topic_partitions=_array(_target_partitions)),
        0,
        0,
    ),
    14: (
        ShareGroupCurrentMemberAssignment,
        ("group", "member_id"),
        _body(**_MEMBER_EPOCHS, assigned_partitions=_array(_target_partitions)),
        0,
        0,
    ),
    15: (
        ShareGroupStatePartitionMetadata,
        ("group",),
        _body(
            initializing_topics=_array(_share_topic_partitions),
            initialized_topics=_array(_share_topic_partitions),
            deleting_topics=_array(_share_topic),
        ),
        0,
        0,
    ),
    # streams groups (KIP-1071)
    17: (
        StreamsGroupMetadata,
        ("group",),
        _body(
            {
                0: ("validated_topology_epoch", _Reader.int32, -1),
                1: ("last_assignment_configs", lambda r: r.array(_key_value, True), ()),
            },
            epoch=_Reader.int32,
            metadata_hash=_Reader.int64,
        ),
        0,
        0,
    ),
    19: (
        StreamsGroupMemberMetadata,
        ("group", "member_id"),
        _body(
            instance_id=_nullable_string,
            rack_id=_nullable_string,
            client_id=_Reader.string,
            client_host=_Reader.string,
            rebalance_timeout_ms=_Reader.int32,
            topology_epoch=_Reader.int32,
            process_id=_Reader.string,
            user_endpoint=_endpoint,
            client_tags=_array(_key_value),
        ),
        0,
        0,
    ),
    20: (
        StreamsGroupTargetAssignmentMetadata,
        ("group",),
        _epoch_body("assignment_epoch", "assignment_timestamp"),
        0,
        0,
    ),
    21: (
        StreamsGroupTargetAssignmentMember,
        ("group", "member_id"),
        _body(
            active_tasks=_array(_target_tasks),
            standby_tasks=_array(_target_tasks),
            warmup_tasks=_array(_target_tasks),
        ),
        0,
        0,
    ),
    22: (
        StreamsGroupCurrentMemberAssignment,
        ("group", "member_id"),
        _body(
            **_MEMBER_EPOCHS,
            **{
                name: _array(_member_tasks)
                for name in (
                    "active_tasks",
                    "standby_tasks",
                    "warmup_tasks",
                    "active_tasks_pending_revocation",
                    "standby_tasks_pending_revocation",
                    "warmup_tasks_pending_revocation",
                )
            },
        ),
        0,
        0,
    ),
    23: (
        StreamsGroupTopology,
        ("group",),
        _body(epoch=_Reader.int32, subtopologies=_array(_subtopology)),
        0,
        0,
    ),
}
_DEFAULTS = {cls: {f.name: f.default for f in fields(cls)} for cls, *_ in RECORD_TYPES.values()}
# The topic is compacted by key and consumers commit every few seconds, so the same
# offset-commit keys come back all the time: remember their decoded form, in two
# generations. Keys go into the young one; a key found only in the older one moves back.
# A key first seen after KEY_GENERATION_S (or with the young one full) starts a new
# generation and the older one is dropped: what was not committed for 10-20 minutes is
# forgotten, and every live key stays, however many (a bound of 65,536 keys, cleared
# when full, decoded 100,000 busy group-partitions the slow way: the tail fell behind).
OffsetKey = tuple[str, str, int, TopicPartition]  # group, topic, partition, and the one TopicPartition
_OFFSET_KEYS: dict[bytes, OffsetKey] = {}  # the young generation: the hot paths read it inline
_OLDER_KEYS: dict[bytes, OffsetKey] = {}
KEY_GENERATION_S = 600.0
_OFFSET_KEYS_MAX = 1 << 18  # a flood of new keys starts a new generation sooner (each entry ~250 bytes)
_clock = time.monotonic
_generation_at = _clock()


def _remember(key: bytes, values: tuple[str, str, int]) -> None:
    global _OFFSET_KEYS, _OLDER_KEYS, _generation_at
    now = _clock()
    if now - _generation_at >= KEY_GENERATION_S or len(_OFFSET_KEYS) >= _OFFSET_KEYS_MAX:
        _OLDER_KEYS, _OFFSET_KEYS, _generation_at = _OFFSET_KEYS, {}, now
    # a group's and a topic's name once for all their partitions' keys, and the one TopicPartition
    _OFFSET_KEYS[key] = (sys.intern(values[0]), sys.intern(values[1]), values[2], intern_tp(values[1], values[2]))


def _recall(key: bytes) -> OffsetKey | None:
    """A key the young generation does not hold: from the older one, moved back to the young."""
    values = _OLDER_KEYS.pop(key, None)
    if values is not None:
        _OFFSET_KEYS[key] = values
    return values


def _decode_checked(rtype: int, key: bytes, value: bytes | None) -> Record:
    """Every known record type through the checked reader, with precise reasons."""
    cls, key_fields, body, highest, flexible_from = RECORD_TYPES[rtype]
    r = _Reader(key, pos=2)
    key_values = tuple([r.int32() if name == "partition" else r.string() for name in key_fields])
    r.done("the key")
    if key_values[0] != (name := stored_name(key_values[0])):  # every key starts with the group id
        key_values = (name, *key_values[1:])
    state = dict(zip(key_fields, key_values, strict=True))
    if rtype <= 1:
        state["record_type"] = rtype
        _remember(key, key_values)
    state = read_value(rtype, cls, state, value, body, highest, flexible_from)
    if not isinstance(state, dict):
        return state
    defaults = _DEFAULTS[cls]
    return _frozen(cls, state if len(state) == len(defaults) else defaults | state)


def read_value(rtype: int, cls, state: dict, value: bytes | None, body, highest: int, flexible_from: int):
    """The value's fields into the key's `state`, with value_version and tombstone; a tombstone, or a
    value version newer than `highest` (Skipped), is returned as the record itself."""
    if value is None:
        return cls(**state, tombstone=True)
    r = _Reader(value)
    v = r.int16()
    if v < 0:
        raise DecodeError(f"negative value version {v}")
    if v > highest:
        return Skipped(rtype, f"unknown value version {v} of {cls.__name__} (known 0-{highest})", v)
    r.flexible = v >= flexible_from
    state.update(body(r, v))
    r.done("the value")
    state["value_version"], state["tombstone"] = v, False
    return state


def checked_input(key, value) -> tuple[bytes, bytes | None, int]:
    """(key, value, record type) as bytes from what the client handed over; DecodeError for a key without a type."""
    if key is None:
        raise DecodeError("record has no key")
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)
    if len(key) < 2:
        raise DecodeError(f"key of {len(key)} bytes is shorter than its 2-byte record type")
    return key, value, _I16.unpack_from(key)[0]


def decode(key: bytes, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record; raises DecodeError and nothing else.

    Offset commits v3 and v4 (what brokers write: nearly all of the topic; Kafka 4
    writes v4 with the topic id) whose key was seen before take a fast path: one
    dict lookup for the key, one precompiled Struct for the value. Everything else,
    including a key's first sighting, goes through the checked reader, so error
    reasons stay precise.
    """
    key, value, rtype = checked_input(key, value)
    if (rtype == 1 or rtype == 0) and (cached := _OFFSET_KEYS.get(key) or _recall(key)) is not None:
        state = None
        if value is None:
            state = {**_TOMBSTONE, "group": cached[0], "topic": cached[1], "partition": cached[2], "record_type": rtype}
        elif (usual := _usual_commit_value(value)) is not None:
            offset, epoch, metadata, timestamp, version, topic_id = usual
            state = {
                "group": cached[0],
                "topic": cached[1],
                "partition": cached[2],
                "offset": offset,
                "leader_epoch": epoch,
                "metadata": metadata,
                "commit_timestamp": timestamp,
                "expire_timestamp": None,
                "topic_id": topic_id,
                "record_type": rtype,
                "value_version": version,
                "tombstone": False,
            }
        if state is not None:
            rec = _new_object(OffsetCommit)  # what _frozen does, inlined on the hottest path
            _set_attr(rec, "__dict__", state)
            return rec
    if rtype in RECORD_TYPES:
        try:
            return _decode_checked(rtype, key, value)
        except DecodeError as e:
            raise DecodeError(f"record type {rtype}: {e}") from None
    if rtype < 0:
        raise DecodeError(f"unknown record type {rtype}")
    # gaps and newer types: a future broker's records must not stop the tail
    if rtype in SHARE_GROUP_TYPES:
        return Skipped(rtype, "share-group record type Kafka 4.3 does not write")
    if rtype in STREAMS_GROUP_TYPES:
        return Skipped(rtype, "streams-group record type Kafka 4.3 does not write")
    return Skipped(rtype, "record type unknown to Kafka 4.3")


def decode_usual_commit(key: bytes | None, value: bytes | None) -> tuple[str, TopicPartition, int, int, int] | None:
    """(group, topic-partition, offset, leader_epoch, commit_timestamp) of an offset commit as brokers
    write nearly all of them (see `decode`'s fast path) whose key was seen before; None for any other
    record, which `decode` reads. No record object is made: 20,000 a second come this way."""
    if type(key) is not bytes or value is None or (cached := _OFFSET_KEYS.get(key) or _recall(key)) is None:
        return None
    usual = _usual_commit_value(value if type(value) is bytes else bytes(value))
    return None if usual is None else (cached[0], cached[3], usual[0], usual[1], usual[3])


def _usual_commit_value(value: bytes) -> tuple[int, int, str, int, int, str | None] | None:
    """(offset, leader_epoch, metadata, commit_timestamp, value version, topic id) of an offset commit
    value v3 (ASCII metadata or none) or v4 (no metadata; no tag or only the topic id); None for
    any other, which the checked reader judges."""
    n = len(value)
    if value[:2] == b"\x00\x03":
        if n == 24:  # the usual commit: empty metadata, one unpack for the whole value
            _, offset, epoch, mlen, timestamp = _V3_EMPTY.unpack_from(value)
            return (offset, epoch, "", timestamp, 3, None) if mlen == 0 else None
        if n > 24:
            _, offset, epoch, mlen = _V3_HEAD.unpack_from(value)
            raw = value[16 : 16 + mlen]
            if mlen > 0 and 24 + mlen == n and raw.isascii():
                return offset, epoch, raw.decode("ascii"), _I64.unpack_from(value, 16 + mlen)[0], 3, None
        return None
    if value[:2] == b"\x00\x04" and n >= 24 and value[14] == 1:
        # v4 (Kafka 4.x), empty metadata: no tags, or only tag 0 = a 16-byte topic id
        if n == 24 and value[23] == 0:
            topic_id = None
        elif n == 42 and value[23:26] == b"\x01\x00\x10":
            raw = value[26:42]
            topic_id = _TOPIC_IDS.get(raw) or _TOPIC_IDS.setdefault(raw, topic_id_str(raw))
        else:
            return None
        _, offset, epoch, _, timestamp = _V4_EMPTY.unpack_from(value)
        return offset, epoch, "", timestamp, 4, topic_id
    return None


# --- helpers for callers and oracle tests --------------------------------------


def resolve_topic_ids(
    parts: Iterable[TopicIdPartitions], names: Mapping[str, str]
) -> tuple[tuple[TopicPartition, ...], tuple[str, ...]]:
    """Map KIP-848 topic ids to names with the caller's {topic_id: name}.

    Returns (named partitions, ids missing from `names`): a deleted or not yet
    seen topic stays visible instead of silently vanishing.
    """
    named: list[TopicPartition] = []
    unknown: list[str] = []
    for tp in parts:
        name = names.get(tp.topic_id)
        if name is None:
            unknown.append(tp.topic_id)
        else:
            named += [TopicPartition(name, p) for p in tp.partitions]
    return tuple(named), tuple(unknown)
