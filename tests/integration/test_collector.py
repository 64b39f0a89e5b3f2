"""The collector against a real broker: exact numbers, outages, changes, crashes, bad input."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewPartitions
from harness import error_line, log_messages, run_cli, seconds_logging
from kafka_cli import describe_groups
from kafka_join import join_group, leave_group
from kafka_setup import commit_without_joining, create_topic, produce

from monitor import devcluster
from monitor.collector import Collector
from monitor.kafka import KafkaSampler
from monitor.models import EventKind, GroupState
from monitor.store import Store, make_engine, read_events, read_group_lag, read_groups, read_samples, upgrade


def make_collector(bootstrap: str, db_path, cluster: str = "test", **sampler_kw) -> Collector:
    url = f"sqlite:///{db_path}"
    upgrade(url)
    engine = make_engine(url)
    sampler = KafkaSampler({"bootstrap.servers": bootstrap}, cluster, timeout_s=5, **sampler_kw)
    return Collector(sampler, Store(engine), cluster)


def events_of(collector: Collector, kind: EventKind, group: str) -> list:
    return [e for e in read_events(collector.store.engine, "test", group) if e.kind is kind]


def test_lag_matches_kafka_consumer_groups_exactly(kafka, unique, tmp_path):
    topic = f"acc-{unique}"
    create_topic(kafka.bootstrap, topic, 4)
    produce(kafka.bootstrap, topic, {0: 50, 1: 30, 2: 7, 3: 0})
    simple = f"acc-simple-{unique}"
    commit_without_joining(kafka.bootstrap, simple, {(topic, 0): 20, (topic, 1): 30, (topic, 2): 1})
    live = f"acc-live-{unique}"
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": live,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    consumed = 0
    deadline = time.monotonic() + 30
    while consumed < 40 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            consumed += 1
    consumer.commit(asynchronous=False)
    try:
        collector = make_collector(kafka.bootstrap, tmp_path / "acc.db")
        assert collector.poll_once().ok
        expected = describe_groups(kafka.bootstrap, simple, live)
        ours = {
            (g, p.topic, p.partition): p
            for g in (simple, live)
            for p in read_group_lag(collector.store.engine, "test", g)
        }
        assert set(ours) == set(expected)
        for key, row in expected.items():
            mine = ours[key]
            assert (
                str(mine.committed if mine.committed is not None else "-"),
                str(mine.log_end),
                str(mine.lag if mine.lag is not None else "-"),
            ) == (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"]), key
        groups = {g.group_id: g for g in read_groups(collector.store.engine, "test")}
        assert groups[simple].state is GroupState.EMPTY and groups[simple].members == 0
        assert groups[live].state is GroupState.STABLE and groups[live].members == 1
    finally:
        consumer.close()


def test_the_cli_on_postgresql_reports_what_kafka_reports(kafka, unique, postgres):
    topic = f"pg-{unique}"
    create_topic(kafka.bootstrap, topic, 2)
    produce(kafka.bootstrap, topic, {0: 12, 1: 5})
    group = f"pg-group-{unique}"
    commit_without_joining(kafka.bootstrap, group, {(topic, 0): 4})
    env = {
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": postgres.new_database(),
        "LAGMON_GROUP_ALLOW": f"^{group}$",
    }
    collected = run_cli("collect", "--once", env=env)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    shown = run_cli("lag", group, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    ours = {
        (p["TOPIC"], p["PARTITION"]): (p["CURRENT-OFFSET"], p["LOG-END-OFFSET"], p["LAG"])
        for p in json.loads(shown.stdout)
    }
    expected = {
        (t, p): tuple(None if row[k] == "-" else int(row[k]) for k in ("CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"))
        for (_, t, p), row in describe_groups(kafka.bootstrap, group).items()
    }
    assert ours == expected
    assert expected[(topic, 0)] == (4, 12, 8)


def test_a_connect_group_is_never_an_error(kafka, unique, tmp_path):
    """Connect workers form classic groups of protocol type "connect". librdkafka's group
    listing leaves them out; if one is described anyway (it changed type between listing
    and describing), it is recorded with a reason, and the cycle stays healthy."""
    connect, consumer_group = f"connect-{unique}", f"beside-connect-{unique}"
    coordinator, member = join_group(kafka.bootstrap, connect, "connect")
    create_topic(kafka.bootstrap, f"t-{unique}", 1)
    commit_without_joining(kafka.bootstrap, consumer_group, {(f"t-{unique}", 0): 0})
    try:
        collector = make_collector(kafka.bootstrap, tmp_path / "connect.db")
        cycle = collector.poll_once()
        assert cycle.ok, cycle.errors
        listed = {g.group_id for g in read_groups(collector.store.engine, "test")}
        assert consumer_group in listed and connect not in listed

        errors: list[str] = []
        described, not_consumer = collector.sampler._describe([connect], errors)
        assert errors == [] and described == {}
        assert not_consumer[connect].startswith("not a consumer group: ") and "connect" in not_consumer[connect]
    finally:
        leave_group(coordinator, connect, member)


def test_broker_outage_is_recorded_and_sampling_recovers(tmp_path, unique):
    cluster = devcluster.start(tmp_path / "kafka")
    try:
        topic = f"out-{unique}"
        create_topic(cluster.bootstrap, topic, 2)
        produce(cluster.bootstrap, topic, {0: 5, 1: 5})
        commit_without_joining(cluster.bootstrap, "out-group", {(topic, 0): 3, (topic, 1): 5})
        collector = make_collector(cluster.bootstrap, tmp_path / "out.db")
        assert collector.poll_once().ok

        devcluster.stop_node(cluster.dir, 1)
        failed = collector.poll_once()
        assert not failed.ok
        assert failed.errors[0].startswith(f"cannot sample Kafka at {cluster.bootstrap}")

        devcluster.start_node(cluster.dir, 1)
        deadline = time.monotonic() + 60
        while not (result := collector.poll_once()).ok and time.monotonic() < deadline:
            time.sleep(1)
        assert result.ok
        samples = read_samples(collector.store.engine, "test")
        assert [s.ok for s in samples][:2] == [True, False]
        assert samples[-1].ok
        lag = read_group_lag(collector.store.engine, "test", "out-group")
        assert [(p.partition, p.committed, p.lag) for p in lag] == [(0, 3, 2), (1, 5, 0)]
    finally:
        devcluster.destroy(cluster.dir)


def test_group_and_topic_changes_become_events(kafka, unique, tmp_path):
    topic, doomed_topic = f"chg-{unique}", f"chg-doomed-{unique}"
    create_topic(kafka.bootstrap, topic, 2)
    create_topic(kafka.bootstrap, doomed_topic, 1)
    produce(kafka.bootstrap, topic, {0: 3, 1: 3})
    produce(kafka.bootstrap, doomed_topic, {0: 3})
    keeper, doomed = f"chg-keeper-{unique}", f"chg-doomed-{unique}"
    commit_without_joining(kafka.bootstrap, keeper, {(topic, 0): 1, (topic, 1): 2})
    commit_without_joining(kafka.bootstrap, doomed, {(doomed_topic, 0): 2})
    collector = make_collector(kafka.bootstrap, tmp_path / "chg.db")
    assert collector.poll_once().ok

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
    admin.delete_consumer_groups([doomed])[doomed].result(30)
    admin.delete_topics([doomed_topic])[doomed_topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = collector.poll_once()
        assert result.ok
        if events_of(collector, EventKind.GROUP_DISAPPEARED, doomed) and events_of(
            collector, EventKind.PARTITIONS_ADDED, keeper
        ):
            break
        time.sleep(0.5)
    added = events_of(collector, EventKind.PARTITIONS_ADDED, keeper)
    assert [e.detail["topic"] for e in added] == [topic]
    assert len(events_of(collector, EventKind.GROUP_DISAPPEARED, doomed)) == 1
    assert doomed not in {g.group_id for g in read_groups(collector.store.engine, "test")}
    assert [(p.partition, p.committed) for p in read_group_lag(collector.store.engine, "test", keeper)] == [
        (0, 1),
        (1, 2),
    ]


@pytest.mark.failover
def test_stopping_the_coordinator_moves_it_and_sampling_goes_on(kafka3, unique, tmp_path):
    topic, group = f"fo-{unique}", f"fo-group-{unique}"
    create_topic(kafka3.bootstrap, topic, 3)
    produce(kafka3.bootstrap, topic, {0: 5, 1: 5, 2: 5})
    commit_without_joining(kafka3.bootstrap, group, {(topic, 0): 1, (topic, 1): 2, (topic, 2): 3})
    collector = make_collector(kafka3.bootstrap, tmp_path / "fo.db")
    deadline = time.monotonic() + 30
    while not (collector.poll_once().ok and group in collector.prev.groups) and time.monotonic() < deadline:
        time.sleep(0.5)  # a brand-new group can take a moment to be listed by every broker
    before = collector.prev.groups[group].coordinator
    devcluster.stop_node(kafka3.dir, before)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            result = collector.poll_once()
            now = collector.prev.groups.get(group) if result.ok else None
            if now is not None and now.coordinator not in (None, before):
                break
            time.sleep(1)
        moved = events_of(collector, EventKind.COORDINATOR_MOVED, group)
        assert len(moved) == 1, (result.errors, now)
        assert moved[0].detail["from"] == before and moved[0].detail["to"] != before
        assert collector.poll_once().ok
        lag = read_group_lag(collector.store.engine, "test", group)
        assert [(p.partition, p.committed) for p in lag] == [(0, 1), (1, 2), (2, 3)]
    finally:
        devcluster.start_node(kafka3.dir, before)


def test_sigkill_mid_write_leaves_a_sound_database_and_a_reader_never_sees_locked(kafka, unique, tmp_path):
    topic = f"kill-{unique}"
    create_topic(kafka.bootstrap, topic, 20)
    produce(kafka.bootstrap, topic, dict.fromkeys(range(20), 2))
    for i in range(30):
        commit_without_joining(kafka.bootstrap, f"kill-{unique}-{i}", {(topic, p): 1 for p in range(20)})
    db = tmp_path / "kill.db"
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{db}",
        "LAGMON_CLUSTER_NAME": "test",
        "LAGMON_GROUP_ALLOW": f"^kill-{unique}-",
    }
    upgrade(f"sqlite:///{db}")
    reader_errors: list[str] = []
    reads = 0
    stop = threading.Event()

    def read_all_the_time():
        nonlocal reads
        engine = make_engine(f"sqlite:///{db}")
        while not stop.is_set():
            try:
                read_groups(engine, "test")
                reads += 1
            except Exception as e:
                reader_errors.append(str(e))

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        for kill_after in (1.5, 2.3, 3.1):
            proc = subprocess.Popen(
                [sys.executable, "-m", "monitor", "collect", "--interval", "0.05"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            time.sleep(kill_after)
            os.killpg(proc.pid, signal.SIGKILL)  # the supervisor and its worker, which writes
            proc.wait()
    finally:
        stop.set()
        reader.join()
    assert reader_errors == []
    assert reads > 50
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "collect", "--once"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    groups = read_groups(make_engine(f"sqlite:///{db}"), "test")
    assert len(groups) == 30 and all(g.total_lag == 20 for g in groups)


def test_unreachable_bootstrap_is_one_clear_line_at_once(tmp_path):
    """librdkafka says at once that the only broker refused: the cycle says so without waiting out a
    request timeout (it took 20 s: 10 waiting for the tails, 10 for the listing)."""
    done = run_cli(
        "collect",
        "--once",
        env={"LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:1", "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'u.db'}"},
    )
    assert done.returncode == 1
    last = log_messages(done.stderr)[-1]
    assert "sample failed: cannot sample Kafka at 127.0.0.1:1" in last
    assert "Connection refused" in last
    assert seconds_logging(done.stderr) < 3


def test_wrong_security_settings_fail_clearly_and_never_show_the_password(kafka, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=lagmon\nsasl.password=hunter2-very-secret\n"
    )
    done = run_cli(
        "collect",
        "--once",
        env={
            "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
            "LAGMON_KAFKA_CONFIG": str(props),
            "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}",
        },
    )
    assert done.returncode == 1
    assert f"sample failed: cannot sample Kafka at {kafka.bootstrap}" in done.stderr
    assert seconds_logging(done.stderr) < 3  # the broker hangs up on SASL at once: no timeout is waited out
    assert "hunter2" not in done.stdout + done.stderr
    assert b"hunter2" not in (tmp_path / "a.db").read_bytes()


def test_unknown_group_in_lag_is_one_clear_line(kafka, unique, tmp_path):
    env = {"LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap, "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'g.db'}"}
    assert run_cli("collect", "--once", env=env).returncode == 0
    done = run_cli("lag", f"no-such-group-{unique}", env=env)
    assert done.returncode == 2
    assert error_line(done.stderr) == f"group 'no-such-group-{unique}' is not in the store for cluster 'default'"


@pytest.mark.parametrize(
    "variable, value, message",
    [
        (
            "LAGMON_POLL_INTERVAL",
            "often",
            "LAGMON_POLL_INTERVAL: 'often' is not a duration (use e.g. 10s, 1m, 500ms)",
        ),
        ("LAGMON_GROUP_ALLOW", "(unclosed", "LAGMON_GROUP_ALLOW: '(unclosed' is not a valid regular expression"),
        (
            "LAGMON_KAFKA_CONFIG",
            "/nonexistent/client.properties",
            "LAGMON_KAFKA_CONFIG: cannot read /nonexistent/client.properties: No such file or directory",
        ),
    ],
)
def test_malformed_settings_name_the_variable(tmp_path, variable, value, message):
    done = run_cli(
        "collect",
        "--once",
        env={
            "LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:1",
            variable: value,
            "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
        },
    )
    assert done.returncode == 2
    assert error_line(done.stderr).startswith(message)


@pytest.mark.failover
def test_idle_groups_coordinator_from_metadata_equals_the_described_one(kafka3, unique, tmp_path):
    """Empty groups are not described each cycle; the coordinator lagmon derives must be Kafka's."""
    topic = f"idle-{unique}"
    create_topic(kafka3.bootstrap, topic, 1)
    produce(kafka3.bootstrap, topic, {0: 1})
    groups = [f"idle-{unique}-{i}" for i in range(12)]
    for group in groups:
        commit_without_joining(kafka3.bootstrap, group, {(topic, 0): 1})
    snapshot = KafkaSampler({"bootstrap.servers": kafka3.bootstrap}, "test").fetch_snapshot()
    admin = AdminClient({"bootstrap.servers": kafka3.bootstrap})  # referenced: a collected client never resolves
    described = admin.describe_consumer_groups(groups)
    expected = {g: f.result(30).coordinator.id for g, f in described.items()}
    assert {g: snapshot.groups[g].coordinator for g in groups} == expected
    assert len(set(expected.values())) > 1  # the groups really are spread over the nodes


def test_two_clusters_share_one_database_and_reads_pick_one(kafka, unique, tmp_path):
    topic = f"fleet-{unique}"
    create_topic(kafka.bootstrap, topic, 1)
    produce(kafka.bootstrap, topic, {0: 4})
    commit_without_joining(kafka.bootstrap, f"fleet-{unique}", {(topic, 0): 1})
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    for name in ("east", "west"):
        env = {
            "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
            "LAGMON_DATABASE_URL": db,
            "LAGMON_CLUSTER_NAME": name,
            "LAGMON_GROUP_ALLOW": f"^fleet-{unique}$",
        }
        assert run_cli("collect", "--once", env=env).returncode == 0
    env = {"LAGMON_DATABASE_URL": db}
    groups = run_cli("groups", "--json", env=env)
    assert sorted((g["CLUSTER"], g["GROUP"], g["TOTAL-LAG"]) for g in json.loads(groups.stdout)) == [
        ("east", f"fleet-{unique}", 3),
        ("west", f"fleet-{unique}", 3),
    ]
    ambiguous = run_cli("lag", f"fleet-{unique}", env=env)
    assert ambiguous.returncode == 2
    assert error_line(ambiguous.stderr) == "the database holds 2 clusters: pick one with --cluster (east, west)"
    picked = run_cli("lag", f"fleet-{unique}", "--cluster", "west", "--json", env=env)
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in json.loads(picked.stdout)] == [(0, 1, 3)]


def test_topics_left_out_are_neither_measured_nor_fetched_and_their_groups_stay(kafka, unique, tmp_path):
    kept, left = f"kept-{unique}", f"left-{unique}"
    create_topic(kafka.bootstrap, kept, 2)
    create_topic(kafka.bootstrap, left, 1)
    produce(kafka.bootstrap, kept, {0: 5, 1: 3})
    produce(kafka.bootstrap, left, {0: 9})
    both, only_left = f"topics-both-{unique}", f"topics-left-{unique}"
    commit_without_joining(kafka.bootstrap, both, {(kept, 0): 1, (kept, 1): 3, (left, 0): 2})
    commit_without_joining(kafka.bootstrap, only_left, {(left, 0): 4})
    env = {
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 't.db'}",
        "LAGMON_GROUP_ALLOW": f"^topics-(both|left)-{unique}$",
        "LAGMON_TOPIC_DENY": f"^{left}$",
    }
    done = run_cli("collect", "--once", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"topics matching '.*' except '^{left}$'" in done.stderr  # the start-up log line
    shown = json.loads(run_cli("lag", both, "--json", env=env).stdout)
    assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in shown] == [
        (kept, 0, 1, 4),
        (kept, 1, 3, 0),
    ]
    groups = {g["GROUP"]: g for g in json.loads(run_cli("groups", "--json", env=env).stdout)}
    assert set(groups) == {both, only_left}  # a group whose topics are all left out is still listed
    assert groups[both]["TOTAL-LAG"] == 4 and groups[only_left]["PARTITIONS"] == 0, groups
    assert json.loads(run_cli("lag", only_left, "--json", env=env).stdout) == []

    sampler = KafkaSampler(
        {"bootstrap.servers": kafka.bootstrap},
        "test",
        wants_group=lambda g: g in (both, only_left),
        wants_topic=lambda t: t != left,
        timeout_s=5,
    )
    snapshot = sampler.fetch_snapshot()
    assert {tp.topic for tp in snapshot.partitions} == {kept}  # no log offsets fetched for the topic left out
    assert snapshot.groups[only_left].committed == {}
