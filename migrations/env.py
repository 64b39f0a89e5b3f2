"""Alembic environment for lagmon: online migrations only, batch mode for SQLite.

monitor.store.upgrade() hands over an open connection (config.attributes
["connection"]) inside one transaction that holds the migration lock; the
`alembic` command line gets an engine from LAGMON_DATABASE_URL or alembic.ini's
sqlalchemy.url and takes the same lock.
render_as_batch=True because SQLite cannot ALTER most things: Alembic copies
the table instead. For the WITHOUT ROWID fact tables pass
`batch_alter_table(..., table_kwargs={"sqlite_with_rowid": False})` or the copy
silently becomes a rowid table (and doubles in size).
"""

from __future__ import annotations

import os

from alembic import context

from monitor.store.engine import lock_for_migration, make_engine, write_engine
from monitor.store.schema import metadata

config = context.config
target_metadata = metadata


def _configure_and_run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    url = os.environ.get("LAGMON_DATABASE_URL") or config.get_main_option("sqlalchemy.url")
    engine = make_engine(url)
    try:
        with write_engine(engine).begin() as conn:
            lock_for_migration(conn)
            _configure_and_run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("lagmon migrations run online only (monitor.store.upgrade or `alembic upgrade head`)")
run_migrations_online()
