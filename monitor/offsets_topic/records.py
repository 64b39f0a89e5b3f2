"""The records the group coordinator writes to `__consumer_offsets`, as frozen dataclasses.

Fields are Kafka's, snake_cased and in Kafka's order; None means null or "not in
this version" (Kafka prints no such field), which lets kafka_json render what
Kafka's formatters print. No slots, so the decoder's hot path can build them in
one step (see decoder._frozen).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.models import TopicPartition

SHARE_GROUP_TYPES = range(9, 16)
STREAMS_GROUP_FIRST_TYPE = 17
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


# --- records (frozen; no slots so the hot path can build them in one step, see _frozen)


@dataclass(frozen=True)
class Skipped:
    """Not decoded on purpose (share/streams groups, future versions): count it, move on."""

    record_type: int
    reason: str
    value_version: int | None = None


@dataclass(frozen=True)
class OffsetCommit:
    """Key type 0/1: a committed offset; a tombstone means deleted or expired."""

    group: str
    topic: str
    partition: int
    offset: int | None = None
    leader_epoch: int | None = None  # v3+
    metadata: str | None = None
    commit_timestamp: int | None = None
    expire_timestamp: int | None = None  # v1 only
    topic_id: str | None = None  # v4+ tagged field, when the broker wrote one
    record_type: int = 1
    value_version: int | None = None
    tombstone: bool = False


@dataclass(frozen=True)
class ConsumerSubscription:
    """ConsumerProtocolSubscription v0-v3 (newer versions read as v3, as Kafka does)."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


@dataclass(frozen=True)
class ConsumerAssignment:
    """ConsumerProtocolAssignment v0-v3."""

    version: int
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


@dataclass(frozen=True)
class GroupMember:
    """A classic member: raw protocol bytes always, consumer_* when decodable."""

    member_id: str
    group_instance_id: str | None = None  # v3+
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout: int | None = None  # v1+
    session_timeout: int = 0
    subscription: bytes = b""
    assignment: bytes = b""
    consumer_subscription: ConsumerSubscription | None = None
    consumer_assignment: ConsumerAssignment | None = None
    note: str | None = None  # why a consumer_* field is None


@dataclass(frozen=True)
class GroupMetadata:
    """Key type 2: a classic group's state; a new generation means a completed rebalance."""

    group: str
    protocol_type: str | None = None
    generation: int | None = None
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None  # v2+
    members: tuple[GroupMember, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 2


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """Key type 3: KIP-848 group epoch, bumped on every membership or subscription change."""

    group: str
    epoch: int | None = None
    metadata_hash: int | None = None  # tagged (4.1+); 0 when absent
    value_version: int | None = None
    tombstone: bool = False
    record_type = 3


@dataclass(frozen=True)
class PartitionRacks:
    partition: int
    racks: tuple[str, ...]


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionRacks, ...] = ()


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadata:
    """Key type 4: subscribed topics' metadata (superseded by metadata_hash in 4.1)."""

    group: str
    topics: tuple[TopicMetadata, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 4


@dataclass(frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(frozen=True)
class ConsumerGroupMemberMetadata:
    """Key type 5: a KIP-848 member joined or changed; a tombstone means it left."""

    group: str
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int | None = None
    server_assignor: str | None = None
    # the member speaks the classic protocol; None = written as null; absent = ClassicMemberMetadata(0, ())
    classic_member_metadata: ClassicMemberMetadata | None = None
    value_version: int | None = None
    tombstone: bool = False
    record_type = 5


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadata:
    """Key type 6: the epoch of the target assignment the coordinator computed."""

    group: str
    assignment_epoch: int | None = None
    assignment_timestamp: int | None = None  # tagged (4.3+); 0 when absent
    value_version: int | None = None
    tombstone: bool = False
    record_type = 6


@dataclass(frozen=True)
class TopicIdPartitions:
    """Partitions of one topic named by id (map ids with resolve_topic_ids)."""

    topic_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None  # tagged; current assignment only


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMember:
    """Key type 7: what the assignor wants one member to own."""

    group: str
    member_id: str
    topic_partitions: tuple[TopicIdPartitions, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 7


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignment:
    """Key type 8: what one member owns now, and what it still has to revoke."""

    group: str
    member_id: str
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    state: int | None = None  # see MEMBER_STATES
    assigned_partitions: tuple[TopicIdPartitions, ...] = ()
    partitions_pending_revocation: tuple[TopicIdPartitions, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 8


@dataclass(frozen=True)
class ConsumerGroupRegularExpression:
    """Key type 16: the topics one subscribed regular expression resolved to."""

    group: str
    regular_expression: str
    topics: tuple[str, ...] = ()
    regex_version: int | None = None  # Kafka's field "Version" (a metadata image version)
    timestamp: int | None = None
    value_version: int | None = None
    tombstone: bool = False
    record_type = 16


Record = (
    OffsetCommit
    | GroupMetadata
    | ConsumerGroupMetadata
    | ConsumerGroupPartitionMetadata
    | ConsumerGroupMemberMetadata
    | ConsumerGroupTargetAssignmentMetadata
    | ConsumerGroupTargetAssignmentMember
    | ConsumerGroupCurrentMemberAssignment
    | ConsumerGroupRegularExpression
    | Skipped
)
