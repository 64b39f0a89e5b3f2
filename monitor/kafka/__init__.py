"""The only importer of confluent_kafka in monitor/ (outside the sim): lagmon's three Kafka clients, a module each.

sampler: the admin API, a ClusterSnapshot per cycle. offsets_topic_reader: the
tails' consumer of __consumer_offsets and __share_group_state. record_timestamps:
record times at committed offsets, for exact lag seconds. common: what they share.
"""

from monitor.kafka.common import OFFSETS_TOPIC
from monitor.kafka.offsets_topic_reader import SHARE_STATE_TOPIC, OffsetsTopicReader, fetch_topic_names
from monitor.kafka.record_timestamps import RecordTimestampReader
from monitor.kafka.sampler import (
    KafkaSampler,
    fetch_broker_ids,
    fetch_offsets_topic_ends,
    fetch_under_replicated,
)

__all__ = [
    "OFFSETS_TOPIC",
    "SHARE_STATE_TOPIC",
    "KafkaSampler",
    "OffsetsTopicReader",
    "RecordTimestampReader",
    "fetch_broker_ids",
    "fetch_under_replicated",
    "fetch_offsets_topic_ends",
    "fetch_topic_names",
]
