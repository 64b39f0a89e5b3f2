"""A real broker that requires SASL/SCRAM: lagmon connects with the settings an SRE gives it,
fails clearly with wrong ones, and never shows or stores the password."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from monitor import devcluster

PASSWORD = "scram-pw-7f3c1d9e"


@pytest.fixture(scope="module")
def scram_kafka(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kafka-scram")
    cluster = devcluster.start(folder, scram_user=("lagmon", PASSWORD))
    yield cluster
    devcluster.destroy(folder)


def lagmon(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=90)


def scram_settings(cluster, tmp_path, password: str) -> dict:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=lagmon\n")
    return {"LAGMON_BOOTSTRAP_SERVERS": cluster.sasl_bootstrap, "LAGMON_KAFKA_CONFIG": str(props),
            "LAGMON_KAFKA_SASL_PASSWORD": password,  # the password from the environment, as from a secret store
            "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'lagmon.db'}"}


def stored_bytes(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("lagmon.db*"))


def test_scram_credentials_from_file_and_environment_sample_the_cluster(scram_kafka, tmp_path):
    admin = AdminClient({"bootstrap.servers": scram_kafka.bootstrap})
    admin.create_topics([NewTopic("secured", num_partitions=2)])["secured"].result(30)
    consumer = Consumer({"bootstrap.servers": scram_kafka.bootstrap, "group.id": "secured-app"})
    consumer.commit(offsets=[KTP("secured", 0, 0)], asynchronous=False)
    consumer.close()

    env = scram_settings(scram_kafka, tmp_path, PASSWORD)
    collected = lagmon("collect", "--once", env=env)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    shown = lagmon("lag", "secured-app", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert [(p["TOPIC"], p["PARTITION"], p["CURRENT-OFFSET"]) for p in json.loads(shown.stdout)] == \
        [("secured", 0, 0)]
    assert PASSWORD not in collected.stdout + collected.stderr + shown.stdout + shown.stderr
    assert PASSWORD.encode() not in stored_bytes(tmp_path)


def test_a_wrong_password_is_one_clear_line_and_is_never_shown(scram_kafka, tmp_path):
    wrong = "not-the-password-42"
    done = lagmon("collect", "--once", env=scram_settings(scram_kafka, tmp_path, wrong))
    assert done.returncode == 1
    last = done.stdout.strip().splitlines()[-1]
    assert f"sample failed: cannot sample Kafka at {scram_kafka.sasl_bootstrap}" in last
    assert "Authentication failed" in last, last
    assert wrong not in done.stdout + done.stderr
    assert wrong.encode() not in stored_bytes(tmp_path)
