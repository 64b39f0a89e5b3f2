"""deploy/prometheus and deploy/grafana as an SRE runs them: Debian's Prometheus (loopback, a temporary
folder, 1 s scrapes and rule evaluations) scrapes a real collector of the real broker, with the shipped
rules loaded; its answers are held to `lag --json`, every dashboard query to what it returns, and the
collector-down rule to a collector that is killed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer
from factories import make_group, make_share_group, make_snapshot, make_streams_group
from harness import ROOT, cli_json, wait_for
from kafka_setup import commit_without_joining, create_topic, produce

from monitor.demo import free_port
from monitor.exporter import MetricsExporter
from monitor.health import HealthEngine
from monitor.models import GroupType, PartitionOffsets, TopicPartition

RULES_DIR = ROOT / "deploy" / "prometheus"
DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
CLUSTER = "promtest"
GROUP_TYPE_METRIC = re.compile(r"lagmon_(sharegroup|streamsgroup)_")  # panels of share and streams groups
FOR_IN_TEST = "2s"  # the shipped rules wait minutes before firing; the test copy waits this long


def test_the_rules_pass_promtool_check_and_their_own_unit_tests():
    for command in (["check", "config", "prometheus.yml"], ["test", "rules", "lagmon-rules_test.yml"]):
        done = subprocess.run(["promtool", *command], cwd=RULES_DIR, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr  # check config checks the rules it loads too


class Prometheus:
    def __init__(self, port: int):
        self.url = f"http://127.0.0.1:{port}"

    def ready(self) -> bool:
        with contextlib.suppress(OSError):
            return urllib.request.urlopen(f"{self.url}/-/ready", timeout=2).status == 200
        return False

    def get(self, path: str, **params) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as reply:
                body = json.load(reply)
        except urllib.error.HTTPError as e:  # a query Prometheus cannot parse: say which and why
            raise AssertionError(f"{path} {params}: {e.read().decode()}") from None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's series (each {'metric': labels, 'value': [time, text]}); a bad one fails."""
        data = self.get("/api/v1/query", query=expr)
        return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]

    def by_partition(self, expr: str) -> dict[tuple[str, int], float]:
        return {(s["metric"]["topic"], int(s["metric"]["partition"])): float(s["value"][1]) for s in self.query(expr)}

    def firing(self) -> list[dict]:
        return [a for a in self.get("/api/v1/alerts")["alerts"] if a["state"] == "firing"]


def rules_for_the_test(path: Path) -> None:
    """The shipped rules, unchanged but for a short `for:` so a 1 s evaluation sees them fire soon."""
    rules = yaml.safe_load((RULES_DIR / "lagmon-rules.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule["for"] = FOR_IN_TEST
    path.write_text(yaml.safe_dump(rules))


def start_prometheus(folder: Path, *targets: str) -> tuple[subprocess.Popen, Prometheus]:
    """The shipped configuration, scraping `targets` every second, with the rules' test copy beside it."""
    rules_for_the_test(folder / "lagmon-rules.yml")
    config = yaml.safe_load((RULES_DIR / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["scrape_configs"][0]["static_configs"] = [{"targets": list(targets)}]
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port(0)
    with open(folder / "prometheus.log", "w") as log:
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return process, Prometheus(port)


def join(bootstrap: str, group: str, topic: str) -> Consumer:
    """A member that joins `group` (a rebalance) and stays, committing nothing."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([topic])
    wait_for(lambda: consumer.poll(0.2) is not None or consumer.assignment(), 30, "the member's assignment")
    return consumer


@pytest.fixture(scope="module")
def stack(kafka, tmp_path_factory):
    """A group with known lag that a member joins, its collector every 1 s, Prometheus scraping it."""
    folder = tmp_path_factory.mktemp("prometheus")
    unique = uuid.uuid4().hex[:8]
    topic, group = f"prom-{unique}", f"prom-group-{unique}"
    create_topic(kafka.bootstrap, topic, 2)
    produce(kafka.bootstrap, topic, {0: 30, 1: 12})
    commit_without_joining(kafka.bootstrap, group, {(topic, 0): 10, (topic, 1): 12})
    metrics_port = free_port(0)
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_GROUP_ALLOW": f"^{group}$",
        "LAGMON_DATABASE_URL": f"sqlite:///{folder / 'lagmon.db'}",
        "LAGMON_CLUSTER_NAME": CLUSTER,
    }
    with open(folder / "collector.log", "w") as log:
        collector = subprocess.Popen(
            [sys.executable, "-m", "monitor", "collect", "--interval", "1s", "--metrics-port", str(metrics_port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    processes, member = [collector], None
    try:
        prometheus_process, prometheus = start_prometheus(folder, f"127.0.0.1:{metrics_port}")
        processes.append(prometheus_process)
        wait_for(prometheus.ready, 30, "Prometheus to be ready")
        wait_for(lambda: prometheus.query(f'lagmon_consumergroup_status{{group="{group}"}}'), 60, "a judged group")
        member = join(kafka.bootstrap, group, topic)  # Empty -> Stable with a member: one rebalance
        wait_for(
            lambda: prometheus.query(f'lagmon_consumergroup_rebalances_total{{group="{group}"}} > 0'),
            60,
            "the member's rebalance in Prometheus",
        )
        yield {"prometheus": prometheus, "collector": collector, "env": env, "group": group, "topic": topic}
    finally:
        if member is not None:
            member.close()
        for process in processes:
            if process.poll() is None:
                process.terminate()
            process.wait(30)


def test_prometheus_answers_the_lag_that_lag_json_shows(stack):
    prometheus, group = stack["prometheus"], stack["group"]
    selector = f'{{cluster_name="{CLUSTER}",group="{group}"}}'
    cli = {(p["TOPIC"], p["PARTITION"]): p for p in cli_json("lag", group, env=stack["env"])}
    assert (
        prometheus.by_partition(f"kafka_consumergroup_group_lag{selector}")
        == {key: p["LAG"] for key, p in cli.items()}
        == {(stack["topic"], 0): 20, (stack["topic"], 1): 0}
    )
    assert prometheus.by_partition(f"kafka_consumergroup_group_offset{selector}") == {
        key: p["CURRENT-OFFSET"] for key, p in cli.items()
    }
    assert prometheus.by_partition(f'kafka_partition_latest_offset{{topic="{stack["topic"]}"}}') == {
        key: p["LOG-END-OFFSET"] for key, p in cli.items()
    }
    assert [float(s["value"][1]) for s in prometheus.query(f"kafka_consumergroup_group_sum_lag{selector}")] == [20]
    owners = {
        (s["metric"]["topic"], int(s["metric"]["partition"])): [s["metric"][k] for k in ("consumer_id", "member_host")]
        for s in prometheus.query(f"kafka_consumergroup_group_lag{selector}")
    }
    assert owners == {key: [p["CONSUMER-ID"], p["HOST"]] for key, p in cli.items()}
    assert all(consumer for consumer, _ in owners.values())  # the member that joined owns both partitions
    # the shipped rules load and evaluate without error on real data
    rules = [r for g in prometheus.get("/api/v1/rules")["groups"] for r in g["rules"]]
    shipped = yaml.safe_load((RULES_DIR / "lagmon-rules.yml").read_text())["groups"]
    assert len(rules) == sum(len(g["rules"]) for g in shipped) > 0 and {r["health"] for r in rules} == {"ok"}, rules


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard, what, PromQL) for every panel target and every query variable of every dashboard."""
    out = []
    for path in DASHBOARDS:
        board = json.loads(path.read_text())
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":
                selector, label = re.fullmatch(r"label_values\((.+), *(\w+)\)", variable["definition"]).groups()
                out.append((path.stem, f"variable {variable['name']}", f"group by ({label}) ({selector})"))
        for panel in board["panels"]:
            for target in panel["targets"]:
                out.append((path.stem, f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    return out


def test_every_dashboard_query_returns_series_from_prometheus(stack):
    # the group's name has no regex metacharacters: Grafana would escape them in a `=~` value
    values = {"cluster": CLUSTER, "group": stack["group"], "__rate_interval": "1m"}

    def substitute(expr: str) -> str:
        return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)

    queries = [q for q in dashboard_queries() if not GROUP_TYPE_METRIC.search(q[2])]  # a classic group here
    assert len(queries) > 30

    def empty():
        return [
            (board, what, substitute(e)) for board, what, e in queries if not stack["prometheus"].query(substitute(e))
        ]

    # rates and increases need two scrapes of a series: those of the member's rebalance come a second later
    with contextlib.suppress(AssertionError):
        wait_for(lambda: not empty(), 15, "every dashboard query to return series")
    assert not empty()


def test_the_collector_down_rule_fires_when_the_collector_is_killed(stack):
    prometheus, collector = stack["prometheus"], stack["collector"]
    assert not [a for a in prometheus.firing() if a["labels"]["alertname"].startswith("LagmonCollector")]
    collector.send_signal(signal.SIGKILL)  # no chance to say anything: only Prometheus can tell
    collector.wait(10)
    alert = wait_for(
        lambda: [a for a in prometheus.firing() if a["labels"]["alertname"] == "LagmonCollectorDown"],
        30,
        "LagmonCollectorDown to fire",
    )[0]
    assert alert["labels"] == {
        "alertname": "LagmonCollectorDown",
        "severity": "critical",
        "source": "lagmon",
        "job": "lagmon",
        "instance": prometheus.get("/api/v1/targets")["activeTargets"][0]["labels"]["instance"],
    }
    assert alert["annotations"]["summary"] == f"lagmon collector {alert['labels']['instance']} is down"


def feed(exporter: MetricsExporter, groups, produced_per_s: float, stop: threading.Event) -> None:
    """A collector shard's cycles, four a second, judged by a real health engine: its classic `groups`
    commit 5 behind a log end `produced_per_s` ahead on each partition of SHARED_TOPIC."""
    engine, started = HealthEngine("sharded"), time.monotonic()
    while not stop.wait(0.25):
        log_end = 100 + int(produced_per_s * (time.monotonic() - started))
        moving = dict.fromkeys(SHARED_TOPIC, log_end - 5)
        now = [replace(g, committed=moving) if g.type is GroupType.CLASSIC else g for g in groups]
        partitions = {tp: PartitionOffsets(0, 100) for g in now for tp in g.committed}
        partitions.update(dict.fromkeys(SHARED_TOPIC, PartitionOffsets(0, log_end)))
        snapshot = make_snapshot(int(time.time() * 1000), cluster="sharded", groups=now, partitions=partitions)
        exporter.observe(snapshot, engine.observe(snapshot), 10)


SHARED_TOPIC = (TopicPartition("t", 0), TopicPartition("t", 1))


def test_panels_count_each_partition_once_across_shards_and_show_share_and_streams_groups(tmp_path):
    """Two collector shards whose groups read one topic both export its log ends: the partition count and
    the produced rate count them once. The share and streams panels show those groups as the exporter has
    them. Values are held to the snapshots the shards exported."""
    share, streams = make_share_group("jobs"), make_streams_group("wordcount")
    shards = {1: [make_group("orders"), share], 2: [make_group("billing"), streams]}
    exporters = {shard: MetricsExporter("sharded") for shard in shards}
    ports = {shard: exporter.bind(0) for shard, exporter in exporters.items()}
    stop = threading.Event()
    threads = [exporter.start(stop) for exporter in exporters.values()]
    threads += [threading.Thread(target=feed, args=(exporters[s], shards[s], 10.0, stop)) for s in shards]
    for thread in threads[len(exporters) :]:
        thread.start()
    process, prometheus = start_prometheus(tmp_path, *(f"127.0.0.1:{port}" for port in ports.values()))
    try:
        wait_for(prometheus.ready, 30, "Prometheus to be ready")
        panels = {
            (board.stem, panel["title"], t["refId"]): t["expr"]
            for board in DASHBOARDS
            for panel in json.loads(board.read_text())["panels"]
            for t in panel["targets"]
        }

        def value(key, group="", rate_interval="5s", by=None):  # Grafana's: 4 scrapes at least
            expr = panels[key].replace("$cluster", "sharded").replace("$group", group)
            series = prometheus.query(expr.replace("$__rate_interval", rate_interval))
            return (
                {s["metric"][by]: float(s["value"][1]) for s in series}
                if by
                else [float(s["value"][1]) for s in series]
            )

        produced = ("lagmon-group", "Consumed and produced per second", "B")
        scraped = 'min(count_over_time(kafka_partition_latest_offset{cluster_name="sharded",topic="t"}[5s]))'
        wait_for(lambda: [float(s["value"][1]) for s in prometheus.query(scraped)] >= [5.0], 30, "a full rate window")
        every_partition = {tp for groups in shards.values() for g in groups for tp in g.committed}
        assert len(every_partition) < sum(len(g.committed) for gs in shards.values() for g in gs)  # shared: t
        assert value(("lagmon-collector", "Groups / partitions", "B")) == [len(every_partition)]
        (orders_produced,) = value(produced, "orders")
        assert 15 <= orders_produced <= 25  # 10 records/s on each of t's 2 partitions; counted twice it is 40

        in_flight = value(("lagmon-group", "Share group: records in flight", "A"), "jobs", by="state")
        assert in_flight == {
            state: sum(getattr(sp, state) for sp in share.share.values())
            for state in ("acknowledged", "archived", "redelivering")
        }
        most = max(sp.max_delivery_count for sp in share.share.values())
        assert value(("lagmon-group", "Share group: deliveries and records given up", "A"), "jobs") == [most]
        assert value(("lagmon-group", "Share group: deliveries and records given up", "B"), "jobs") == [0]
        assert value(("lagmon-group", "Streams group: members and tasks", "A"), "wordcount") == [len(streams.members)]
        assert value(("lagmon-group", "Streams group: members and tasks", "B"), "wordcount", by="kind") == {
            kind: sum(len(getattr(m.streams.tasks, kind)) for m in streams.members)
            for kind in ("active", "standby", "warmup")
        }
        checked = {k for k in panels if GROUP_TYPE_METRIC.search(panels[k])}
        assert checked == {
            ("lagmon-group", "Share group: records in flight", "A"),
            ("lagmon-group", "Share group: deliveries and records given up", "A"),
            ("lagmon-group", "Share group: deliveries and records given up", "B"),
            ("lagmon-group", "Streams group: members and tasks", "A"),
            ("lagmon-group", "Streams group: members and tasks", "B"),
        }  # every panel of share and streams groups is held to a value here
    finally:
        stop.set()
        process.terminate()
        process.wait(30)
        for thread in threads:
            thread.join(10)
