"""Alerts end to end: a real broker, real workloads, a real HTTP receiver standing in for chat.

The receiver is a generic JSON webhook (Apprise `json://`), which is what Slack,
Teams or Mattermost hooks look like from lagmon's side: one POST per message.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic
from harness import chat_hook, chat_messages, error_line, wait_for

from monitor.alerts.engine import AlertEngine
from monitor.alerts.notify import OutboxSender
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.kafka import KafkaSampler
from monitor.models import RecordTime
from monitor.sim.truth import read_truth
from monitor.store import Store, make_engine, upgrade
from monitor.store.alerts import read_alerts, read_outbox

POLL_S = 0.5


class Watch:
    """A collector with the alert engine and the outbox sender, sampling one group in a thread."""

    def __init__(self, bootstrap: str, db_url: str, group: str, rules_yaml: str, channels: dict[str, str]):
        self.engine = make_engine(db_url)
        rules = parse_rules(rules_yaml, "test-rules.yaml", channels)
        self.sender = OutboxSender(self.engine, "test", rules.channels)
        self.alerts = AlertEngine(self.engine, "test", rules, dashboard_url="http://dash.local/", sender=self.sender)
        sampler = KafkaSampler({"bootstrap.servers": bootstrap}, "test", wants_group=lambda g: g == group, timeout_s=5)
        health = HealthStage(self.engine, HealthEngine("test", rules.evaluator))
        self.collector = Collector(sampler, Store(self.engine), "test", health=health, observers=[self.alerts])
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.collector.run, args=(POLL_S, self.stop_event), daemon=True)

    def __enter__(self):
        self.sending = self.sender.start(self.stop_event)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join(timeout=30)
        self.sending.join(timeout=5)
        self.engine.dispose()
        return False


def receiver(httpserver):
    return {"hook": chat_hook(httpserver)}


def titles(httpserver) -> list[str]:
    return [m["title"].split(" [")[0] for m in chat_messages(httpserver)]


STALL_RULES = """
evaluation: {window: 5, min_complete: 0.5}
rules:
  - {name: consumer-stuck, kind: status, in: [STOP, STALL], for: 1s, severity: critical}
"""


def test_stalled_consumer_fires_once_and_resolves_once_across_a_collector_restart(kafka, unique, tmp_path, httpserver):
    channels = receiver(httpserver)
    db_url = f"sqlite:///{tmp_path / 'alerts.db'}"
    upgrade(db_url)
    group = f"sim-stalled-{unique}-group"
    truth_path = tmp_path / "stalled.truth.jsonl"
    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "sim",
            "stalled",
            "--bootstrap",
            kafka.bootstrap,
            "--suffix",
            unique,
            "--stall-after",
            "4",
            "--recover-after",
            "12",
            "--duration",
            "120",
            "--truth",
            str(truth_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with Watch(kafka.bootstrap, db_url, group, STALL_RULES, channels) as watch:
            wait_for(lambda: "🔴 FIRING" in titles(httpserver), 45, "the firing message")
            fired = read_alerts(watch.engine, "test")
        # The collector restarts while the alert fires: it must not announce it again.
        with Watch(kafka.bootstrap, db_url, group, STALL_RULES, channels) as watch:
            wait_for(lambda: "✅ RESOLVED" in titles(httpserver), 45, "the resolved message")
            time.sleep(2 * POLL_S)  # a duplicate would have been queued by now
            outbox = read_outbox(watch.engine)
            (episode,) = read_alerts(watch.engine, "test", resolved_since=0)
    finally:
        sim.terminate()
        sim.wait(timeout=60)
    assert titles(httpserver) == ["🔴 FIRING", "✅ RESOLVED"]
    truth = {e["event"]: e["ts"] for e in read_truth(truth_path) if e["event"] in ("stall", "resume")}
    # fired because of the stall, resolved only once the consumer really resumed (not by the restart)
    assert truth["stall"] < episode.fired_at < truth["resume"] < episode.resolved_at
    assert [(a.rule, a.group_id, a.state) for a in fired] == [("consumer-stuck", group, "firing")]
    first = chat_messages(httpserver)[0]["message"]
    assert "status STOP" in first and f"page=group&group={group}" in first and "Worst partitions:" in first
    assert [(row.kind, row.channel, row.sent_at is not None) for row in outbox] == [
        ("firing", "hook", True),
        ("resolved", "hook", True),
    ]


EMPTY_RULES = """
rules:
  - {name: empty-with-lag, kind: empty_with_lag, severity: warning}
"""


def commit_offsets(bootstrap: str, group: str, topic: str, offset: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[KTP(topic, 0, offset)], asynchronous=False)
            return
        except Exception as e:  # a fresh cluster: coordinator not ready yet
            if time.monotonic() > deadline or not getattr(e.args[0], "retriable", lambda: False)():
                raise
            time.sleep(0.5)
        finally:
            consumer.close()


def test_message_waits_in_the_outbox_while_the_receiver_is_down_and_arrives_once(kafka, unique, tmp_path, httpserver):
    from confluent_kafka import Producer

    channels = receiver(httpserver)
    topic, group = f"alerts-down-{unique}", f"alerts-down-{unique}-group"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for _ in range(10):
        producer.produce(topic, b"x", partition=0)
    assert producer.flush(30) == 0
    commit_offsets(kafka.bootstrap, group, topic, 2)  # an Empty group 8 records behind
    db_url = f"sqlite:///{tmp_path / 'down.db'}"
    upgrade(db_url)
    httpserver.stop()  # chat is down
    with Watch(kafka.bootstrap, db_url, group, EMPTY_RULES, channels) as watch:
        wait_for(lambda: any(r.attempts >= 2 for r in read_outbox(watch.engine)), 20, "two failed attempts")
        httpserver.start()  # chat is back
        wait_for(lambda: titles(httpserver) == ["🔴 FIRING"], 30, "the firing message after the outage")
        commit_offsets(kafka.bootstrap, group, topic, 10)  # caught up: resolves
        wait_for(lambda: len(titles(httpserver)) >= 2, 30, "the resolved message")
        time.sleep(2 * POLL_S)
        (row_firing, row_resolved) = read_outbox(watch.engine)
    assert titles(httpserver) == ["🔴 FIRING", "✅ RESOLVED"]
    assert (row_firing.attempts >= 3, row_firing.sent_at is not None, row_resolved.attempts) == (True, True, 1)
    assert "Empty with 8 offsets of lag" in chat_messages(httpserver)[0]["message"]


def test_a_broken_rules_file_stops_the_collector_from_starting(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: a\n    kind: lag_offsets\n    above: lots\n")
    env = {
        "LAGMON_ALERTS_FILE": str(rules),
        "LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:1",
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "collect", "--once"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert error_line(done.stderr) == f"{rules} line 4: rule 'a': above must be a finite number >= 0, got 'lots'"


CRASH_RULES = """
rules:
  - {name: rebalancing, kind: rebalances, more_than: 0, within: 5m, severity: warning}
  - {name: members-lost, kind: members_below, below: 3, severity: critical}
"""


def test_crashed_member_fires_the_rebalance_and_members_rules_once_each(kafka, unique, tmp_path, httpserver):
    channels = receiver(httpserver)
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    upgrade(db_url)
    group = f"sim-crash-{unique}-group"
    truth_path = tmp_path / "crash.truth.jsonl"
    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "sim",
            "crash",
            "--bootstrap",
            kafka.bootstrap,
            "--suffix",
            unique,
            "--duration",
            "120",
            "--truth",
            str(truth_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def phase(name):
        return truth_path.exists() and any(
            e["event"] == "phase" and e.get("name") == name for e in read_truth(truth_path)
        )

    try:
        wait_for(lambda: phase("settled"), 60, "the three members to form the group")
        with Watch(kafka.bootstrap, db_url, group, CRASH_RULES, channels):
            wait_for(lambda: len(titles(httpserver)) >= 2, 45, "two firing messages")
            time.sleep(2 * POLL_S)
    finally:
        sim.terminate()
        sim.wait(timeout=60)
    got = sorted(
        (m["title"].split(" [")[0], m["title"].split("] ")[1].split(":")[0]) for m in chat_messages(httpserver)
    )
    assert got == [("🔴 FIRING", "members-lost"), ("🔴 FIRING", "rebalancing")]
    lost = next(m["message"] for m in chat_messages(httpserver) if "members-lost" in m["title"])
    assert lost.startswith("2 members (fewer than 3)")


def test_exact_mode_reads_the_timestamp_of_the_record_at_the_committed_offset(kafka, unique):
    from confluent_kafka import Producer

    from monitor.kafka import RecordTimestampReader
    from monitor.models import TopicPartition

    topic = f"alerts-ts-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, 2)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    base = 1_700_000_000_000
    for i in range(5):
        producer.produce(topic, b"x", partition=0, timestamp=base + i * 1000)
        producer.produce(topic, b"y", partition=1, timestamp=base + 60_000 + i * 1000)
    assert producer.flush(30) == 0
    reader = RecordTimestampReader({"bootstrap.servers": kafka.bootstrap})
    try:
        got = reader.fetch_timestamps({TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 0}, timeout_s=10)
        assert got == {
            TopicPartition(topic, 0): RecordTime(base + 3000, log_append=False),
            TopicPartition(topic, 1): RecordTime(base + 60_000, log_append=False),
        }
        # nothing at the log end yet: left out rather than guessed
        assert reader.fetch_timestamps({TopicPartition(topic, 0): 5}, timeout_s=1) == {}
    finally:
        reader.close()
    groups = [g.group_id for g in admin.list_consumer_groups().result(10).valid]
    assert RecordTimestampReader.GROUP_ID not in groups  # it never formed or committed a group
