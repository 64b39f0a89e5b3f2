"""Which database errors pass and which do not (store.engine.compute_store_error), on real SQLite errors;
PostgreSQL's restart is tests/integration/test_outages.py."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa

from monitor.models import StoreRefused, StoreUnavailable
from monitor.store import make_engine, store_errors, write_engine


def test_a_database_locked_by_another_process_passes(sqlite_engine, sqlite_url):
    holder = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with (
            pytest.raises(StoreUnavailable, match="database is locked"),
            store_errors("cannot store the cycle"),
            write_engine(sqlite_engine, busy_timeout_ms=100).begin() as conn,
        ):
            conn.exec_driver_sql("DELETE FROM samples")
    finally:
        holder.execute("ROLLBACK")


def test_a_read_only_database_passes(sqlite_engine, sqlite_url):
    path = sqlite_url.removeprefix("sqlite:///")
    engine = make_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        with (
            pytest.raises(StoreUnavailable, match="readonly"),
            store_errors("cannot store the cycle"),
            engine.begin() as conn,
        ):
            conn.exec_driver_sql("DELETE FROM samples")
    finally:
        engine.dispose()


def test_a_missing_table_does_not_pass(sqlite_engine):
    with (
        pytest.raises(StoreRefused, match="no such table"),
        store_errors("cannot store the cycle"),
        sqlite_engine.connect() as conn,
    ):
        conn.exec_driver_sql("SELECT * FROM no_such_table")


def test_a_bug_is_not_dressed_up_as_a_store_error(sqlite_engine):
    with pytest.raises(sa.exc.ArgumentError), store_errors("cannot store the cycle"):
        sa.select(sa.text("1")).where(object())
