"""Exact lag in seconds (LAGMON_LAG_EXACT_TOP): the timestamp of the record at a committed offset.

A consumer of its own that only assign()s, so reading a monitored group's records
never joins, commits for or moves that group.
"""

from __future__ import annotations

import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka import TopicPartition as KafkaTopicPartition

from monitor.kafka.common import quiet_logger
from monitor.models import RecordTime
from monitor.models import TopicPartition


class RecordTimestampReader:
    """Reads the timestamp of the record at given offsets with assign(): never subscribes, joins or commits.

    librdkafka insists on a group.id even for assign(); this one is lagmon's own and is
    never used for commits (enable.auto.commit off, no commit calls), so no group is formed.
    """

    GROUP_ID = "lagmon-record-timestamps"

    def __init__(self, config: dict[str, str]):
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                **config,
                "group.id": self.GROUP_ID,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "fetch.wait.max.ms": 10,
                "fetch.max.bytes": 1048576,
                "max.partition.fetch.bytes": 65536,
                "logger": quiet_logger(),
            }
        )

    def fetch_timestamps(
        self, wanted: dict[TopicPartition, int], timeout_s: float = 1.0
    ) -> dict[TopicPartition, RecordTime]:
        """{tp: the timestamp of the record at the offset}. Left out: partitions not read in time, and those
        whose record at the offset is gone (compacted away, or a transaction marker there), as the next
        record's timestamp says only that it was appended no later: interpolation does better."""
        if not wanted:
            return {}
        self.consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, offset) for tp, offset in wanted.items()])
        found: dict[TopicPartition, RecordTime] = {}
        read: set[TopicPartition] = set()
        deadline = time.monotonic() + timeout_s
        try:
            while len(read) < len(wanted) and time.monotonic() < deadline:
                for msg in self.consumer.consume(num_messages=len(wanted) * 2, timeout=0.05):
                    if msg.error():
                        continue
                    tp = TopicPartition(msg.topic(), msg.partition())
                    kind, ts = msg.timestamp()
                    if tp in wanted and tp not in read and msg.offset() >= wanted[tp]:
                        read.add(tp)
                        if msg.offset() == wanted[tp] and ts > 0:
                            found[tp] = RecordTime(ts, kind == TIMESTAMP_LOG_APPEND_TIME)
        finally:
            self.consumer.unassign()
        return found

    def close(self) -> None:
        self.consumer.close()
