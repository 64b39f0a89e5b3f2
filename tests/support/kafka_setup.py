"""Putting known data into a real broker: topics, records, and commits of groups that never join."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """A new topic. Its name is the test's own, so "already exists" can only be this very creation, answered
    late: a request whose answer was lost is sent again (by the client, or by the broker that forwards it to
    the controller), and the second finds the topic the first made. On the 3-node cluster that failed a CI
    run; the topic must still have the partitions asked for."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(30)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
        found = admin.list_topics(topic, timeout=30).topics[topic]
        assert len(found.partitions) == partitions, f"{topic} exists with {len(found.partitions)} partitions"


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in per_partition.items():
        for _ in range(count):
            producer.produce(topic, value=b"x" * 20, partition=partition)
    assert producer.flush(30) == 0


def commit_without_joining(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """A 'simple' group (Spark/Flink style): committed offsets, never a member.

    A fresh cluster answers NOT_COORDINATOR / LOAD_IN_PROGRESS until __consumer_offsets
    is ready, and a consumer that saw that may keep asking the wrong node: retry
    with a new one.
    """
    deadline = time.monotonic() + 60
    while True:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[KTP(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
            return
        except KafkaException as e:
            code = e.args[0].code()
            settling = code in (
                KafkaError.NOT_COORDINATOR,
                KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                KafkaError.COORDINATOR_NOT_AVAILABLE,
            )
            if not (settling or e.args[0].retriable()) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            consumer.close()
