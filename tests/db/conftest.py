"""The databases of the store tests: a new one per test, on SQLite only or on SQLite and PostgreSQL.

`sqlite_*` fixtures are one SQLite file; `db_*` fixtures run each test twice,
on SQLite (the default) and on PostgreSQL (the scale path, tests/support/pg_server.py).
Engines and stores are migrated to the head; the URLs are empty databases.
"""

from __future__ import annotations

import pytest

from monitor.store import Store, make_engine, upgrade


def migrated_engine(url: str):
    """An engine on `url` migrated to the head, disposed after the test."""
    engine = make_engine(url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """The URL of a new, empty SQLite file."""
    return f"sqlite:///{tmp_path / 'lagmon.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, sqlite_url) -> str:
    """The URL of a new, empty database: the test runs once on SQLite and once on PostgreSQL."""
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres").new_database()


@pytest.fixture
def sqlite_engine(sqlite_url):
    """An engine on a new SQLite file migrated to the head."""
    yield from migrated_engine(sqlite_url)


@pytest.fixture
def db_engine(db_url):
    """An engine on a new database migrated to the head, on SQLite and on PostgreSQL."""
    yield from migrated_engine(db_url)


@pytest.fixture
def sqlite_store(sqlite_engine) -> Store:
    """An unsharded Store on `sqlite_engine`."""
    return Store(sqlite_engine)


@pytest.fixture
def db_store(db_engine) -> Store:
    """An unsharded Store on `db_engine` (SQLite and PostgreSQL)."""
    return Store(db_engine)
