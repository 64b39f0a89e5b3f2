"""SQL helpers the store's subject modules share: interning dimension rows, executemany straight to
the driver, INSERT .. ON CONFLICT DO NOTHING on both dialects, chunks of ids, enums and the JSON of
TEXT columns both ways (enum_value in, enum_or_raw out)."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable, Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

CHUNK = 500  # ids per IN (...) list: well under every driver's parameter limit


def intern_ids(conn: Connection, table: sa.Table, ids: dict, keys: Iterable, make_row) -> None:
    """Give every key not yet in `ids` a row in `table` and remember its id.

    Another collector shard may add the same key at the same moment: the insert
    skips keys that exist (ON CONFLICT DO NOTHING; PostgreSQL first waits for the
    other transaction) and the ids are read back by the table's unique key, so
    both writers get the one row's id and neither fails.
    """
    missing = [k for k in dict.fromkeys(keys) if k not in ids]
    if not missing:
        return
    rows = [make_row(k) for k in missing]
    conn.execute(insert_ignoring_duplicates(conn, table), rows)
    columns = [table.c[name] for name in _unique_columns(table)]
    wanted = [tuple(row[c.name] for c in columns) for row in rows]
    found: dict[tuple, int] = {}
    for chunk in chunks(wanted):
        query = sa.select(table.c.id, *columns).where(sa.tuple_(*columns).in_(chunk))
        found.update((tuple(key), rid) for rid, *key in conn.execute(query))
    ids.update((k, found[w]) for k, w in zip(missing, wanted, strict=True))


def insert_ignoring_duplicates(conn: Connection, table: sa.Table):
    """INSERT .. ON CONFLICT DO NOTHING, for the two dialects lagmon runs on (SQLite, PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table).on_conflict_do_nothing()


def _unique_columns(table: sa.Table) -> tuple[str, ...]:
    """The columns of the table's one unique constraint: what a dimension row is interned by."""
    (unique,) = [c for c in table.constraints if isinstance(c, sa.UniqueConstraint)]
    return tuple(c.name for c in unique.columns)


def bulk_insert(conn: Connection, table: sa.Table, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """executemany of an INSERT straight to the driver (see executemany)."""
    executemany(conn, table.name, table.insert, columns, rows, column_keys=list(columns))


def executemany(
    conn: Connection,
    name: str,
    statement: Callable[[], sa.sql.Executable],
    names: tuple[str, ...],
    rows: list[tuple],
    column_keys: list[str] | None = None,
) -> None:
    """executemany straight to the driver: the hot path skips SQLAlchemy's per-row parameter
    processing (2/3 of the cycle otherwise); only plain ints/None go here. `rows` hold values
    in the order of `names` (bind parameter or column names); `statement()` is compiled once per
    dialect and `name`."""
    if not rows:
        return
    key = (conn.dialect.name, name, names)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _COMPILED[key] = statement().compile(dialect=conn.dialect, column_keys=column_keys)
    if compiled.positional:
        order = [names.index(name) for name in compiled.positiontup]
        if order != list(range(len(names))):
            rows = [tuple(r[i] for i in order) for r in rows]
        conn.exec_driver_sql(compiled.string, rows)
    else:
        conn.exec_driver_sql(compiled.string, [dict(zip(names, r, strict=True)) for r in rows])


_COMPILED: dict[tuple, sa.sql.compiler.Compiled] = {}


def insert_returning_ids(conn: Connection, table: sa.Table, rows: list[dict]) -> list[int]:
    if not rows:
        return []
    stmt = table.insert().returning(table.c.id, sort_by_parameter_order=True)
    return list(conn.execute(stmt, rows).scalars())


def chunks(items: list, size: int = CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def enum_value(x):
    return x.value if isinstance(x, enum.Enum) else x


def enum_or_raw(cls, value):
    """The enum member, or the raw string if a newer writer stored a value we do not know."""
    try:
        return cls(value)
    except ValueError:
        return value


def _json_default(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps_json(obj) -> str:
    """Compact, stable JSON for the TEXT detail columns (dataclasses and enums allowed)."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, default=_json_default)
