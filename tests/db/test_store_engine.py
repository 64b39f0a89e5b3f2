"""monitor.store.engine against real databases: the migrations make the declared schema, upgrades (once,
however many processes start together), and SQLite tuned for one writer and many readers."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import psutil
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from monitor.models import StoreRefused
from monitor.store import make_engine, metadata, upgrade, upgrade_apart
from monitor.store.engine import SCHEMA_HEAD, read_schema_revision
from monitor.store.offsets_tail import read_commits


def head_revision() -> str:
    """The newest migration (the chain grows as features land)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from monitor.store.engine import MIGRATIONS_DIR

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


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


UPGRADE_APART = """
import sys
from monitor.store import make_engine, upgrade_apart
engine = make_engine(sys.argv[1])
print(upgrade_apart(engine), upgrade_apart(engine), "alembic" in sys.modules)
"""


def test_a_collector_migrates_in_a_child_and_never_holds_alembic(db_url):
    ran = subprocess.run([sys.executable, "-c", UPGRADE_APART, db_url], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["True", "False", "False"]  # migrated, then at the head: Alembic never imported
    engine = make_engine(db_url)
    try:
        assert read_schema_revision(engine) == SCHEMA_HEAD
    finally:
        engine.dispose()


STOPPED_WHILE_MIGRATING = """
import signal, sys
from monitor.store import make_engine, upgrade_apart
said = []
signal.signal(signal.SIGTERM, lambda *_: said.append("stop"))  # as the collector's handler: it only takes note
print(upgrade_apart(make_engine(sys.argv[1])), said, flush=True)
"""


def test_a_stop_signal_to_the_collectors_process_group_lets_the_migration_finish(sqlite_url):
    collector = subprocess.Popen(
        [sys.executable, "-c", STOPPED_WHILE_MIGRATING, sqlite_url],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not psutil.Process(collector.pid).children() and time.monotonic() < deadline:
        pass  # no sleep: the signal should land early, before the child's own session starts, as it can
    assert psutil.Process(collector.pid).children(), "the migration's child never started"
    os.killpg(collector.pid, signal.SIGTERM)  # what `timeout` and a terminal's Ctrl-C do
    said, _ = collector.communicate(timeout=60)
    assert said.split() == ["True", "['stop']"]  # migrated, and the stop was seen, to be acted on after it
    engine = make_engine(sqlite_url)
    try:
        assert read_schema_revision(engine) == SCHEMA_HEAD
    finally:
        engine.dispose()


def test_a_migration_that_fails_in_the_child_is_said_as_the_store_error(sqlite_url):
    engine = make_engine(sqlite_url)
    try:
        with engine.begin() as conn:  # not lagmon's: no alembic_version, and a table the first migration creates
            conn.exec_driver_sql("CREATE TABLE samples (x)")
        with pytest.raises(StoreRefused, match="cannot migrate the store: table samples already exists"):
            upgrade_apart(engine)
    finally:
        engine.dispose()


def test_sqlite_engine_is_tuned_for_one_writer_many_readers(sqlite_engine):
    with sqlite_engine.connect() as conn:
        pragmas = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "busy_timeout", "synchronous", "foreign_keys")
        }
    assert pragmas == {"journal_mode": "wal", "busy_timeout": 10_000, "synchronous": 1, "foreign_keys": 1}
