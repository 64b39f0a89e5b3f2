"""The records the group and share coordinators write, as frozen dataclasses.

`__consumer_offsets` (classic, consumer, share and streams groups) and
`__share_group_state` (ShareSnapshot, ShareUpdate). Fields are Kafka's,
snake_cased and in Kafka's order; None means null or "not in this version"
(Kafka prints no such field), which lets kafka_json render what Kafka's
formatters print. An absent tagged field takes Kafka's default, so that a
record reads the same whether the broker wrote the default or left it out. No
slots, so the decoder's hot path can build them in one step (see decoder._frozen).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.models import TopicPartition

SHARE_GROUP_TYPES = range(9, 16)  # 9 is not written by Kafka 4.3 (an early share-group record)
STREAMS_GROUP_FIRST_TYPE = 17
STREAMS_GROUP_TYPES = range(17, 24)  # 18 is not written by Kafka 4.3 either
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
STREAMS_MEMBER_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}  # not MEMBER_STATES
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


# --- records (frozen; no slots so the hot path can build them in one step, see _frozen)


@dataclass(frozen=True)
class Skipped:
    """Not decoded on purpose (record types and versions Kafka 4.3 does not write): count it, move on."""

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


# --- share groups (KIP-932): __consumer_offsets key types 10-15


@dataclass(frozen=True)
class ShareGroupMemberMetadata:
    """Key type 10: a share-group member joined or changed; a tombstone means it left."""

    group: str
    member_id: str
    rack_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 10


@dataclass(frozen=True)
class ShareGroupMetadata:
    """Key type 11: a share group's epoch, bumped on every membership or subscription change."""

    group: str
    epoch: int | None = None
    metadata_hash: int | None = None
    value_version: int | None = None
    tombstone: bool = False
    record_type = 11


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadata:
    """Key type 12: the epoch of the share group's target assignment."""

    group: str
    assignment_epoch: int | None = None
    assignment_timestamp: int | None = None  # tagged; 0 when absent
    value_version: int | None = None
    tombstone: bool = False
    record_type = 12


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMember:
    """Key type 13: the partitions a share-group member is to consume (shared with the others)."""

    group: str
    member_id: str
    topic_partitions: tuple[TopicIdPartitions, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 13


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignment:
    """Key type 14: what a share-group member is assigned now (no revocation: partitions are shared)."""

    group: str
    member_id: str
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    state: int | None = None  # see MEMBER_STATES
    assigned_partitions: tuple[TopicIdPartitions, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 14


@dataclass(frozen=True)
class ShareTopicPartitions:
    """A topic of a share group's state: partitions None in deleting_topics, which has none."""

    topic_id: str
    topic_name: str
    partitions: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadata:
    """Key type 15: the share partitions whose state (in __share_group_state) exists or is on its way."""

    group: str
    initializing_topics: tuple[ShareTopicPartitions, ...] = ()
    initialized_topics: tuple[ShareTopicPartitions, ...] = ()
    deleting_topics: tuple[ShareTopicPartitions, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 15


# --- streams groups (KIP-1071): __consumer_offsets key types 17, 19-23


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: str


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True)
class TaskIds:
    """One subtopology's tasks (= its partition numbers) of a member."""

    subtopology_id: str
    partitions: tuple[int, ...]
    # tagged, current assignment only (None in a target assignment, where the struct has no such field);
    # absent = Kafka's default (), None = written as null
    assignment_epochs: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StreamsGroupMetadata:
    """Key type 17: a streams group's epoch, bumped on every membership or topology change."""

    group: str
    epoch: int | None = None
    metadata_hash: int | None = None
    validated_topology_epoch: int | None = None  # tagged; -1 when absent
    # tagged; absent = Kafka's default (), None = written as null
    last_assignment_configs: tuple[KeyValue, ...] | None = None
    value_version: int | None = None
    tombstone: bool = False
    record_type = 17


@dataclass(frozen=True)
class StreamsGroupMemberMetadata:
    """Key type 19: a Kafka Streams client (one per stream thread) joined or changed; a tombstone means it left."""

    group: str
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    rebalance_timeout_ms: int | None = None
    topology_epoch: int | None = None
    process_id: str | None = None
    user_endpoint: Endpoint | None = None  # application.server, when set
    client_tags: tuple[KeyValue, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 19


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadata:
    """Key type 20: the epoch of the streams group's target assignment."""

    group: str
    assignment_epoch: int | None = None
    assignment_timestamp: int | None = None  # tagged; 0 when absent
    value_version: int | None = None
    tombstone: bool = False
    record_type = 20


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMember:
    """Key type 21: the tasks the assignor wants one member to run."""

    group: str
    member_id: str
    active_tasks: tuple[TaskIds, ...] = ()
    standby_tasks: tuple[TaskIds, ...] = ()
    warmup_tasks: tuple[TaskIds, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 21


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignment:
    """Key type 22: the tasks one member runs now, and those it still has to give up."""

    group: str
    member_id: str
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    state: int | None = None  # see STREAMS_MEMBER_STATES
    active_tasks: tuple[TaskIds, ...] = ()
    standby_tasks: tuple[TaskIds, ...] = ()
    warmup_tasks: tuple[TaskIds, ...] = ()
    active_tasks_pending_revocation: tuple[TaskIds, ...] = ()
    standby_tasks_pending_revocation: tuple[TaskIds, ...] = ()
    warmup_tasks_pending_revocation: tuple[TaskIds, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 22


@dataclass(frozen=True)
class TopicInfo:
    """An internal topic Kafka Streams needs (partitions 0 / replication_factor -1: the broker decides)."""

    name: str
    partitions: int
    replication_factor: int
    topic_configs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Topics that must have as many partitions, as indexes into the subtopology's topic lists."""

    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]


@dataclass(frozen=True)
class StreamsGroupTopology:
    """Key type 23: the application's topology (its subtopologies are what task ids refer to)."""

    group: str
    epoch: int | None = None
    subtopologies: tuple[Subtopology, ...] = ()
    value_version: int | None = None
    tombstone: bool = False
    record_type = 23


# --- __share_group_state (the share coordinator): key types 0 and 1 of that topic


@dataclass(frozen=True)
class StateBatch:
    """Offsets first_offset..last_offset in one delivery state (0 available, 2 acknowledged, 4 archived)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class ShareSnapshot:
    """A share partition's whole state: where it starts and the in-flight batches past that."""

    group: str
    topic_id: str
    partition: int
    snapshot_epoch: int | None = None
    state_epoch: int | None = None
    leader_epoch: int | None = None
    start_offset: int | None = None
    create_timestamp: int | None = None
    write_timestamp: int | None = None
    state_batches: tuple[StateBatch, ...] = ()
    # tagged (KIP-1226); Kafka declares it after start_offset; -1 (unknown) when absent
    delivery_complete_count: int | None = None
    value_version: int | None = None
    tombstone: bool = False
    record_type = 0


@dataclass(frozen=True)
class ShareUpdate:
    """A change on top of the latest snapshot of the same snapshot_epoch (start_offset -1: unchanged)."""

    group: str
    topic_id: str
    partition: int
    snapshot_epoch: int | None = None
    leader_epoch: int | None = None
    start_offset: int | None = None
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int | None = None  # tagged (KIP-1226); -1 when absent
    value_version: int | None = None
    tombstone: bool = False
    record_type = 1


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
    | ShareGroupMemberMetadata
    | ShareGroupMetadata
    | ShareGroupTargetAssignmentMetadata
    | ShareGroupTargetAssignmentMember
    | ShareGroupCurrentMemberAssignment
    | ShareGroupStatePartitionMetadata
    | StreamsGroupMetadata
    | StreamsGroupMemberMetadata
    | StreamsGroupTargetAssignmentMetadata
    | StreamsGroupTargetAssignmentMember
    | StreamsGroupCurrentMemberAssignment
    | StreamsGroupTopology
    | Skipped
)
ShareStateRecord = ShareSnapshot | ShareUpdate | Skipped
