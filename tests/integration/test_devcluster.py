"""The local Kafka that everything else is tested on: it works, it is isolated, it fails clearly."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
from pathlib import Path

import harness
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from monitor import devcluster


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return harness.run_cli(*args, env=env, timeout=120)  # starting a cluster takes a while


def test_topic_produce_consume_roundtrip(kafka, unique):
    topic = f"roundtrip-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(10):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": f"g-{unique}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen = []
    try:
        while len(seen) < 10:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(seen)} of 10 messages arrived"
            assert msg.error() is None
            seen.append(msg.value().decode())
    finally:
        consumer.close()
    assert sorted(seen) == sorted(f"m{i}" for i in range(10))


def test_kafka_runs_under_the_cluster_id_lagmon_made_for_it(kafka):
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})  # held: a client collected ends its futures
    assert admin.describe_cluster().result(30).cluster_id == kafka.cluster_id


def test_cluster_ids_are_kafka_uuid_strings_never_starting_with_a_dash():
    """As `kafka-storage random-uuid` makes them: one in 64 random ones would start with "-"."""
    ids = {devcluster.compute_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    for cluster_id in ids:
        assert len(cluster_id) == 22 and not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_nodes_map_the_class_archive_setup_wrote(kafka):
    """A node whose JVM or class path differs from the archive's silently starts without it (slower): this
    is the check that `make setup`'s archive is one the nodes can use."""
    maps = Path(f"/proc/{kafka.nodes[0].pid}/maps").read_text()
    assert str(devcluster.NODE_ARCHIVE) in maps


def test_cli_status_json_describes_the_running_cluster(kafka):
    done = run_cli("devcluster", "status", "--dir", str(kafka.dir), "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["bootstrap"] == kafka.bootstrap
    assert status["nodes"] == [
        {
            "id": 1,
            "port": kafka.nodes[0].port,
            "controller_port": kafka.nodes[0].controller_port,
            "sasl_port": None,
            "pid": kafka.nodes[0].pid,
            "running": True,
        }
    ]


def test_second_cluster_runs_beside_the_first_and_stops_alone(kafka, tmp_path):
    started = run_cli("devcluster", "start", "--dir", str(tmp_path / "other"))
    try:
        assert started.returncode == 0, started.stderr
        other = devcluster.load(tmp_path / "other")
        assert other.bootstrap in started.stdout
        assert other.nodes[0].port != kafka.nodes[0].port
        md = AdminClient({"bootstrap.servers": other.bootstrap}).list_topics(timeout=10)
        assert list(md.brokers) == [1]
    finally:
        stopped = run_cli("devcluster", "stop", "--dir", str(tmp_path / "other"))
    assert stopped.returncode == 0, stopped.stderr
    assert not devcluster.is_running(other.nodes[0].pid)
    assert run_cli("devcluster", "status", "--dir", str(tmp_path / "other")).returncode == 3
    # the first cluster is untouched
    assert AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10).brokers


def test_status_without_a_cluster_is_one_clear_line(tmp_path):
    done = run_cli("devcluster", "status", "--dir", str(tmp_path / "none"))
    assert done.returncode == 2
    assert (
        harness.error_line(done.stderr)
        == f"no dev cluster in {tmp_path / 'none'} (start one with: python -m monitor devcluster start)"
    )


def test_missing_jars_say_run_setup(tmp_path):
    done = run_cli(
        "devcluster", "start", "--dir", str(tmp_path / "c"), env={"LAGMON_KAFKA_LIBS": str(tmp_path / "nolibs")}
    )
    assert done.returncode == 2
    assert harness.error_line(done.stderr) == f"Kafka jars not found in {tmp_path / 'nolibs'}: run `make setup` first"


def test_missing_java_says_what_to_install(tmp_path):
    done = run_cli("devcluster", "start", "--dir", str(tmp_path / "c"), env={"PATH": str(tmp_path)})
    assert done.returncode == 2
    assert "Java 17+ is required to run Kafka: install it" in done.stderr


def test_port_in_use_is_named_when_a_node_restarts(tmp_path):
    cluster = devcluster.start(tmp_path / "c")
    try:
        devcluster.stop_node(cluster.dir, 1)
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", cluster.nodes[0].port))
            squatter.listen()
            done = run_cli("devcluster", "start-node", "1", "--dir", str(cluster.dir))
        assert done.returncode == 2
        assert harness.error_line(done.stderr) == f"port {cluster.nodes[0].port} of node 1 is in use by another process"
    finally:
        devcluster.destroy(cluster.dir)


def test_a_node_that_dies_at_start_shows_its_log(tmp_path):
    cluster_dir = tmp_path / "c"
    devcluster.start(cluster_dir)
    devcluster.stop(cluster_dir)
    props = cluster_dir / "node-1" / "server.properties"
    props.write_text(props.read_text().replace("process.roles=broker,controller", "process.roles=nonsense"))
    try:
        with pytest.raises(devcluster.DevClusterError) as err:
            devcluster.start(cluster_dir)
        message = str(err.value)
        assert message.startswith("node 1 (pid ") and "exited during start-up; end of its log:" in message
        assert "nonsense" in message  # Kafka's own complaint is shown
    finally:
        devcluster.destroy(cluster_dir)
