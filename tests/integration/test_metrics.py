"""`collect --metrics-port`: a real scrape during a real collector run shows what the CLI shows."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
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


PER_PARTITION = {
    "kafka_consumergroup_group_offset",
    "kafka_consumergroup_group_lag",
    "kafka_consumergroup_group_lag_seconds",
    "kafka_partition_latest_offset",
    "kafka_partition_earliest_offset",
}


def test_topic_granularity_topic_filter_and_the_commit_counter_from_the_tail(kafka, unique, tmp_path):
    """A real collector with its offsets-topic tail, LAGMON_METRICS_GRANULARITY=topic and a topic left out:
    per-topic series only, none with a member label; the group reading only the topic left out stays; the
    commit counter counts exactly the commits made while it runs, on the wanted topics."""
    kept, left = f"counted-{unique}", f"ignored-{unique}"
    create_topic(kafka.bootstrap, kept, 2)
    create_topic(kafka.bootstrap, left, 1)
    produce(kafka.bootstrap, kept, {0: 30, 1: 12})
    produce(kafka.bootstrap, left, {0: 5})
    both, only_left = f"commits-both-{unique}", f"commits-left-{unique}"
    commit_without_joining(kafka.bootstrap, both, {(kept, 0): 10, (kept, 1): 12, (left, 0): 1})  # before: uncounted
    commit_without_joining(kafka.bootstrap, only_left, {(left, 0): 2})
    port = free_port(0)
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_GROUP_ALLOW": f"^commits-(both|left)-{unique}$",
        "LAGMON_TOPIC_DENY": f"^{left}$",
        "LAGMON_METRICS_GRANULARITY": "topic",
        "LAGMON_OFFSETS_TOPIC": "on",
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
        "LAGMON_CLUSTER_NAME": "counted",
    }
    collector = subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--interval", "1s", "--metrics-port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(collector.stdout.readline, "")), daemon=True)
    reader.start()

    def wait_for(check, what: str, seconds: float = 60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # not listening yet
                metrics = scrape(port)
                if check(metrics):
                    return metrics
            time.sleep(0.3)
        raise AssertionError(f"no {what} within {seconds}s:\n{''.join(lines)}")

    def commits(metrics) -> dict[tuple[str, str], float]:
        return {
            (labels["group"], labels["topic"]): v
            for labels, v in metrics.get("lagmon_consumergroup_offset_commits_total", [])
        }

    try:
        wait_for(lambda m: m.get("kafka_consumergroup_group_topic_sum_lag"), "lag")
        deadline = time.monotonic() + 60
        while not any("offsets-topic tail caught up" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.2)
        for offset in (20, 25, 30):  # three commits of two partitions each
            commit_without_joining(kafka.bootstrap, both, {(kept, 0): offset, (kept, 1): 12})
        commit_without_joining(kafka.bootstrap, both, {(left, 0): 3})  # the topic left out
        commit_without_joining(kafka.bootstrap, only_left, {(left, 0): 4})
        metrics = wait_for(lambda m: commits(m).get((both, kept)) == 6, "6 commits counted")
        time.sleep(2.5)  # two more cycles: nothing else arrives
        metrics = scrape(port)
    finally:
        collector.terminate()
        collector.wait(timeout=30)
        reader.join(timeout=5)
    output = "".join(lines)
    assert commits(metrics) == {(both, kept): 6}, output
    assert set(metrics) & PER_PARTITION == set()
    member_labels = {"member_host", "consumer_id", "client_id", "partition"}
    assert all(member_labels.isdisjoint(labels) for samples in metrics.values() for labels, _ in samples)
    sums = {(labels["group"], labels["topic"]): v for labels, v in metrics["kafka_consumergroup_group_topic_sum_lag"]}
    assert sums == {(both, kept): 0}  # committed up to 30 and 12: caught up; the topic left out is not there
    assert {labels["group"] for labels, _ in metrics["lagmon_consumergroup_status"]} == {both, only_left}
    assert [v for labels, v in metrics["lagmon_topic_latest_offset_sum"]] == [42]
    assert "metrics: http://127.0.0.1:" in output and "(topic granularity)" in output
