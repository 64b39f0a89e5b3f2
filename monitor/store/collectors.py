"""Coordinated collectors (`--shard kafka`) as they report themselves: one row each, written every cycle."""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.store.engine import write_engine
from monitor.store.schema import collectors

FORGET_AFTER_MS = 86_400_000  # a collector not seen for a day leaves the list


@dataclass(frozen=True)
class CollectorRow:
    name: str
    partitions: dict[int, int]  # __consumer_offsets partition -> when this collector was assigned it (ms)
    groups: int
    tail_lag: int | None  # records of its partitions its offsets-topic tail has not read (None: tail off)
    started_at: int
    seen_at: int


def write_collector(engine: Engine, cluster: str, row: CollectorRow) -> None:
    """Replace this collector's row; rows of collectors gone for a day are dropped on the way."""
    c = collectors
    values = {
        "partitions": json.dumps({str(p): at for p, at in sorted(row.partitions.items())}),
        "groups": row.groups,
        "tail_lag": row.tail_lag,
        "started_at": row.started_at,
        "seen_at": row.seen_at,
    }
    key = sa.and_(c.c.cluster == cluster, c.c.name == row.name)
    with write_engine(engine).begin() as conn:
        if conn.execute(c.update().where(key).values(**values)).rowcount == 0:
            conn.execute(c.insert().values(cluster=cluster, name=row.name, **values))
        conn.execute(c.delete().where(c.c.cluster == cluster, c.c.seen_at < row.seen_at - FORGET_AFTER_MS))


def read_collectors(engine: Engine, cluster: str) -> list[CollectorRow]:
    """The cluster's coordinated collectors, the most recently seen first."""
    c = collectors
    with engine.connect() as conn:
        rows = conn.execute(sa.select(c).where(c.c.cluster == cluster).order_by(c.c.seen_at.desc(), c.c.name)).all()
    return [
        CollectorRow(
            r.name,
            {int(p): at for p, at in json.loads(r.partitions).items()},
            r.groups,
            r.tail_lag,
            r.started_at,
            r.seen_at,
        )
        for r in rows
    ]
