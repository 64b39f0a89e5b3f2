"""Coordinated collectors where the brokers lack KIP-848's consumer protocol: the classic one takes its place.

A real broker with `group.coordinator.rebalance.protocols=classic` stands in for one older than
KIP-848 (librdkafka reports the missing protocol as a fatal error of the consumer). The members must
join again with the classic protocol (cooperative-sticky), share __consumer_offsets' partitions between
them, and hand a leaver's partitions to the other.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient

from monitor import devcluster
from monitor.kafka.membership import CollectorsGroupMember
from monitor.shard import KafkaShard

PARTITIONS = set(range(12))  # the dev cluster's offsets.topic.num.partitions


@pytest.fixture(scope="module")
def classic_only(tmp_path_factory):
    cluster_dir = tmp_path_factory.mktemp("kafka-classic")
    yield devcluster.start(cluster_dir, broker_config={"group.coordinator.rebalance.protocols": "classic"})
    devcluster.destroy(cluster_dir)


def wait_until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_collectors_join_with_the_classic_protocol_where_the_brokers_lack_kip848(classic_only, unique, caplog):
    caplog.set_level(logging.WARNING, logger="lagmon.collectors")
    group = f"lagmon-collectors-{unique}"
    shards = [KafkaShard("a"), KafkaShard("b")]
    stops = [threading.Event(), threading.Event()]
    members = [CollectorsGroupMember({"bootstrap.servers": classic_only.bootstrap}, group, s) for s in shards]
    threads = [members[0].start(stops[0])]
    try:
        wait_until(lambda: shards[0].held == PARTITIONS)
        assert "do not offer KIP-848's consumer protocol: joining with the classic one" in caplog.text
        threads.append(members[1].start(stops[1]))
        wait_until(lambda: shards[1].held and not shards[0].held & shards[1].held)
        wait_until(lambda: shards[0].held | shards[1].held == PARTITIONS)
        admin = AdminClient({"bootstrap.servers": classic_only.bootstrap})
        described = admin.describe_consumer_groups([group])[group].result()
        assert described.type == ConsumerGroupType.CLASSIC and len(described.members) == 2
        stops[0].set()  # a leaves: b takes all
        threads[0].join(30)
        wait_until(lambda: shards[1].held == PARTITIONS)
    finally:
        for stop in stops:
            stop.set()
        for thread in threads:
            thread.join(30)
