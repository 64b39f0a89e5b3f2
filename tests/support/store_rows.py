"""The store's tables read straight with SQL, for tests that check which rows a write or a retention run left."""

from __future__ import annotations


def count(engine, table: str, where: str = "1=1") -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {where}").scalar()
