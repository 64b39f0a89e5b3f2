"""monitor.store against real SQLite files: schema, round trips, SCD, retention, concurrency, crashes."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import threading
import time

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from factories import T0, make_group, make_snapshot

from monitor.models import (
    ClusterSnapshot,
    ConfigError,
    Event,
    EventKind,
    GroupState,
    GroupType,
    Member,
    MemberRef,
    PartitionOffsets,
    Rebalance,
    TopicPartition,
    Trigger,
    UnknownGroup,
)
from monitor.store import (
    ClusterRow,
    EventRow,
    GroupRow,
    LagPoint,
    PartitionLag,
    PartitionPoint,
    RebalanceRow,
    RetentionPolicy,
    RetentionResult,
    SampleRow,
    Store,
    apply_retention,
    make_engine,
    metadata,
    read_clusters,
    read_events,
    read_group_lag,
    read_groups,
    read_lag_history,
    read_partition_history,
    read_rebalances,
    read_samples,
    upgrade,
)
from monitor.store.engine import SCHEMA_HEAD, read_schema_revision
from monitor.store.offsets_tail import read_commits

MIN = 60_000
HOUR = 3_600_000
TP = TopicPartition


def head_revision() -> str:
    """The newest migration (the chain grows as features land)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from monitor.store.engine import MIGRATIONS_DIR

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


def count(engine, table: str, where: str = "1=1") -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {where}").scalar()


# -- schema and engine -------------------------------------------------------------


def test_migrations_create_exactly_the_declared_schema(db_engine):
    with db_engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
        tables = set(sa.inspect(conn).get_table_names())
        fact_sql = (
            {}
            if conn.dialect.name != "sqlite"
            else dict(
                conn.exec_driver_sql(
                    "SELECT name, sql FROM sqlite_master WHERE name IN ('offset_samples', 'partition_samples')"
                ).all()
            )
        )
    assert diffs == []
    assert tables == set(metadata.tables) | {"alembic_version"}
    assert all(sql.rstrip().endswith("WITHOUT ROWID") for sql in fact_sql.values()), fact_sql


def test_upgrade_is_idempotent_and_accepts_a_url(db_url):
    upgrade(db_url)
    upgrade(db_url)
    engine = make_engine(db_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [(head_revision(),)]
    engine.dispose()


def test_schema_head_names_the_newest_migration():
    assert head_revision() == SCHEMA_HEAD  # bump it with every new migration: upgrade() trusts it


def test_upgrade_brings_an_older_database_to_the_head(db_url):
    upgrade(db_url, revision="0005")
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        assert read_schema_revision(engine) == head_revision()
        assert sa.inspect(engine).has_table("health_state")  # 0006's table
    finally:
        engine.dispose()


def test_upgrade_to_commit_time_order_keeps_every_stored_commit(db_url):
    upgrade(db_url, revision="0006")
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            run = conn.exec_driver_sql
            run("INSERT INTO consumer_groups (id, cluster, group_id, first_seen_at) VALUES (1, 'c', 'g', 0)")
            run(
                "INSERT INTO topic_partitions (id, cluster, topic, partition) VALUES (1, 'c', 't', 0), (2, 'c', 't', 1)"
            )
            run("INSERT INTO group_partitions (id, group_ref, tp_id) VALUES (1, 1, 1), (2, 1, 2)")
            run(
                "INSERT INTO offset_commits (gp_id, committed_at, committed, leader_epoch) "
                "VALUES (2, 1000, 5, 0), (1, 2000, 7, NULL), (1, 1000, 3, 0), (2, 3000, -1, NULL)"
            )
        upgrade(db_url)
        assert [(c.partition, c.committed_at, c.offset, c.leader_epoch) for c in read_commits(engine, "c", "g")] == [
            (0, 1000, 3, 0),
            (1, 1000, 5, 0),
            (0, 2000, 7, None),
            (1, 3000, None, None),
        ]
    finally:
        engine.dispose()


def test_a_new_database_being_written_by_another_process_is_waited_for_not_locked(tmp_path):
    """The race of processes starting together on a new SQLite file, made certain: the first one writes
    its first transaction (still in rollback-journal mode) while the second connects and asks for WAL."""
    path = tmp_path / "new.db"
    first = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    first.execute("CREATE TABLE t (a)")
    first.execute("BEGIN IMMEDIATE")
    first.execute("INSERT INTO t VALUES (1)")
    threading.Timer(0.5, first.execute, ["COMMIT"]).start()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("SELECT a FROM t").all() == [(1,)]
    finally:
        engine.dispose()
        first.close()


def _upgrade_with_the_others(url: str, together, migrated) -> None:
    """Child process: start as a collector, dashboard or analysis run does, at the same moment as the rest."""
    together.wait()
    if upgrade(url):
        with migrated.get_lock():
            migrated.value += 1


def test_processes_starting_together_on_a_new_database_migrate_it_once(db_url):
    ctx, n = multiprocessing.get_context("fork"), 4
    together, migrated = ctx.Barrier(n), ctx.Value("i", 0)
    children = [ctx.Process(target=_upgrade_with_the_others, args=(db_url, together, migrated)) for _ in range(n)]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
    assert [child.exitcode for child in children] == [0] * n
    assert migrated.value == 1
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [(head_revision(),)]
    finally:
        engine.dispose()


def test_sqlite_engine_is_tuned_for_one_writer_many_readers(sqlite_engine):
    with sqlite_engine.connect() as conn:
        pragmas = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "busy_timeout", "synchronous", "foreign_keys")
        }
    assert pragmas == {"journal_mode": "wal", "busy_timeout": 10_000, "synchronous": 1, "foreign_keys": 1}


# -- round trips ----------------------------------------------------------------------


def test_snapshot_round_trips_into_read_groups(db_store, db_engine):
    g2 = make_group(
        "g2",
        state=GroupState.PREPARING_REBALANCE,
        type=GroupType.CONSUMER,
        assignor="uniform",
        coordinator=2,
        state_inferred=True,
        note="reconciling",
        committed={TP("u", 0): 7, TP("u", 1): None},
        members=[Member("m-a", "c-a", "/h1", assignment=(TP("u", 0),)), Member("m-b", "c-b", "/h2")],
    )
    snap = make_snapshot(
        groups=[make_group(), g2],
        partitions={
            TP("t", 0): PartitionOffsets(0, 100),
            TP("t", 1): PartitionOffsets(5, 100),
            TP("u", 0): PartitionOffsets(0, 7),
            TP("u", 1): PartitionOffsets(0, 3),
        },
    )
    sample_id = db_store.write_snapshot(snap)

    assert isinstance(sample_id, int)
    assert read_groups(db_engine) == [
        GroupRow(
            cluster="c1",
            group_id="g1",
            state=GroupState.STABLE,
            type=GroupType.CLASSIC,
            protocol_type="consumer",
            assignor="range",
            coordinator=1,
            state_inferred=False,
            note=None,
            since=T0,
            members=1,
            partitions=2,
            total_lag=70,
            max_lag=60,
            last_sample_at=T0,
        ),
        GroupRow(
            cluster="c1",
            group_id="g2",
            state=GroupState.PREPARING_REBALANCE,
            type=GroupType.CONSUMER,
            protocol_type="consumer",
            assignor="uniform",
            coordinator=2,
            state_inferred=True,
            note="reconciling",
            since=T0,
            members=2,
            partitions=2,
            total_lag=0,
            max_lag=0,
            last_sample_at=T0,
        ),
    ]


def test_read_group_lag_gives_every_partition_with_its_owner(db_store, db_engine):
    group = make_group(
        committed={TP("t", 0): 90, TP("t", 1): None, TP("t", 2): 120, TP("v", 0): -1001},
        members=[
            Member("m-1", "client-a", "/10.0.0.1", assignment=(TP("t", 0), TP("t", 1))),
            Member("m-2", "client-b", "/10.0.0.2", instance_id="static-2", assignment=(TP("t", 2), TP("t", 3))),
        ],
    )
    partitions = {TP("t", p): PartitionOffsets(0, 100) for p in range(4)}  # v:0 log end unknown
    db_store.write_snapshot(make_snapshot(groups=[group], partitions=partitions))

    assert read_group_lag(db_engine, "c1", "g1") == [
        PartitionLag("t", 0, 90, 100, 10, "m-1", "client-a", "/10.0.0.1"),
        PartitionLag("t", 1, None, 100, None, "m-1", "client-a", "/10.0.0.1"),
        PartitionLag("t", 2, 120, 100, 0, "m-2", "client-b", "/10.0.0.2"),  # clamped at 0
        PartitionLag("t", 3, None, 100, None, "m-2", "client-b", "/10.0.0.2"),  # assigned, never committed
        PartitionLag("v", 0, None, None, None, None, None, None),  # -1001 means no commit
    ]


def test_read_group_lag_of_an_unknown_group_raises(db_store, db_engine):
    db_store.write_snapshot(make_snapshot())
    with pytest.raises(UnknownGroup):
        read_group_lag(db_engine, "c1", "nope")
    with pytest.raises(UnknownGroup):
        read_group_lag(db_engine, "other-cluster", "g1")


def test_clusters_share_a_database_without_mixing(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(cluster="east"))
    db_store.write_snapshot(make_snapshot(T0 + 10_000, cluster="west", groups=[make_group(committed={TP("t", 0): 1})]))
    assert [(r.cluster, r.group_id, r.total_lag) for r in read_groups(db_engine)] == [
        ("east", "g1", 70),
        ("west", "g1", 99),
    ]
    assert [(r.cluster, r.total_lag) for r in read_groups(db_engine, "west")] == [("west", 99)]
    assert read_clusters(db_engine) == [
        ClusterRow("east", samples=1, first_sample_at=T0, last_sample_at=T0, last_ok=True, last_errors=(), groups=1),
        ClusterRow(
            "west",
            samples=1,
            first_sample_at=T0 + 10_000,
            last_sample_at=T0 + 10_000,
            last_ok=True,
            last_errors=(),
            groups=1,
        ),
    ]


def test_failed_cycles_are_recorded(db_store, db_engine):
    ok_id = db_store.write_snapshot(make_snapshot(errors=()))
    partial_id = db_store.write_snapshot(make_snapshot(T0 + 10_000, errors=("describe g2: timed out",)))
    failed_id = db_store.write_sample_error("c1", T0 + 20_000, 30_000, ["cluster unreachable"])

    assert read_samples(db_engine, "c1", since=T0) == [
        SampleRow(ok_id, "c1", T0, 120, 1, 2, True, (), 0, 120),  # the sampling part, until the cycle's end
        SampleRow(partial_id, "c1", T0 + 10_000, 120, 1, 2, False, ("describe g2: timed out",), 0, 120),
        SampleRow(failed_id, "c1", T0 + 20_000, 30_000, 0, 0, False, ("cluster unreachable",), 0, 30_000),
    ]
    db_store.write_cycle_time(ok_id, 150, 120)  # what the collector writes once health and alerts are done
    first = read_samples(db_engine, "c1", since=T0)[0]
    assert (first.duration_ms, first.sampling_ms) == (150, 120)
    assert read_samples(db_engine, "c1", since=T0 + 15_000)[0].id == failed_id
    assert read_clusters(db_engine)[0] == ClusterRow(
        "c1",
        samples=3,
        first_sample_at=T0,
        last_sample_at=T0 + 20_000,
        last_ok=False,
        last_errors=("cluster unreachable",),
        groups=1,
    )
    # the failed cycle did not hide the group's lag
    assert read_groups(db_engine)[0].last_sample_at == T0 + 10_000


def test_events_round_trip(db_store, db_engine):
    db_store.write_events(
        "c1",
        [
            Event(T0, "g1", EventKind.MEMBER_JOINED, {"member_id": "m-2", "partitions": [TP("t", 0)]}),
            Event(T0 + 5, "g2", EventKind.STATE_CHANGED, {"from": GroupState.STABLE, "to": GroupState.EMPTY}),
        ],
    )
    db_store.write_events("c2", [Event(T0 + 9, "g1", EventKind.GROUP_APPEARED)])

    assert read_events(db_engine, "c1") == [
        EventRow("c1", T0, "g1", EventKind.MEMBER_JOINED, {"member_id": "m-2", "partitions": [["t", 0]]}),
        EventRow("c1", T0 + 5, "g2", EventKind.STATE_CHANGED, {"from": "Stable", "to": "Empty"}),
    ]
    assert [(e.cluster, e.group_id) for e in read_events(db_engine, group="g1")] == [("c1", "g1"), ("c2", "g1")]
    assert [e.at for e in read_events(db_engine, since=T0 + 5)] == [T0 + 5, T0 + 9]
    assert [e.at for e in read_events(db_engine, limit=2)] == [T0 + 5, T0 + 9]


def test_rebalance_in_progress_is_completed_in_place(db_store, db_engine):
    joined = (MemberRef("m-2", "client-b", "/10.0.0.2"),)
    started = Rebalance(
        "g1", T0, None, "eager", Trigger.MEMBER_JOINED, members_before=1, joined=joined, generation_before=4
    )
    db_store.write_rebalances("c1", [started])
    assert [r.rebalance for r in read_rebalances(db_engine, "c1", "g1")] == [started]

    done = Rebalance(
        "g1",
        T0,
        T0 + 3_000,
        "eager",
        Trigger.MEMBER_JOINED,
        members_before=1,
        members_after=2,
        joined=joined,
        left=(MemberRef("m-0", "client-z", "/10.0.0.9", "static-0"),),
        partitions_moved=3,
        generation_before=4,
        generation_after=5,
        source="both",
    )
    other = Rebalance("g1", T0 + 60_000, T0 + 61_000, "cooperative")
    assert db_store.write_rebalances("c1", [done, other]) == 2

    assert read_rebalances(db_engine) == [RebalanceRow("c1", done), RebalanceRow("c1", other)]
    assert read_rebalances(db_engine, since=T0 + 1, until=T0 + 60_001) == [RebalanceRow("c1", other)]
    assert read_rebalances(db_engine, group="g2") == []
    assert done.duration_ms == 3_000
    assert count(db_engine, "rebalances") == 2


def test_partition_history_gives_log_offsets_per_sample(db_store, db_engine):
    parts = {TP("t", 0): PartitionOffsets(3, 100, 97), TP("t", 1): PartitionOffsets(0, 50)}
    db_store.write_snapshot(make_snapshot(partitions=parts))
    assert read_partition_history(db_engine, "c1", since=T0, topic="t") == [
        PartitionPoint(T0, "t", 0, 3, 100, 97, 0),
        PartitionPoint(T0, "t", 1, 0, 50, None, 0),
    ]


# -- slowly changing facts ------------------------------------------------------------------


def test_identical_snapshots_store_facts_once(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0))
    db_store.write_snapshot(make_snapshot(T0 + 10_000))

    assert (count(db_engine, "group_states"), count(db_engine, "group_members"), count(db_engine, "assignments")) == (
        1,
        1,
        2,
    )
    assert count(db_engine, "offset_samples") == 4  # offsets are per sample
    assert count(db_engine, "partition_samples") == 4


def test_a_change_closes_the_old_interval_and_opens_a_new_one(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0))
    moved = make_group(
        state=GroupState.COMPLETING_REBALANCE,
        members=[
            Member("m-1", "client-a", "/10.0.0.1", assignment=(TP("t", 0),)),
            Member("m-2", "client-b", "/10.0.0.2", assignment=(TP("t", 1),)),
        ],
    )
    db_store.write_snapshot(make_snapshot(T0 + 10_000, groups=[moved]))

    with db_engine.connect() as conn:
        states = conn.exec_driver_sql("SELECT state, valid_from, valid_to FROM group_states ORDER BY id").all()
        members = conn.exec_driver_sql("SELECT member_id, valid_from, valid_to FROM group_members ORDER BY id").all()
        owners = conn.exec_driver_sql(
            "SELECT topic, partition, member_id, valid_from, valid_to FROM assignments ORDER BY id"
        ).all()
    assert states == [("Stable", T0, T0 + 10_000), ("CompletingRebalance", T0 + 10_000, None)]
    assert members == [("m-1", T0, None), ("m-2", T0 + 10_000, None)]
    assert owners == [("t", 0, "m-1", T0, None), ("t", 1, "m-1", T0, T0 + 10_000), ("t", 1, "m-2", T0 + 10_000, None)]
    assert read_groups(db_engine)[0].since == T0 + 10_000


def test_a_vanished_group_is_closed_unless_the_cycle_had_errors(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0, groups=[make_group("g1"), make_group("g2")]))
    db_store.write_snapshot(make_snapshot(T0 + 10_000, groups=[make_group("g1")], errors=("describe g2 failed",)))
    assert [g.group_id for g in read_groups(db_engine)] == ["g1", "g2"]

    db_store.write_snapshot(make_snapshot(T0 + 20_000, groups=[make_group("g1")]))
    assert [g.group_id for g in read_groups(db_engine)] == ["g1"]
    closed = f"group_id = 'g2' AND valid_to = {T0 + 20_000}"
    assert (
        count(db_engine, "group_states", closed),
        count(db_engine, "group_members", closed),
        count(db_engine, "assignments", closed),
    ) == (1, 1, 2)

    db_store.write_snapshot(make_snapshot(T0 + 30_000, groups=[make_group("g1"), make_group("g2")]))
    assert [(g.group_id, g.since) for g in read_groups(db_engine)] == [("g1", T0), ("g2", T0 + 30_000)]


def test_a_restarted_writer_continues_the_open_intervals(db_engine):
    Store(db_engine).write_snapshot(make_snapshot(T0))
    Store(db_engine).write_snapshot(make_snapshot(T0 + 10_000))
    assert (
        count(db_engine, "group_states"),
        count(db_engine, "group_members"),
        count(db_engine, "assignments"),
        count(db_engine, "group_partitions"),
        count(db_engine, "topic_partitions"),
    ) == (1, 1, 2, 2, 2)


def test_a_failed_write_leaves_no_trace_and_the_next_one_works(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0))
    bad = make_snapshot(T0 + 10_000, groups=[make_group("g-new", committed={TP("new", 0): 5})])
    sqlite = db_engine.dialect.name == "sqlite"
    with pytest.raises(sa.exc.StatementError):
        with db_engine.begin() as conn:  # make the insert fail after some rows went in
            if sqlite:
                conn.exec_driver_sql(
                    "CREATE TRIGGER boom BEFORE INSERT ON offset_samples BEGIN SELECT RAISE(ABORT, 'boom'); END"
                )
            else:
                conn.exec_driver_sql(
                    "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$"
                )
                conn.exec_driver_sql(
                    "CREATE TRIGGER boom BEFORE INSERT ON offset_samples FOR EACH ROW EXECUTE FUNCTION boom()"
                )
        db_store.write_snapshot(bad)
    with db_engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER boom" if sqlite else "DROP TRIGGER boom ON offset_samples")
    db_store.write_snapshot(make_snapshot(T0 + 20_000, groups=[make_group(), make_group("g-new")]))

    assert count(db_engine, "samples") == 2
    assert [g.group_id for g in read_groups(db_engine)] == ["g-new", "g1"]
    assert count(db_engine, "group_states", "group_id = 'g-new'") == 1


# -- retention ----------------------------------------------------------------------------------


def write_every_10s(store, start, n, *, skip_tp_at=(), lag_of=lambda i: 10):
    """n samples 10 s apart from `start`; log end = 1000 + i, committed = log end - lag_of(i)."""
    for i in range(n):
        at = start + i * 10_000
        committed = {TP("t", 0): 1000 + i - lag_of(i), TP("t", 1): 2000 + i}
        if at in skip_tp_at:
            del committed[TP("t", 1)]
        parts = {TP("t", 0): PartitionOffsets(0, 1000 + i), TP("t", 1): PartitionOffsets(0, 2000 + i)}
        store.write_snapshot(make_snapshot(at, groups=[make_group(committed=committed)], partitions=parts))


POLICY = RetentionPolicy(raw_ms=HOUR, minute_ms=2 * HOUR, ten_minute_ms=4 * HOUR, history_ms=4 * HOUR, pause_ms=0)


def test_raw_samples_roll_into_the_last_value_per_minute(db_store, db_engine):
    # 3 minutes of 10 s samples; t:1 is missing from the last sample of the 2nd minute.
    write_every_10s(db_store, T0, 18, skip_tp_at={T0 + MIN + 50_000})
    now = T0 + 3 * MIN + HOUR  # all three minutes are older than raw_ms

    result = apply_retention(db_engine, "c1", now, POLICY)

    assert (result.rolled_to_minute, result.rolled_to_ten_minutes, result.deleted_samples, result.done) == (
        15,
        0,
        0,
        True,
    )
    assert [(s.taken_at, s.resolution_ms) for s in read_samples(db_engine, "c1")] == [
        (T0 + 50_000, MIN),
        (T0 + MIN + 50_000, MIN),
        (T0 + 2 * MIN + 50_000, MIN),
    ]
    assert read_lag_history(db_engine, "c1", "g1", since=T0) == [
        LagPoint(T0 + 50_000, "t", 0, 995, 1005, 10, MIN),
        LagPoint(T0 + 50_000, "t", 1, 2005, 2005, 0, MIN),
        LagPoint(T0 + MIN + 50_000, "t", 0, 1001, 1011, 10, MIN),
        LagPoint(T0 + MIN + 50_000, "t", 1, 2010, 2011, 1, MIN),  # kept from 10 s earlier
        LagPoint(T0 + 2 * MIN + 50_000, "t", 0, 1007, 1017, 10, MIN),
        LagPoint(T0 + 2 * MIN + 50_000, "t", 1, 2017, 2017, 0, MIN),
    ]
    assert (count(db_engine, "offset_samples"), count(db_engine, "partition_samples")) == (6, 6)
    assert apply_retention(db_engine, "c1", now, POLICY).rolled_to_minute == 0  # idempotent


def test_rollup_moves_a_groups_newest_offsets_into_the_kept_sample(db_store, db_engine):
    for i in range(5):
        db_store.write_snapshot(make_snapshot(T0 + i * 10_000, groups=[make_group("g1"), make_group("g2")]))
    # a sharded collector's cycle that did not include g2 (so g2 stays open)
    db_store.write_snapshot(make_snapshot(T0 + 50_000, groups=[make_group("g1")]), close_missing=False)

    apply_retention(db_engine, "c1", T0 + MIN + HOUR, POLICY)

    assert [(g.group_id, g.total_lag, g.last_sample_at) for g in read_groups(db_engine)] == [
        ("g1", 70, T0 + 50_000),
        ("g2", 70, T0 + 50_000),
    ]
    assert [r.committed for r in read_group_lag(db_engine, "c1", "g2")] == [90, 40]


def test_rollup_keeps_the_last_ok_sample_of_a_minute(db_store, db_engine):
    write_every_10s(db_store, T0, 3)
    db_store.write_sample_error("c1", T0 + 30_000, 1_000, ["timeout"])
    apply_retention(db_engine, "c1", T0 + MIN + HOUR, POLICY)
    assert [(s.taken_at, s.ok, s.resolution_ms) for s in read_samples(db_engine, "c1")] == [(T0 + 20_000, True, MIN)]


def test_history_stays_queryable_across_resolutions(db_store, db_engine):
    # 80 minutes every 10 s; keep raw 10 min, per-minute 30 min, per-10-minutes 60 min.
    policy = RetentionPolicy(raw_ms=10 * MIN, minute_ms=30 * MIN, ten_minute_ms=60 * MIN, pause_ms=0)
    write_every_10s(db_store, T0, 80 * 6, lag_of=lambda i: i % 7)
    now = T0 + 80 * MIN

    result = apply_retention(db_engine, "c1", now, policy)

    samples = read_samples(db_engine, "c1")
    by_res = {res: [s.taken_at for s in samples if s.resolution_ms == res] for res in (0, MIN, 10 * MIN)}
    assert (len(by_res[10 * MIN]), len(by_res[MIN]), len(by_res[0])) == (3, 20, 60)
    assert by_res[10 * MIN] == [T0 + 30 * MIN - 10_000, T0 + 40 * MIN - 10_000, T0 + 50 * MIN - 10_000]
    assert (by_res[MIN][0], by_res[MIN][-1]) == (T0 + 51 * MIN - 10_000, T0 + 70 * MIN - 10_000)
    assert (by_res[0][0], by_res[0][-1]) == (T0 + 70 * MIN, T0 + 80 * MIN - 10_000)
    assert (result.rolled_to_minute, result.rolled_to_ten_minutes, result.deleted_samples) == (420 - 70, 50 - 5, 2)
    history = read_lag_history(db_engine, "c1", "g1", since=0)
    assert len(history) == 2 * len(samples) == count(db_engine, "offset_samples")
    for point in history:  # every surviving point is the exact raw value of its instant
        i = (point.at - T0) // 10_000
        log_end = (1000 if point.partition == 0 else 2000) + i
        committed = log_end - i % 7 if point.partition == 0 else log_end
        assert (point.committed, point.log_end, point.lag) == (committed, log_end, log_end - committed)
    window = read_lag_history(db_engine, "c1", "g1", since=T0 + 45 * MIN, until=T0 + 70 * MIN + 30_000)
    assert [(p.at, p.resolution_ms) for p in window[:2] + window[-2:]] == [
        (T0 + 50 * MIN - 10_000, 10 * MIN),
        (T0 + 50 * MIN - 10_000, 10 * MIN),
        (T0 + 70 * MIN + 20_000, 0),
        (T0 + 70 * MIN + 20_000, 0),
    ]
    assert apply_retention(db_engine, "c1", now, policy) == RetentionResult()  # nothing left to do


def test_retention_deletes_old_history_but_keeps_what_is_current(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(T0))
    db_store.write_snapshot(make_snapshot(T0 + 1, groups=[make_group(state=GroupState.EMPTY, members=[])]))
    db_store.write_events(
        "c1", [Event(T0, "g1", EventKind.STATE_CHANGED), Event(T0 + 5 * HOUR, "g1", EventKind.MEMBER_LEFT)]
    )
    db_store.write_rebalances("c1", [Rebalance("g1", T0, T0 + 1, "eager"), Rebalance("g1", T0 + 2, None, "eager")])

    result = apply_retention(db_engine, "c1", T0 + 5 * HOUR, POLICY)

    assert result.deleted_history == 1 + 1 + 1 + 1 + 2  # event, rebalance, state, member, 2 assignments
    assert [e.at for e in read_events(db_engine)] == [T0 + 5 * HOUR]
    assert [r.rebalance.started_at for r in read_rebalances(db_engine)] == [T0 + 2]  # still in progress
    assert [g.state for g in read_groups(db_engine)] == [GroupState.EMPTY]
    assert count(db_engine, "samples") == 0  # older than ten_minute_ms


def test_retention_with_a_time_budget_stops_and_resumes(db_store, db_engine):
    write_every_10s(db_store, T0, 30)
    partial = apply_retention(db_engine, "c1", T0 + 5 * MIN + HOUR, POLICY, max_seconds=0)
    assert partial.done is False
    final = apply_retention(db_engine, "c1", T0 + 5 * MIN + HOUR, POLICY)
    assert final.done is True
    assert [s.resolution_ms for s in read_samples(db_engine, "c1")] == [MIN] * 5


def test_retention_policy_is_validated():
    with pytest.raises(ConfigError):
        RetentionPolicy(raw_ms=2 * HOUR, minute_ms=HOUR)
    with pytest.raises(ConfigError):
        RetentionPolicy(batch_rows=0)


# -- concurrency and crashes ------------------------------------------------------------------------


def big_snapshot(i: int, *, groups: int = 40, partitions: int = 50, start: int = T0) -> ClusterSnapshot:
    """groups x partitions group-partitions, each group on its own topic, offsets moving with i."""
    group_snaps, parts = [], {}
    for g in range(groups):
        tps = [TP(f"topic-{g}", p) for p in range(partitions)]
        for tp in tps:
            parts[tp] = PartitionOffsets(0, 1_000_000 + 100 * i + tp.partition)
        members = [Member(f"m-{g}-{m}", f"client-{g}", "/10.0.0.1", assignment=tuple(tps[m::4])) for m in range(4)]
        group_snaps.append(
            make_group(f"group-{g}", members=members, committed=dict.fromkeys(tps, 1_000_000 + 100 * i - 50))
        )
    return make_snapshot(start + i * 10_000, groups=group_snaps, partitions=parts)


def test_a_writer_and_readers_run_together_without_locking_errors(db_store, db_engine):
    stop = threading.Event()
    errors: list[BaseException] = []
    stats = {"writes": 0, "reads": 0, "retention": 0, "rolled": 0, "max_write_s": 0.0}
    newest = [T0]

    def guarded(fn):
        def run():
            try:
                while not stop.is_set():
                    fn()
            except BaseException as exc:
                errors.append(exc)
                stop.set()

        return threading.Thread(target=run)

    def write():
        i = stats["writes"]
        started = time.perf_counter()
        db_store.write_snapshot(big_snapshot(i))
        stats["max_write_s"] = max(stats["max_write_s"], time.perf_counter() - started)
        newest[0] = T0 + i * 10_000
        stats["writes"] += 1
        # Back to back, yet with the breath a real collector has between cycles: SQLite's
        # busy handler is not fair, so a writer that never pauses can starve the other one.
        time.sleep(0.005)

    def read():
        read_groups(db_engine)
        read_group_lag(db_engine, "c1", "group-3")
        read_lag_history(db_engine, "c1", "group-3", since=T0)
        read_samples(db_engine, "c1", since=T0)
        stats["reads"] += 1

    def retain():  # a second writer: rolls up as simulated time runs 10 s per write
        result = apply_retention(
            db_engine,
            "c1",
            newest[0],
            RetentionPolicy(raw_ms=MIN, minute_ms=3 * MIN, ten_minute_ms=30 * MIN, pause_ms=1),
        )
        stats["rolled"] += result.rolled_to_minute + result.rolled_to_ten_minutes
        stats["retention"] += 1
        time.sleep(0.05)

    write()  # readers ask for group-3 from the start
    threads = [guarded(write), guarded(read), guarded(read), guarded(retain)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60  # enough simulated time for rollups, however loaded the machine
    while (stats["writes"] < 30 or stats["rolled"] == 0) and not errors and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(30)

    print(stats)
    assert errors == []
    assert stats["writes"] > 5 and stats["reads"] > 5 and stats["rolled"] > 0, stats
    assert stats["max_write_s"] < 2.0, stats  # never waits long for the lock
    if db_engine.dialect.name == "sqlite":
        with db_engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


def _write_forever(url: str, written, busy) -> None:
    """Child process: write big snapshots back to back until killed, flagging each write."""
    engine = make_engine(url)
    store = Store(engine)
    i = 0
    while True:
        snapshot = big_snapshot(i, groups=40, partitions=100)
        busy.value = 1
        store.write_snapshot(snapshot)
        i += 1
        written.value = i
        busy.value = 0


def test_a_killed_writer_leaves_a_sound_database_and_writing_resumes(sqlite_url, sqlite_engine):
    db_url, engine = sqlite_url, sqlite_engine
    engine.dispose()
    ctx = multiprocessing.get_context("fork")
    written, busy = ctx.Value("i", 0), ctx.Value("i", 0)
    child = ctx.Process(target=_write_forever, args=(db_url, written, busy), daemon=True)
    child.start()
    try:
        deadline = time.monotonic() + 60
        while written.value < 3 and time.monotonic() < deadline and child.is_alive():
            time.sleep(0.01)
        assert written.value >= 3, "the child never got going"
        while not busy.value:
            pass
        time.sleep(random.uniform(0.0, 0.01))  # inside write_snapshot (a write takes ~50 ms)
        os.kill(child.pid, signal.SIGKILL)
        committed_before_kill = written.value
    finally:
        child.join(10)
    assert child.exitcode == -signal.SIGKILL

    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
        per_sample = conn.exec_driver_sql(
            "SELECT s.id, count(o.gp_id) FROM samples s LEFT JOIN offset_samples o ON o.sample_id = s.id GROUP BY s.id"
        ).all()
    assert {n for _, n in per_sample} == {4000}  # every cycle is whole or absent
    assert len(per_sample) in (committed_before_kill, committed_before_kill + 1)

    after = len(per_sample)
    Store(engine).write_snapshot(big_snapshot(after, groups=40, partitions=100))
    assert count(engine, "samples") == after + 1
    assert count(engine, "group_states", "valid_to IS NULL") == 40  # no duplicated open intervals
    assert read_groups(engine)[0].last_sample_at == T0 + after * 10_000


def stored_offsets(engine, sample_id: int) -> dict[tuple[str, str, int], int | None]:
    with engine.connect() as conn:
        return {
            (g, t, p): c
            for g, t, p, c in conn.exec_driver_sql(
                "SELECT g.group_id, tp.topic, tp.partition, o.committed FROM offset_samples o "
                "JOIN group_partitions gp ON gp.id = o.gp_id JOIN consumer_groups g ON g.id = gp.group_ref "
                f"JOIN topic_partitions tp ON tp.id = gp.tp_id WHERE o.sample_id = {sample_id}"
            )
        }


def snapshot_offsets(snapshot) -> dict[tuple[str, str, int], int | None]:
    return {(g.group_id, tp.topic, tp.partition): c for g in snapshot.groups.values() for tp, c in g.committed.items()}


def test_every_sample_holds_every_groups_offsets_whether_changed_or_not(db_engine, db_store):
    """Unchanged groups are copied inside the database: each sample must still read as it was taken."""
    idle = make_group("idle", committed={TP("t", 0): 5, TP("t", 1): 6})
    busy = lambda offset: make_group("busy", committed={TP("t", 0): offset, TP("t", 1): offset})  # noqa: E731
    snapshots = [
        make_snapshot(T0, groups=[idle, busy(10), make_group("gone")]),
        make_snapshot(T0 + 1000, groups=[idle, busy(10), make_group("gone")]),  # nothing changed
        make_snapshot(T0 + 2000, groups=[idle, busy(20)]),  # one changed, one gone
        make_snapshot(T0 + 3000, groups=[idle, busy(20), make_group("new", committed={TP("u", 0): 1})]),
        make_snapshot(
            T0 + 4000,
            groups=[
                make_group("idle", committed={TP("t", 1): 6, TP("t", 0): 5}),  # reordered
                busy(30),
                make_group("new", committed={TP("u", 0): 1, TP("u", 1): 2}),
            ],
        ),
        make_snapshot(T0 + 5000, groups=[make_group("idle", committed={TP("t", 0): 5, TP("t", 1): -1001}), busy(30)]),
    ]
    for snapshot in snapshots:
        sample_id = db_store.write_snapshot(snapshot)
        expected = {k: (None if c is not None and c < 0 else c) for k, c in snapshot_offsets(snapshot).items()}
        assert stored_offsets(db_engine, sample_id) == expected
        with db_engine.connect() as conn:
            pointers = dict(conn.exec_driver_sql("SELECT group_id, last_sample_id FROM consumer_groups").all())
        assert {g for g, s in pointers.items() if s == sample_id} == set(snapshot.groups)


def test_a_sample_whose_previous_rows_are_gone_is_written_whole(db_engine, db_store):
    first = db_store.write_snapshot(make_snapshot(T0, groups=[make_group("a"), make_group("b")]))
    with db_engine.begin() as conn:  # e.g. another process removed them between two cycles
        conn.exec_driver_sql(f"DELETE FROM offset_samples WHERE sample_id = {first}")
    second = make_snapshot(T0 + 1000, groups=[make_group("a"), make_group("b")])
    assert stored_offsets(db_engine, db_store.write_snapshot(second)) == snapshot_offsets(second)
