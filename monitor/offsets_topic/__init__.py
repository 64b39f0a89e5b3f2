"""`__consumer_offsets`: the offsets-topic tail's pure parts (docs/architecture.md section 4).

- records     the frozen dataclasses, one per record type the group coordinator writes
- decoder     decode(key, value) -> record, raising DecodeError and nothing else
- kafka_json  to_kafka_json: a record as Kafka's own formatters print it (oracle tests)
- history     TailState: records folded into commits, generations/epochs and rebalances
"""

from monitor.offsets_topic.decoder import decode, resolve_topic_ids, topic_id_str
from monitor.offsets_topic.kafka_json import to_kafka_json
from monitor.offsets_topic.records import (
    MEMBER_STATES,
    SHARE_GROUP_TYPES,
    STREAMS_GROUP_FIRST_TYPE,
    ZERO_TOPIC_ID,
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
    Record,
    Skipped,
    TopicIdPartitions,
    TopicMetadata,
)

__all__ = [
    "MEMBER_STATES",
    "SHARE_GROUP_TYPES",
    "STREAMS_GROUP_FIRST_TYPE",
    "ZERO_TOPIC_ID",
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerAssignment",
    "ConsumerGroupCurrentMemberAssignment",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupMetadata",
    "ConsumerGroupPartitionMetadata",
    "ConsumerGroupRegularExpression",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupTargetAssignmentMetadata",
    "ConsumerSubscription",
    "GroupMember",
    "GroupMetadata",
    "OffsetCommit",
    "PartitionRacks",
    "Record",
    "Skipped",
    "TopicIdPartitions",
    "TopicMetadata",
    "decode",
    "resolve_topic_ids",
    "to_kafka_json",
    "topic_id_str",
]
