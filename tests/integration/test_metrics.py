"""`collect --metrics-port`: a real scrape during a real collector run shows what the CLI shows."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request

from kafka_setup import commit_without_joining, create_topic, produce
from prometheus_client.parser import text_string_to_metric_families

from monitor.demo import free_port


def scrape(port: int) -> dict[str, list]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def test_a_scrape_shows_the_lag_the_cli_shows(kafka, unique, tmp_path):
    topic, group = f"scraped-{unique}", f"scraped-group-{unique}"
    create_topic(kafka.bootstrap, topic, 2)
    produce(kafka.bootstrap, topic, {0: 30, 1: 12})
    commit_without_joining(kafka.bootstrap, group, {(topic, 0): 10, (topic, 1): 12})
    port = free_port(0)
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_GROUP_ALLOW": f"^{group}$",
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
        "LAGMON_CLUSTER_NAME": "scraped",
    }
    collector = subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--interval", "1s", "--metrics-port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        metrics = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # not listening yet
                metrics = scrape(port)
            if metrics.get("kafka_consumergroup_group_lag"):
                break
            time.sleep(0.5)
        shown = subprocess.run(
            [sys.executable, "-m", "monitor", "lag", group, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        collector.terminate()
        output = collector.communicate(timeout=30)[0]
    assert metrics.get("kafka_consumergroup_group_lag"), output
    cli = {(p["TOPIC"], str(p["PARTITION"])): p for p in json.loads(shown.stdout)}
    lag = {(labels["topic"], labels["partition"]): v for labels, v in metrics["kafka_consumergroup_group_lag"]}
    offsets = {(labels["topic"], labels["partition"]): v for labels, v in metrics["kafka_consumergroup_group_offset"]}
    ends = {(labels["topic"], labels["partition"]): v for labels, v in metrics["kafka_partition_latest_offset"]}
    assert lag == {key: p["LAG"] for key, p in cli.items()} == {(topic, "0"): 20, (topic, "1"): 0}
    assert offsets == {key: p["CURRENT-OFFSET"] for key, p in cli.items()}
    assert ends == {key: p["LOG-END-OFFSET"] for key, p in cli.items()}
    assert metrics["kafka_consumergroup_group_sum_lag"] == [({"cluster_name": "scraped", "group": group}, 20)]
    assert all(labels["cluster_name"] == "scraped" for labels, _ in metrics["kafka_consumergroup_group_lag"])
    assert next(v for labels, v in metrics["lagmon_collector_cycles_total"] if labels["outcome"] == "ok") >= 1
    assert metrics["lagmon_consumergroup_status"]  # the alert engine's health reaches the exporter
