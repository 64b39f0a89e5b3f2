"""A real broker that requires SASL/SCRAM: lagmon connects with the settings an SRE gives it,
fails clearly with wrong ones, and never shows or stores the password."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from harness import log_messages, seconds_logging
from kafka_setup import commit_without_joining, create_topic

from monitor import devcluster
from monitor.demo import free_port

PASSWORD = "scram-pw-7f3c1d9e"
TOKEN = "hook-token-91be27"  # the secret part of a chat webhook URL
APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = ["overview", "group", "rebalances", "topics", "trends", "alerts", "health"]


@pytest.fixture(scope="module")
def scram_kafka(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kafka-scram")
    cluster = devcluster.start(folder, scram_user=("lagmon", PASSWORD))
    yield cluster
    devcluster.destroy(folder)


def lagmon(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=90
    )


def scram_settings(cluster, tmp_path, password: str) -> dict:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=lagmon\n")
    return {
        "LAGMON_BOOTSTRAP_SERVERS": cluster.sasl_bootstrap,
        "LAGMON_KAFKA_CONFIG": str(props),
        "LAGMON_KAFKA_SASL_PASSWORD": password,  # the password from the environment, as from a secret store
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'lagmon.db'}",
    }


def stored_bytes(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("lagmon.db*"))


def test_scram_credentials_from_file_and_environment_sample_the_cluster(scram_kafka, tmp_path):
    admin = AdminClient({"bootstrap.servers": scram_kafka.bootstrap})
    admin.create_topics([NewTopic("secured", num_partitions=2)])["secured"].result(30)
    commit_without_joining(scram_kafka.bootstrap, "secured-app", {("secured", 0): 0})

    env = scram_settings(scram_kafka, tmp_path, PASSWORD)
    collected = lagmon("collect", "--once", env=env)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    shown = lagmon("lag", "secured-app", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert [(p["TOPIC"], p["PARTITION"], p["CURRENT-OFFSET"]) for p in json.loads(shown.stdout)] == [("secured", 0, 0)]
    assert PASSWORD not in collected.stdout + collected.stderr + shown.stdout + shown.stderr
    assert PASSWORD.encode() not in stored_bytes(tmp_path)


def test_a_wrong_password_is_one_clear_line_and_is_never_shown(scram_kafka, tmp_path):
    wrong = "not-the-password-42"
    done = lagmon("collect", "--once", env=scram_settings(scram_kafka, tmp_path, wrong))
    assert done.returncode == 1
    last = log_messages(done.stderr)[-1]
    assert f"sample failed: cannot sample Kafka at {scram_kafka.sasl_bootstrap}" in last
    assert "Authentication failed" in last, last
    assert seconds_logging(done.stderr) < 3  # refused at once: no request waits out its timeout
    assert wrong not in done.stdout + done.stderr
    assert wrong.encode() not in stored_bytes(tmp_path)


def test_no_secret_reaches_logs_database_metrics_or_dashboard(scram_kafka, tmp_path, monkeypatch):
    """The collector logs as JSON here (LAGMON_LOG_FORMAT=json): every line it writes is one JSON object,
    and no secret is in any of them, nor in /metrics, the database or the dashboard."""
    from streamlit.testing.v1 import AppTest

    create_topic(scram_kafka.bootstrap, "secret-topic", 1)
    commit_without_joining(scram_kafka.bootstrap, "secret-check", {("secret-topic", 0): 0})
    port = free_port(0)
    env = {
        **os.environ,
        **scram_settings(scram_kafka, tmp_path, PASSWORD),
        "LAGMON_CHANNELS": f"chat=json://127.0.0.1:9/{TOKEN}",
        "LAGMON_METRICS_PORT": str(port),
        "LAGMON_LOG_FORMAT": "json",
    }
    collector = subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--interval", "1s"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    scraped = ""
    try:
        deadline = time.monotonic() + 60
        while "secret-check" not in scraped and time.monotonic() < deadline:
            try:
                scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                time.sleep(0.5)
    finally:
        collector.terminate()
        logs = collector.communicate(timeout=30)[0]
    assert "secret-check" in scraped, logs  # the metrics are really there
    records = [json.loads(line) for line in logs.splitlines()]  # all output is JSON log records
    assert {"time", "level", "logger", "message"} <= set(records[0])
    cycles = [r for r in records if "cycle_seconds" in r]
    # through SCRAM: a loaded machine's first cycle may time out, a later one must sample the group
    assert any(r["ok"] and r["groups"] >= 1 for r in cycles), logs
    for key in ("LAGMON_DATABASE_URL", "LAGMON_KAFKA_SASL_PASSWORD", "LAGMON_CHANNELS", "LAGMON_KAFKA_CONFIG"):
        monkeypatch.setenv(key, env[key])  # the dashboard sees what the collector saw
    for name in PAGES:
        page = AppTest.from_file(APP, default_timeout=30)
        page.query_params["page"] = name
        page.query_params["group"] = "secret-check"
        page.run()
        assert [e.value for e in page.exception] == [], name
        shown = repr([getattr(e, "value", "") for e in page.main]) + repr(
            [getattr(e, "value", "") for e in page.sidebar]
        )
        assert "secret-check" in shown or name not in ("overview", "group"), name  # the page shows real data
        assert PASSWORD not in shown and TOKEN not in shown, name
    for where, text in (("logs", logs), ("/metrics", scraped), ("database", stored_bytes(tmp_path).decode("latin-1"))):
        assert PASSWORD not in text and TOKEN not in text, where
