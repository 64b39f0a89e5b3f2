"""Events in the store: what changed between two samples (monitor.events.compute_changes), appended, read back.

Events are facts of one moment, never updated: the collector appends each
cycle's events (Store.write_events, under the writer lock, with the rows built
here) and retention deletes those older than the history it keeps. `detail` is
JSON text, a dict of the kind's own fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import Event, EventKind
from monitor.store.schema import events
from monitor.store.sql import dumps_json, enum_or_raw, enum_value


@dataclass(frozen=True)
class EventRow:
    cluster: str
    at: int
    group_id: str
    kind: EventKind
    detail: dict


def event_values(cluster: str, items: Iterable[Event]) -> list[dict]:
    """The rows of `events` for `items`, in order."""
    return [
        {
            "cluster": cluster,
            "at": e.at,
            "group_id": e.group_id,
            "kind": enum_value(e.kind),
            "detail": dumps_json(e.detail),
        }
        for e in items
    ]


def read_events(
    engine: Engine,
    cluster: str | None = None,
    group: str | None = None,
    since: int | None = None,
    limit: int | None = None,
) -> list[EventRow]:
    """Events oldest first; with `limit`, the newest `limit` of them (still oldest first)."""
    e = events
    query = sa.select(e.c.cluster, e.c.at, e.c.group_id, e.c.kind, e.c.detail)
    if cluster is not None:
        query = query.where(e.c.cluster == cluster)
    if group is not None:
        query = query.where(e.c.group_id == group)
    if since is not None:
        query = query.where(e.c.at >= since)
    if limit is not None:
        query = query.order_by(e.c.at.desc(), e.c.id.desc()).limit(limit)
    else:
        query = query.order_by(e.c.at, e.c.id)
    with engine.connect() as conn:
        rows = [
            EventRow(c, at, gid, enum_or_raw(EventKind, kind), json.loads(detail))
            for c, at, gid, kind, detail in conn.execute(query)
        ]
    return rows[::-1] if limit is not None else rows
