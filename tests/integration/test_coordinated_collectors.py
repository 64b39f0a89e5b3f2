"""Coordinated collectors (`collect --shard kafka`) on a real 3-node cluster and PostgreSQL.

Three collectors join their own consumer group on __consumer_offsets. Each group must
be watched (exported on /metrics) by exactly one of them, the one holding the group's
coordinator partition, the partition whose leader Kafka itself names as the group's
coordinator. SIGKILL one: its groups move to the others within the session timeout
and two intervals, no alert fires again, no chat message is sent twice, no group is
reported gone, and every commit is stored exactly once. A collector started later
takes its share the same way, and a SIGKILLed broker (the collectors' own group
coordinator) changes none of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
import urllib.request
from collections import Counter

import sqlalchemy as sa
from alertmanager_server import free_port
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from harness import chat_hook, chat_messages, cli_json, running, wait_for
from kafka_setup import commit_without_joining, create_topic, produce

from monitor import devcluster
from monitor.shard import coordinator_partition
from monitor.store import make_engine
from monitor.store.alerts import read_alerts
from monitor.store.offsets_tail import read_commits
from monitor.store.schema import events, group_states

INTERVAL_S = 1.0
SESSION_S = 10.0  # the dev cluster's group.consumer.session.timeout.ms
GROUPS = 24
RULES = "rules:\n  - {name: empty-with-lag, kind: empty_with_lag, severity: warning}\n"
_GROUP = re.compile(r'^lagmon_consumergroup_info\{[^}]*group="([^"]+)"', re.M)


class Collector:
    """One `collect --shard kafka` process and what its /metrics says it watches."""

    def __init__(self, stack: contextlib.ExitStack, env: dict, log_dir, n: int):
        self.port = free_port()
        cmd = [sys.executable, "-m", "monitor", "collect", "--shard", "kafka", "--interval", f"{INTERVAL_S}s"]
        self.log = log_dir / f"collector-{n}.log"
        self.proc = stack.enter_context(running([*cmd, "--metrics-port", str(self.port)], env, self.log))

    def metrics(self) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return ""

    def groups(self) -> set[str]:
        return set(_GROUP.findall(self.metrics()))

    def client_id(self) -> str:
        """Its member's client id: the name its worker (a child of `collect`'s supervisor) logged."""
        names = [line.split(" as '")[1].split("'")[0] for line in self.log.read_text().splitlines() if " as '" in line]
        return f"lagmon-collector-{names[-1]}"


def watchers(collectors: list[Collector], groups: list[str]) -> dict[str, list[int]]:
    """group -> the indexes of the collectors exporting it."""
    seen = [c.groups() for c in collectors]
    return {g: [i for i, s in enumerate(seen) if g in s] for g in groups}


def assignments(admin: AdminClient, group: str) -> dict[str, set[int]]:
    """client id -> the __consumer_offsets partitions Kafka assigned that member of the collectors' group."""
    desc = admin.describe_consumer_groups([group])[group].result()
    return {m.client_id: {tp.partition for tp in m.assignment.topic_partitions} for m in desc.members}


def reported(env: dict, held: dict[str, set[int]]) -> bool:
    """`lagmon collectors --json` lists each live collector with the partitions Kafka assigned it."""
    rows = cli_json("collectors", env=env)
    said = {f"lagmon-collector-{r['collector']}": {int(p) for p in r["partitions"]} for r in rows}
    return said == held and all(r["tail_lag"] is not None for r in rows)


def moved(engine) -> set[str]:
    """The groups the store holds a coordinator_moved event for."""
    with engine.connect() as conn:
        return set(conn.execute(sa.select(events.c.group_id).where(events.c.kind == "coordinator_moved")).scalars())


def balanced(admin: AdminClient, group: str, members: int) -> bool:
    try:
        held = assignments(admin, group)
    except Exception:  # the group is not there yet
        return False
    return sorted(len(p) for p in held.values()) == [12 // members] * members


def test_coordinated_collectors_follow_kafkas_placement_and_take_over_without_noise(
    kafka3, postgres, unique, tmp_path, httpserver
):
    bootstrap = kafka3.bootstrap
    topic = f"coord-{unique}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, {0: 20})
    groups = [f"coord-{unique}-g{i}" for i in range(GROUPS)]
    for g in groups:  # Empty groups with lag: the rule fires for each at once
        commit_without_joining(bootstrap, g, {(topic, 0): 5})
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    db_url, cluster = postgres.new_database(), f"c-{unique}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    env |= {
        "LAGMON_BOOTSTRAP_SERVERS": bootstrap,
        "LAGMON_CLUSTER_NAME": cluster,
        "LAGMON_DATABASE_URL": db_url,
        "LAGMON_GROUP_ALLOW": f"^coord-{unique}-",
        "LAGMON_ALERTS_FILE": str(rules),
        "LAGMON_CHANNELS": f"hook={chat_hook(httpserver)}",
    }
    admin = AdminClient({"bootstrap.servers": bootstrap})
    members_group = f"lagmon-collectors-{cluster}"
    with contextlib.ExitStack() as stack:
        collectors = [Collector(stack, env, tmp_path, n) for n in range(3)]
        # 12 partitions, 3 collectors: Kafka's assignor gives each 4
        wait_for(lambda: balanced(admin, members_group, 3), 90, "4 partitions for each collector")
        wait_for(
            lambda: all(len(w) == 1 for w in watchers(collectors, groups).values()),
            90,
            "every group watched by exactly one collector",
        )
        wait_for(lambda: len(chat_messages(httpserver)) >= GROUPS, 30, "one firing message per group")

        # each group's watcher holds its coordinator partition, whose leader is the coordinator Kafka names
        held = assignments(admin, members_group)
        leaders = {
            p: m.leader
            for p, m in admin.list_topics("__consumer_offsets").topics["__consumer_offsets"].partitions.items()
        }
        coordinators = {g: d.result().coordinator.id for g, d in admin.describe_consumer_groups(groups).items()}
        owner = watchers(collectors, groups)
        # what they say of themselves: `lagmon collectors` and /metrics agree with Kafka's assignment
        wait_for(lambda: reported(env, held), 20, "`lagmon collectors` naming each collector's partitions")
        for c in collectors:
            metrics = c.metrics()
            assert f'lagmon_collector_groups_held{{cluster_name="{cluster}",collector=' in metrics
            assert re.search(r"lagmon_collector_partitions_held\{[^}]*\} 4\n", metrics), metrics
        for g in groups:
            partition = coordinator_partition(g, 12)
            assert partition in held[collectors[owner[g][0]].client_id()], g
            assert coordinators[g] == leaders[partition], g

        # SIGKILL the collector with the most groups; the others take them within a session and two intervals
        victim = max(range(3), key=lambda i: sum(owner[g] == [i] for g in groups))
        orphans = [g for g in groups if owner[g] == [victim]]
        assert orphans
        os.killpg(collectors[victim].proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        survivors = [c for i, c in enumerate(collectors) if i != victim]
        wait_for(
            lambda: all(len(w) == 1 for w in watchers(survivors, orphans).values()),
            SESSION_S + 2 * INTERVAL_S + 10,
            "the dead collector's groups watched by a survivor",
        )
        moved_s = time.monotonic() - killed_at
        for g in orphans[:3]:  # commits read by the new owners' tails are stored once each
            commit_without_joining(bootstrap, g, {(topic, 0): 7})

        # a collector started later takes a share of the partitions, and of the groups
        late = Collector(stack, env, tmp_path, 3)
        everyone = [*survivors, late]
        wait_for(lambda: late.groups(), 60, "the late collector watching some groups")
        wait_for(
            lambda: all(len(w) == 1 for w in watchers(everyone, groups).values()),
            30,
            "every group watched by exactly one collector again",
        )
        time.sleep(3 * INTERVAL_S)

        # SIGKILL the broker coordinating the collectors' own group (it leads a third of __consumer_offsets
        # and of the groups): the groups' coordinators and the partitions it led move to the other brokers,
        # and while they move librdkafka answers some log offsets as -1001; every group stays watched by
        # exactly one collector, and none says anything twice or reads a lag of 0 (checked below)
        dead = admin.describe_consumer_groups([members_group])[members_group].result().coordinator.id
        devcluster.stop_node(kafka3.dir, dead, kill=True)
        engine = make_engine(db_url)
        try:
            time.sleep(SESSION_S)  # long enough for a member that lost touch to lose its partitions
            wait_for(
                lambda: all(len(w) == 1 for w in watchers(everyone, groups).values()),
                60,
                "every group watched by exactly one collector with a broker down",
            )
            # the moves are seen while the broker is still down (a busy machine's cycles see them late)
            dead_ones = {g for g in groups if coordinators[g] == dead}
            wait_for(lambda: moved(engine) >= dead_ones, 60, "a coordinator_moved event for the dead broker's groups")
            assert all(c.proc.poll() is None for c in everyone)
        finally:
            devcluster.start_node(kafka3.dir, dead)
        admin = AdminClient({"bootstrap.servers": bootstrap})  # one that never knew the dead broker (librdkafka#4605)

        # the collectors' own positions on __consumer_offsets, committed to their group for any Kafka tool
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(members_group)])
        positions = {tp.partition: tp.offset for tp in listed[members_group].result().topic_partitions}
        assert sorted(positions) == list(range(12)) and min(positions.values()) >= 0, positions

    assert moved_s <= SESSION_S + 2 * INTERVAL_S + 3, f"groups unwatched for {moved_s:.1f}s"
    fired = read_alerts(engine, cluster, resolved_since=0)
    assert sorted((a.group_id, a.state) for a in fired) == [(g, "firing") for g in sorted(groups)]
    assert len(chat_messages(httpserver)) == GROUPS  # none sent twice
    with engine.connect() as conn:
        said = Counter(conn.execute(sa.select(events.c.kind, events.c.group_id)).all())
        states = conn.execute(sa.select(group_states.c.state).where(group_states.c.cluster == cluster)).all()
    assert {state for (state,) in states} == {"Empty"}, states
    assert {kind for kind, _ in said} <= {"group_appeared", "coordinator_moved"}, said
    assert max(said.values(), default=1) == 1, said
    assert moved(engine) == dead_ones  # the dead broker's groups, each once
    for g in groups:
        offsets = [c.offset for c in read_commits(engine, cluster, g)]
        assert offsets == ([5, 7] if g in orphans[:3] else [5]), g
