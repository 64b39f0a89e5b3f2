"""Collector shards sharing one store (SQLite and PostgreSQL): what each writes, what readers see of all.

Two Store objects with shards 1/2 and 2/2 stand for two collector processes;
the snapshots are synthetic (the Kafka side is tests/integration/test_shards.py).
"""

from __future__ import annotations

import threading

import sqlalchemy as sa
from factories import T0, make_group, make_snapshot, owned_groups

from monitor.alerts.engine import AlertEngine
from monitor.alerts.rules import parse_rules
from monitor.health import HealthEngine
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    Member,
    PartitionOffsets,
    TopicPartition,
)
from monitor.offsets_topic.history import CommitRow, TailUpdate
from monitor.shard import Shard
from monitor.store import (
    RetentionPolicy,
    Store,
    apply_retention,
    read_group_lag,
    read_groups,
    read_lag_history,
    read_shards,
)
from monitor.store.alerts import read_alerts
from monitor.store.lag import read_lag_series, read_total_lag_series
from monitor.store.lag_seconds import read_max_lag_seconds
from monitor.store.offsets_tail import read_commits, read_tail_positions, read_tail_status, write_tail_update
from monitor.store.schema import consumer_groups, group_states, topic_partitions
from monitor.store.sql import intern_ids
from monitor.store.topics import read_topic_partitions

TP = TopicPartition
ONE, TWO = Shard(1, 2), Shard(2, 2)


A = owned_groups(ONE, 3, "app")  # shard 1's groups
B = owned_groups(TWO, 3, "app")  # shard 2's groups


def group(gid: str, committed: int) -> GroupSnapshot:
    """A group on its own topic and on one topic all shards sample, one member owning both."""
    tp, shared = TP(f"topic-{gid}", 0), TP("shared", 0)
    member = Member(f"m-{gid}", "client", "/10.0.0.1", assignment=(tp, shared))
    return make_group(gid, committed={tp: committed, shared: committed}, members=[member])


def snapshot(at: int, gids: list[str], committed: int = 90, log_end: int = 100) -> ClusterSnapshot:
    groups = [group(g, committed) for g in gids]
    parts = {tp: PartitionOffsets(0, log_end) for g in groups for tp in g.committed}
    return make_snapshot(at, groups=groups, partitions=parts, duration_ms=0)


def open_groups(engine) -> list[str]:
    with engine.connect() as conn:
        return sorted(
            conn.execute(sa.select(group_states.c.group_id).where(group_states.c.valid_to.is_(None))).scalars()
        )


def test_two_shards_intern_the_same_keys_and_both_get_the_one_id(db_engine):
    one, two = Store(db_engine, ONE), Store(db_engine, TWO)
    one.write_snapshot(snapshot(T0, A[:1]))
    two.write_snapshot(snapshot(T0 + 1, B[:1]))  # both caches are loaded now
    # A topic both shards meet for the first time, each with a cache that has never seen it
    new = {TP("fresh", 0): PartitionOffsets(0, 5)}
    for store, gid, at in ((one, A[0], T0 + 2), (two, B[0], T0 + 3)):
        g = group(gid, 90)
        g = GroupSnapshot(
            g.group_id,
            g.state,
            g.type,
            assignor="range",
            members=g.members,
            committed={**g.committed, TP("fresh", 0): 3},
        )
        store.write_snapshot(ClusterSnapshot("c1", at, {gid: g}, {**snapshot(at, [gid]).partitions, **new}))
    with db_engine.connect() as conn:
        fresh = (
            conn.execute(sa.select(topic_partitions.c.id).where(topic_partitions.c.topic == "fresh")).scalars().all()
        )
    assert len(fresh) == 1
    assert one._caches["c1"].tp_ids[("fresh", 0)] == two._caches["c1"].tp_ids[("fresh", 0)] == fresh[0]
    assert [(p.topic, p.committed) for p in read_group_lag(db_engine, "c1", B[0]) if p.topic == "fresh"] == [
        ("fresh", 3)
    ]


def test_interning_at_the_same_moment_from_two_transactions(db_engine):
    """Two open transactions insert the same keys: the second waits (PostgreSQL) or is serialised
    (SQLite's write lock), then reads the first one's ids instead of failing."""
    keys = [f"race-{i}" for i in range(50)]
    ids: dict[int, dict] = {0: {}, 1: {}}
    errors = []
    started = threading.Barrier(2)

    def intern(n: int):
        try:
            started.wait()
            with db_engine.begin() as conn:
                intern_ids(
                    conn,
                    consumer_groups,
                    ids[n],
                    keys,
                    lambda k: {"cluster": "c1", "group_id": k, "first_seen_at": T0 + n},
                )
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=intern, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert ids[0] == ids[1] and sorted(ids[0]) == sorted(keys)
    with db_engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(consumer_groups)).scalar() == len(keys)


def test_a_shard_closes_only_its_own_vanished_groups(db_engine):
    one, two = Store(db_engine, ONE), Store(db_engine, TWO)
    one.write_snapshot(snapshot(T0, A))
    two.write_snapshot(snapshot(T0 + 1, B))
    assert open_groups(db_engine) == sorted(A + B)
    one.write_snapshot(snapshot(T0 + 10_000, A[:2]))  # A[2] was deleted
    assert open_groups(db_engine) == sorted(A[:2] + B)
    # a restarted shard loads only its own open rows, so it closes nothing of shard 2 either
    Store(db_engine, ONE).write_snapshot(snapshot(T0 + 20_000, A[:2]))
    Store(db_engine, TWO).write_snapshot(snapshot(T0 + 20_001, B))
    assert open_groups(db_engine) == sorted(A[:2] + B)
    # (an unsharded writer, which owns every group, would have closed all of shard 2's)
    Store(db_engine).write_snapshot(snapshot(T0 + 30_000, A[:2]))
    assert open_groups(db_engine) == sorted(A[:2])


def write_cycles(engine, cycles: int = 6):
    one, two = Store(engine, ONE), Store(engine, TWO)
    for i in range(cycles):
        one.write_snapshot(snapshot(T0 + i * 10_000, A, committed=90 + i, log_end=100 + 2 * i))
        two.write_snapshot(snapshot(T0 + i * 10_000 + 3_000, B, committed=50 + i, log_end=100 + 2 * i))
    return cycles - 1


def test_readers_show_every_shards_groups(db_engine):
    last = write_cycles(db_engine)
    rows = {r.group_id: r for r in read_groups(db_engine, "c1")}
    assert sorted(rows) == sorted(A + B)
    assert {g: rows[g].total_lag for g in A + B} == {
        **dict.fromkeys(A, 2 * (100 + 2 * last - 90 - last)),
        **dict.fromkeys(B, 2 * (100 + 2 * last - 50 - last)),
    }
    for points in (2, 3, 4, 300):  # any thinning keeps every group, and the last point is "lag now"
        sparks = read_total_lag_series(db_engine, "c1", T0, points=points)
        assert sorted(sparks) == sorted(A + B)
        assert {g: s[-1][1] for g, s in sparks.items()} == {g: rows[g].total_lag for g in A + B}
        for g in (A[0], B[0]):
            series = read_lag_series(db_engine, "c1", g, T0, points=points)
            assert len({p.at for p in series}) == min(points, last + 1)
            assert sum(p.lag for p in series if p.at == series[-1].at) == rows[g].total_lag
    assert sorted(read_max_lag_seconds(db_engine, "c1")) == sorted(A + B)
    topics = {r.topic for r in read_topic_partitions(db_engine, "c1", T0)}
    assert topics == {"shared", *(f"topic-{g}" for g in A + B)}
    assert [(s.shard, s.samples, s.last_ok) for s in read_shards(db_engine, "c1")] == [
        ("1/2", 6, True),
        ("2/2", 6, True),
    ]


def test_retention_rolls_each_shards_samples_apart(db_engine):
    write_cycles(db_engine)  # six samples per shard within one minute
    result = apply_retention(db_engine, "c1", T0 + 10 * 3_600_000, RetentionPolicy(raw_ms=3_600_000, pause_ms=0))
    assert result.rolled_to_minute == 2 * 5
    assert [(s.shard, s.samples) for s in read_shards(db_engine, "c1")] == [("1/2", 1), ("2/2", 1)]
    for g, committed in ((A[0], 95), (B[0], 55)):
        assert {p.committed for p in read_lag_history(db_engine, "c1", g, 0)} == {committed}
        assert len(read_lag_series(db_engine, "c1", g, 0)) == 2  # its two partitions at its shard's kept sample


RULES = parse_rules(
    """
channels: {hook: "json://127.0.0.1:9/hook"}
rules:
  - {name: lagging, kind: lag_offsets, above: 5}
  - {name: down, kind: collector_unhealthy}
""",
    "rules.yaml",
)


def test_alert_engines_of_two_shards_keep_each_others_alerts(db_engine):
    one = AlertEngine(db_engine, "c1", RULES, shard=ONE)
    two = AlertEngine(db_engine, "c1", RULES, shard=TWO)
    health_one, health_two = HealthEngine("c1"), HealthEngine("c1")  # each shard judges its own groups
    for i in range(3):
        one.observe(health_one.observe(snapshot(T0 + i * 10_000, A)), T0 + i * 10_000)
        if i < 2:
            two.observe(health_two.observe(snapshot(T0 + i * 10_000 + 1, B)), T0 + i * 10_000 + 1)
        else:
            two.observe(None, T0 + i * 10_000 + 1)  # shard 2 cannot sample
    state = {(a.rule, a.group_id, a.topic): a.state for a in read_alerts(db_engine, "c1")}
    assert state == {**{("lagging", g, ""): "firing" for g in A + B}, ("down", "", "shard 2/2"): "firing"}
    one.observe(health_one.observe(snapshot(T0 + 40_000, A[:1])), T0 + 40_000)  # shard 1's other groups are gone
    state = {(a.rule, a.group_id, a.topic): a.state for a in read_alerts(db_engine, "c1", resolved_since=0)}
    assert state == {
        ("lagging", A[0], ""): "firing",
        **{("lagging", g, ""): "resolved" for g in A[1:]},
        **{("lagging", g, ""): "firing" for g in B},
        ("down", "", "shard 2/2"): "firing",
    }


def test_each_shards_tail_stores_its_own_positions(db_engine):
    one, two = Store(db_engine, ONE), Store(db_engine, TWO)
    write_tail_update(one, "c1", TailUpdate(commits=[CommitRow(A[0], "t", 0, 7, T0)], positions={0: 10, 1: 4}), T0)
    write_tail_update(two, "c1", TailUpdate(commits=[CommitRow(B[0], "t", 0, 8, T0)], positions={0: 12}), T0)
    # a commit stored twice (a new shard layout replays from the lowest position) is one row
    write_tail_update(two, "c1", TailUpdate(commits=[CommitRow(B[0], "t", 0, 8, T0)], positions={0: 13}), T0)
    assert read_tail_positions(db_engine, "c1", "1/2") == {0: 10, 1: 4}
    assert read_tail_positions(db_engine, "c1", "2/2") == {0: 13}
    assert read_tail_positions(db_engine, "c1", "3/3") == {0: 10, 1: 4}  # a new shard count: the lowest of the old
    write_tail_update(two, "c2", TailUpdate(positions={0: 50}), T0)
    assert read_tail_positions(db_engine, "c2", "1/2") == {}  # a sibling's positions say nothing of its groups
    assert sorted((p.shard, p.partition) for p in read_tail_status(db_engine, "c1")) == [
        ("1/2", 0),
        ("1/2", 1),
        ("2/2", 0),
    ]
    assert [c.offset for c in read_commits(db_engine, "c1", B[0])] == [8]
