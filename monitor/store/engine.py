"""Engine factory, schema upgrades and the database itself (its revision, tables and size): the only
place that knows SQLite quirks.

SQLite is tuned for one writer and many readers (WAL, busy timeout, NORMAL
sync) by connect-time PRAGMAs; any other dialect (PostgreSQL) gets a plain
engine. Writers ask for `write_engine(engine)`, which starts SQLite
transactions with BEGIN IMMEDIATE: the write lock is taken up front and waited
for under busy_timeout, instead of a read transaction failing to upgrade with
"database is locked" when another writer (e.g. retention) got there first.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from monitor.models import LagmonError, StoreRefused, StoreUnavailable

DEFAULT_URL = "sqlite:///lagmon.db"
BUSY_TIMEOUT_MS = 10_000
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
# The newest revision in migrations/versions (a test holds the two equal). A database already
# there is not handed to Alembic, whose import alone costs a start 0.1 s and 12 MB.
SCHEMA_HEAD = "0012"

_WRITE_OPTION = "lagmon_write"
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
MIGRATION_LOCK = 0x6C61676D6F6E  # "lagmon": PostgreSQL's advisory lock key for schema upgrades


def make_engine(url: str = DEFAULT_URL, **kwargs) -> Engine:
    """An engine for `url`; SQLite gets WAL, busy_timeout, synchronous=NORMAL, FKs on.

    A server database's pooled connections are checked before use (pool_pre_ping): one the server
    dropped while idle, e.g. in a restart between two cycles, is replaced instead of failing a write.
    """
    if not str(url).startswith("sqlite"):
        kwargs.setdefault("pool_pre_ping", True)
    engine = sa.create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        _tune_sqlite(engine)
    return engine


# SQLite's primary result codes that pass: busy, locked, I/O error, full, cannot open, read-only
# (https://www.sqlite.org/rescode.html); everything else (a missing table, a constraint) does not.
_SQLITE_PASSING = frozenset({5, 6, 8, 10, 13, 14})
# PostgreSQL SQLSTATE classes that pass: connection exceptions, insufficient resources (disk
# full, too many connections), operator intervention (shutdown, restart), and a read-only
# transaction of a standby being promoted; plus serialization failures and deadlocks.
_POSTGRES_PASSING_CLASSES = ("08", "53", "57")
_POSTGRES_PASSING = frozenset({"25006", "40001", "40P01"})


def compute_store_error(error: sa.exc.SQLAlchemyError, what: str) -> LagmonError | None:
    """StoreUnavailable for a failure that passes, StoreRefused for one that does not, None for a bug.

    Decided on the driver's codes (SQLite's result code, PostgreSQL's SQLSTATE), never on wording.
    """
    if isinstance(error, sa.exc.TimeoutError) or getattr(error, "connection_invalidated", False):
        return StoreUnavailable(f"{what}: {error.__class__.__name__}: {_first_line(error)}")
    if not isinstance(error, sa.exc.DBAPIError):
        return None
    orig = error.orig
    sqlite_code = getattr(orig, "sqlite_errorcode", None)
    sqlstate = getattr(orig, "sqlstate", None)
    message = f"{what}: {_first_line(orig)}"
    if sqlite_code is not None:
        passing = sqlite_code & 0xFF in _SQLITE_PASSING
    elif sqlstate is not None:
        passing = sqlstate[:2] in _POSTGRES_PASSING_CLASSES or sqlstate in _POSTGRES_PASSING
    else:  # no code at all: the driver could not reach the server
        passing = isinstance(error, sa.exc.OperationalError | sa.exc.InterfaceError)
    if passing:
        return StoreUnavailable(message)
    return StoreRefused(message) if isinstance(error, sa.exc.OperationalError | sa.exc.ProgrammingError) else None


@contextmanager
def store_errors(what: str) -> Iterator[None]:
    """Database errors inside as StoreUnavailable or StoreRefused (compute_store_error); a bug as it is."""
    try:
        yield
    except sa.exc.SQLAlchemyError as e:
        error = compute_store_error(e, what)
        if error is None:
            raise
        raise error from e


def safe_url(url: str) -> str:
    """The database URL as it may be logged and shown: its password hidden."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def write_engine(engine: Engine, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Engine:
    """The same engine (same pool) whose transactions take the write lock at BEGIN, waiting for it
    at most `busy_timeout_ms` (SQLite; the collector waits less than an interval and keeps the cycle)."""
    return engine.execution_options(**{_WRITE_OPTION: busy_timeout_ms})


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Take BEGIN away from the sqlite3 module (it skips it for SELECT and
        # DDL) so that _on_begin below decides; see SQLAlchemy's SQLite docs.
        dbapi_connection.isolation_level = None
        _record.info.pop("busy_timeout_ms", None)  # a new connection of the record starts at the default
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # first: switching to WAL may wait
        if engine.url.database not in (None, "", ":memory:"):
            _switch_to_wal(cursor)  # readers never block the writer
        cursor.execute("PRAGMA synchronous=NORMAL")  # with WAL: never corrupt; a power cut may drop the last commits
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        wait_ms = conn.get_execution_options().get(_WRITE_OPTION)
        _set_busy_timeout(conn, BUSY_TIMEOUT_MS if wait_ms is None else wait_ms)
        conn.exec_driver_sql("BEGIN" if wait_ms is None else "BEGIN IMMEDIATE")


def _set_busy_timeout(conn: sa.Connection, wait_ms: int) -> None:
    """The connection's busy timeout for this transaction, set only when it differs from its last one."""
    info = conn.connection.info
    if info.get("busy_timeout_ms", BUSY_TIMEOUT_MS) != wait_ms:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait_ms)}")
        info["busy_timeout_ms"] = wait_ms


def _switch_to_wal(cursor) -> None:
    """PRAGMA journal_mode=WAL, tried again until the busy timeout while another connection writes.

    A new database is in WAL mode once its first transaction commits. Until then a second process
    starting together with the first (shards, a dashboard) must switch it itself, which needs the
    database alone: while the first one writes, SQLite answers "database is locked" at once,
    without waiting the busy timeout (an upgrade of a lock it would deadlock on).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def upgrade(url_or_engine: str | sa.URL | Engine = DEFAULT_URL, revision: str = "head") -> bool:
    """Bring the database schema to `revision` with Alembic; run on every start. True: this call migrated.

    Any number of processes may start together on a new database: the migration
    runs in one transaction that first takes the database's lock for it (SQLite:
    BEGIN IMMEDIATE; PostgreSQL: an advisory lock), and a process that waited
    finds the schema migrated by the one before it.
    """
    owned = not isinstance(url_or_engine, Engine)
    engine = make_engine(url_or_engine) if owned else url_or_engine
    try:
        if revision == "head" and read_schema_revision(engine) == SCHEMA_HEAD:
            return False
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with write_engine(engine).begin() as conn:
            lock_for_migration(conn)
            if revision == "head" and _revision(conn) == SCHEMA_HEAD:
                return False
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
            return True
    finally:
        if owned:
            engine.dispose()


def upgrade_apart(engine: Engine) -> bool:
    """upgrade() in a short-lived child process, so a collector that runs for months never holds
    Alembic and the migrations (15 MB of its resident memory, measured on a new database); a database
    already at the head costs one query. True: the child migrated. Errors as store_errors raises them."""
    if read_schema_revision(engine) == SCHEMA_HEAD:
        return False
    if engine.url.database in (None, "", ":memory:"):  # a private database: only this process sees it
        return upgrade(engine)
    url = engine.url.render_as_string(hide_password=False)  # on stdin: a command line is public
    run = [sys.executable, "-c", "from monitor.store.engine import upgrade_here; upgrade_here()"]
    # stderr: ours. A session of its own: a stop signal to the collector's process group (a terminal's
    # Ctrl-C, `timeout`) lets the migration, one transaction, finish; the collector stops after it.
    # The child is in our group from fork to setsid: blocked there, a stop signal cannot end it before
    # its session starts (it was, 3 times in 30); it inherits the block and so ignores them to its end.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        child = subprocess.Popen(run, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one taken meanwhile reaches our handler now
    said = child.communicate(url)[0].strip().splitlines()
    answer = json.loads(said[-1]) if said and said[-1].startswith("{") else {}  # the last line is the child's
    if "migrated" in answer:
        return answer["migrated"]
    if "error" in answer:
        raise (StoreUnavailable if answer["error"] == "unavailable" else StoreRefused)(answer["message"])
    raise RuntimeError(f"migrating the store in a child process ended with code {child.returncode}, said above")


def upgrade_here() -> None:
    """The child of upgrade_apart: migrate the database named on stdin and say how it went on stdout, as JSON."""
    try:
        with store_errors("cannot migrate the store"):
            answer = {"migrated": upgrade(sys.stdin.read())}
    except StoreUnavailable as e:
        answer = {"error": "unavailable", "message": str(e)}
    except StoreRefused as e:
        answer = {"error": "refused", "message": str(e)}
    print(json.dumps(answer))


def lock_for_migration(conn: sa.Connection) -> None:
    """Wait for, and hold to the end of `conn`'s transaction, the right to migrate (SQLite: BEGIN IMMEDIATE has it)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")


def read_schema_revision(engine: Engine) -> str | None:
    """The revision Alembic last brought the database to; None for a new (or foreign) database."""
    with engine.connect() as conn:
        return _revision(conn)


def _revision(conn: sa.Connection) -> str | None:
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def read_database_size(engine: Engine) -> int | None:
    """Bytes the database file uses (SQLite: pages x page size, WAL not included); None elsewhere."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
        size = conn.exec_driver_sql("PRAGMA page_size").scalar()
    return pages * size


def read_table_names(engine: Engine) -> set[str]:
    """Tables present: pages for features whose tables land later check here first."""
    with engine.connect() as conn:
        return set(sa.inspect(conn).get_table_names())
