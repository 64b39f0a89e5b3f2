"""Real groups of every kind writing real records to __consumer_offsets, for the offsets-topic tail's tests.

All group names are chosen to land on one __consumer_offsets partition, so Kafka's
own formatter can read them with one ConsoleConsumer run (assign, no group).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KTP

from monitor.shard import coordinator_partition


def same_partition_names(prefix: str, kinds: list[str], partitions: int, target: int | None = None) -> dict[str, str]:
    """kind -> a group name `prefix-kind-N` whose coordinator partition is `target` (default: the first's)."""
    out = {}
    for kind in kinds:
        n = 0
        while True:
            name = f"{prefix}-{kind}-{n}"
            p = coordinator_partition(name, partitions)
            if target is None:
                target = p
            if p == target:
                out[kind] = name
                break
            n += 1
    return out


def wait_assigned(consumers: list[Consumer], timeout_s: float = 30) -> None:
    """Poll all until every one holds a non-empty assignment (the group is formed)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if all(c.assignment() for c in consumers):
            return
    raise AssertionError("consumers were never assigned")


def run_members(
    bootstrap: str,
    group: str,
    topic: str,
    *,
    n: int = 2,
    protocol: str = "classic",
    assignor: str = "range",
    static: bool = False,
    commits: int = 2,
) -> None:
    """n members join, commit `commits` times each, then the first leaves and the rest close."""
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update(
            {"partition.assignment.strategy": assignor, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        )
    consumers = []
    for i in range(n):
        member = dict(
            conf, **({"group.instance.id": f"{group}-i{i}"} if static else {}), **{"client.id": f"{group}-c{i}"}
        )
        c = Consumer(member)
        c.subscribe([topic])
        consumers.append(c)
        wait_assigned(consumers)
    for round_ in range(commits):
        for c in consumers:
            parts = c.assignment()
            if parts:
                commit_retrying(c, [KTP(tp.topic, tp.partition, 10 * (round_ + 1) + tp.partition) for tp in parts])
    consumers[0].close()
    if len(consumers) > 1:
        wait_assigned(consumers[1:])
    for c in consumers[1:]:
        c.close()


def commit_retrying(consumer: Consumer, offsets: list[KTP]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise
            consumer.poll(0.2)
