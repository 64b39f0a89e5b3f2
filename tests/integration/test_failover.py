"""Group coordination survives a broker loss: stopping the coordinator moves the group.

Every admin call here uses a fresh AdminClient, on purpose. With librdkafka 2.16 a
client that was connected to the stopped broker decommissions it when it drops out
of the KRaft metadata, and then (intermittently) every coordinator-bound request
(describe_consumer_groups, list_consumer_group_offsets) times out forever, even
after the broker is back; sometimes the process aborts on
`rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0` (librdkafka#4605).
A fresh client knows only the live brokers and answers at once.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from monitor import devcluster
from monitor.sim.scenarios import many_groups_offset

PROJECT_DIR = Path(__file__).resolve().parents[2]


def fresh_admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def coordinator_of(bootstrap: str, group: str) -> int | None:
    """The coordinator's node id as describe_consumer_groups reports it (None while unavailable)."""
    admin = fresh_admin(bootstrap)  # keep a reference: a collected client never completes its futures
    try:
        return admin.describe_consumer_groups([group], request_timeout=5)[group].result(timeout=10).coordinator.id
    except KafkaException:
        return None


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    admin = fresh_admin(bootstrap)
    result = admin.list_consumer_group_offsets([request], request_timeout=10)[group].result(timeout=20)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


@pytest.mark.failover
def test_stopping_the_coordinator_moves_group_coordination(kafka3, unique):
    group, topic = f"sim-many-groups-{unique}-g0000", f"sim-many-groups-{unique}-topic"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "sim",
            "many-groups",
            "--bootstrap",
            kafka3.bootstrap,
            "--suffix",
            unique,
            "--groups",
            "1",
            "--partitions",
            "3",
        ],
        cwd=PROJECT_DIR,
        check=True,
        timeout=120,
        capture_output=True,
    )
    before = coordinator_of(kafka3.bootstrap, group)
    assert before in {n.id for n in kafka3.nodes}

    devcluster.stop_node(kafka3.dir, before)
    try:
        deadline = time.monotonic() + 60
        after = coordinator_of(kafka3.bootstrap, group)
        while (after is None or after == before) and time.monotonic() < deadline:
            time.sleep(0.5)
            after = coordinator_of(kafka3.bootstrap, group)
        assert after is not None and after != before, f"coordinator still {after}"
        # the new coordinator loaded the group's offsets from the replicated __consumer_offsets
        assert committed(kafka3.bootstrap, group, topic, 3) == {p: many_groups_offset(0, p) for p in range(3)}
    finally:
        devcluster.start_node(kafka3.dir, before)
    assert coordinator_of(kafka3.bootstrap, group) is not None  # the cluster is whole again for later tests
