"""Share and streams groups as the collector shows them, checked against Kafka's own tools.

A real share group (two ShareConsumers that accept, release and reject) and a real
streams group (two LagmonStreams instances) read everything they were given and go
quiet; the collector runs with its tails. lagmon's `groups`, `lag` and `members`
must then say exactly what kafka-share-groups and kafka-streams-groups say. A
restarted collector continues the same history: no interval is closed and reopened.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from harness import chat_hook, chat_messages, cli_json, run_cli, running, wait_for
from kafka_cli import describe_share_group, describe_streams_group

from monitor.devcluster import LIBS_DIR
from monitor.sim.specs import StreamsSpec, share_ack, streams_command, streams_properties
from monitor.sim.truth import read_truth
from monitor.store import make_engine
from monitor.store.lag import read_lag_history

pytestmark = pytest.mark.integration
RECORDS = 300


def set_group_config(admin: AdminClient, group: str, name: str, value: str) -> None:
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs(
        [ConfigResource("GROUP", group, incremental_configs=[entry])]
    ).values():
        future.result(30)


def share_member(bootstrap: str, group: str, topic: str, client_id: str, stop: threading.Event) -> None:
    """Accepts most records, releases some once (they come back) and rejects a few, until `stop`."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    kinds = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    try:
        while not stop.is_set():
            records = [m for m in consumer.poll(0.5).records() if m.error() is None]
            for m in records:
                consumer.acknowledge(m, kinds[share_ack(m.offset(), m.delivery_count() or 1, 10, 25)])
            if records:
                consumer.commit_sync()
    finally:
        consumer.close()


def streams_tasks(assignments: str) -> dict[str, list[str]]:
    """kafka-streams-groups' "ACTIVE: 0:[1]; 1:[0,2]; STANDBY: ..." as {"active": ["0_1", "1_0", "1_2"], ...}."""
    out: dict[str, list[str]] = {}
    for kind, body in re.findall(r"(ACTIVE|STANDBY|WARMUP):((?:\s*\w+:\[[\d,]*\];)*)", assignments):
        tasks = [f"{s}_{p}" for s, ps in re.findall(r"(\w+):\[([\d,]*)\]", body) for p in ps.split(",") if p]
        out[kind.lower()] = sorted(tasks)
    return out


def our_tasks(row: dict) -> dict[str, list[str]]:
    return {
        kind: sorted(row[f"{kind.upper()}-TASKS"].split(","))
        for kind in ("active", "standby", "warmup")
        if row.get(f"{kind.upper()}-TASKS")
    }


def quiet(bootstrap: str, share_group: str, app: str) -> bool:
    """Every record delivery-complete, every input record processed, assignments settled, as Kafka's tools say;
    False while a group does not exist yet (its members or instances are still starting)."""
    try:
        return (
            all(r["LAG"] == "0" for r in describe_share_group(bootstrap, share_group, "--offsets"))
            and [r["STATE"] for r in describe_streams_group(bootstrap, app, "--state")] == ["Stable"]
            and all(r["OFFSET-LAG"] == "0" for r in describe_streams_group(bootstrap, app, "--offsets"))
        )
    except AssertionError as e:  # the tool failed
        if "GroupIdNotFoundException" in str(e):
            return False
        raise


def open_rows(db, group: str) -> tuple[list, list]:
    """(group_states rows, group_members rows) of `group`, as (valid_from, valid_to)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        states = conn.execute("SELECT valid_from, valid_to FROM group_states WHERE group_id = ?", (group,)).fetchall()
        members = conn.execute("SELECT valid_from, valid_to FROM group_members WHERE group_id = ?", (group,)).fetchall()
    return states, members


def test_share_and_streams_groups_read_as_kafkas_tools_read_them(kafka, unique, tmp_path):
    share_topic, share_group = f"share-{unique}", f"share-{unique}-group"
    words, counts, app = f"words-{unique}", f"counts-{unique}", f"wordcount-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_topics([NewTopic(t, 3, 1) for t in (share_topic, words, counts)]).values():
        future.result(30)
    set_group_config(admin, share_group, "share.auto.offset.reset", "earliest")
    set_group_config(admin, app, "streams.num.standby.replicas", "1")
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(RECORDS):
        producer.produce(share_topic, f"job {i}".encode(), partition=i % 3)
        producer.produce(words, f"the quick brown fox {i % 7}".encode(), partition=i % 3)
    producer.flush(30)

    db = tmp_path / "lagmon.db"
    env = {
        "PATH": "/usr/bin:/bin",
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{db}",
        "LAGMON_OFFSETS_TOPIC": "on",
        "LAGMON_KAFKA_LIBS": str(LIBS_DIR),
    }
    stop = threading.Event()
    members = [
        threading.Thread(target=share_member, args=(kafka.bootstrap, share_group, share_topic, f"worker-{i}", stop))
        for i in range(2)
    ]
    instances = []
    for i in range(2):
        spec = StreamsSpec(kafka.bootstrap, app, f"{app}-{i}", words, counts, LIBS_DIR)
        props = tmp_path / f"{app}-{i}.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in streams_properties(spec, tmp_path / f"state-{i}").items()))
        instances.append(
            subprocess.Popen(streams_command(spec, props), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
    collect = [sys.executable, "-m", "monitor", "collect", "--interval", "1s"]
    try:
        for t in members:
            t.start()
        with running(collect, env, tmp_path / "collect.log"):
            wait_for(
                lambda: quiet(kafka.bootstrap, share_group, app),
                timeout=120,
                interval=2,
                what="both groups to read everything and settle",
            )

            def share_agrees(env=env):
                theirs = {
                    (r["TOPIC"], int(r["PARTITION"])): (int(r["START-OFFSET"]), int(r["LAG"]))
                    for r in describe_share_group(kafka.bootstrap, share_group, "--offsets")
                }
                ours = {
                    (r["TOPIC"], r["PARTITION"]): (r["START-OFFSET"], r["LAG"])
                    for r in cli_json("lag", share_group, env=env)
                }
                return ours == theirs and len(theirs) == 3

            def share_members_agree():
                theirs = {
                    (r["CONSUMER-ID"], r["CLIENT-ID"], r["ASSIGNMENT"])
                    for r in describe_share_group(kafka.bootstrap, share_group, "--members")
                }
                ours = {
                    (r["MEMBER-ID"], r["CLIENT-ID"], r["ASSIGNMENT"]) for r in cli_json("members", share_group, env=env)
                }
                return ours == theirs and len(theirs) == 2

            def streams_agrees(env=env):
                theirs = {
                    (r["TOPIC"], int(r["PARTITION"])): (
                        int(r["CURRENT-OFFSET"]),
                        int(r["LOG-END-OFFSET"]),
                        int(r["OFFSET-LAG"]),
                    )
                    for r in describe_streams_group(kafka.bootstrap, app, "--offsets", "--verbose")
                }
                ours = {
                    (r["TOPIC"], r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"])
                    for r in cli_json("lag", app, env=env)
                }
                return ours == theirs and len(theirs) == 6  # the input topic and the repartition topic

            def streams_members_agree():
                theirs = {
                    (r["MEMBER"], r["PROCESS"], r["CLIENT-ID"], repr(streams_tasks(r["ASSIGNMENTS"])))
                    for r in describe_streams_group(kafka.bootstrap, app, "--members")
                }
                ours = {
                    (r["MEMBER-ID"], r["PROCESS-ID"], r["CLIENT-ID"], repr(our_tasks(r)))
                    for r in cli_json("members", app, env=env)
                }
                return ours == theirs and len(theirs) == 2

            for check in (share_agrees, share_members_agree, streams_agrees, streams_members_agree):
                wait_for(check, timeout=30, interval=1, what=check.__name__)
            groups = {g["GROUP"]: g for g in cli_json("groups", env=env)}
            assert (groups[share_group]["TYPE"], groups[share_group]["STATE"], groups[share_group]["MEMBERS"]) == (
                "share",
                "Stable",
                2,
            )
            assert (groups[app]["TYPE"], groups[app]["STATE"], groups[app]["MEMBERS"]) == ("streams", "Stable", 2)
            before = {g: open_rows(db, g) for g in (share_group, app)}

        restarted_at = int(time.time() * 1000)
        with running(collect, env, tmp_path / "collect-2.log"):
            wait_for(
                lambda: (
                    min(
                        g["LAST-SAMPLE (UTC)"] or ""
                        for g in cli_json("groups", env=env)
                        if g["GROUP"] in (share_group, app)
                    )
                    > time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(restarted_at / 1000 + 2))
                ),
                timeout=60,
                what="the restarted collector to sample both groups",
            )
            assert share_agrees() and streams_members_agree()
        for group in (share_group, app):  # the same open intervals: nothing closed and reopened by the restart
            assert open_rows(db, group) == before[group], group

        # A one-shot look (cron, a first try on a new cluster) sees them too: it reads the tails to their end first.
        once_env = {**env, "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'once.db'}"}
        done = run_cli("collect", "--once", env=once_env, timeout=120)
        assert done.returncode == 0, done.stderr
        once = {g["GROUP"]: (g["TYPE"], g["STATE"], g["MEMBERS"]) for g in cli_json("groups", env=once_env)}
        assert (once[share_group], once[app]) == (("share", "Stable", 2), ("streams", "Stable", 2))
        assert share_agrees(once_env) and streams_agrees(once_env)
    finally:
        stop.set()
        for t in members:
            t.join(30)
        for p in instances:
            p.terminate()
        for p in instances:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)
            if p.poll() is None:
                p.kill()


SHARE_LAG_RULES = """
rules:
  - name: share-lag
    kind: lag_offsets
    above: {above}
    groups: {{allow: "^{group}$"}}
"""


def test_a_stalled_share_member_shows_growing_lag_and_fires_the_lag_rule_once(kafka, unique, tmp_path, httpserver):
    """`sim share`: one member holds its records and stops polling for 8 s while 30 records/s arrive.
    Its partition's share lag grows in lagmon as in Kafka, and a lag rule fires once, then resolves."""
    group = f"sim-share-{unique}-group"
    rules = tmp_path / "rules.yaml"
    rules.write_text(SHARE_LAG_RULES.format(above=40, group=group))
    env = {
        "PATH": "/usr/bin:/bin",
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'lagmon.db'}",
        "LAGMON_OFFSETS_TOPIC": "on",
        "LAGMON_ALERTS_FILE": str(rules),
        "LAGMON_CHANNELS": f"hook={chat_hook(httpserver)}",
    }
    truth = tmp_path / "share.jsonl"
    sim = [sys.executable, "-m", "monitor", "sim", "share", "--bootstrap", kafka.bootstrap, "--suffix", unique]
    collect = [sys.executable, "-m", "monitor", "collect", "--interval", "1s"]
    with running(collect, env, tmp_path / "collect.log"):
        # watching before the sim starts: its member stalls a few seconds in, and a collector starting on a
        # loaded machine (a new database to migrate) once began only after the stall had ended (seen in CI)
        wait_for(lambda: "partitions in" in (tmp_path / "collect.log").read_text(), 120, what="the first cycle")
        with running(
            [*sim, "--truth", str(truth), "--duration", "40"], {**env, "TMPDIR": str(tmp_path)}, tmp_path / "sim.log"
        ):
            stall = wait_for(
                lambda: next((e for e in (read_truth(truth) if truth.exists() else []) if e["event"] == "stall"), None),
                60,
                what="the stall",
            )
            resume = wait_for(
                lambda: next((e for e in read_truth(truth) if e["event"] == "resume"), None), 60, what="the resume"
            )
            wait_for(lambda: titles(httpserver) == ["🔴 FIRING"], 30, what="the firing message")
            wait_for(lambda: "✅ RESOLVED" in titles(httpserver), 60, what="the resolved message after the resume")
    assert titles(httpserver) == ["🔴 FIRING", "✅ RESOLVED"]  # once, however many cycles it held
    # What lagmon stored while the member held its records (the cycles it took then, however many the
    # machine's pace allowed): the stalled partitions' share lag rose.
    stalled = {(t, p) for t, p in stall["partitions"]}
    engine = make_engine(env["LAGMON_DATABASE_URL"])
    during: dict[int, int] = {}
    for point in read_lag_history(engine, "default", group, stall["ts"], resume["ts"] + 1):
        if (point.topic, point.partition) in stalled and point.lag is not None:
            during[point.at] = max(during.get(point.at, 0), point.lag)
    engine.dispose()
    lags = [lag for _, lag in sorted(during.items())]
    assert len(lags) >= 2 and max(lags[1:]) > lags[0] > 0, lags


def titles(httpserver) -> list[str]:
    return [m["title"].split(" [")[0] for m in chat_messages(httpserver)]
