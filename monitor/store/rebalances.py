"""Rebalances in the store: the rows around one rebalance in, the merge rules' placement out; read_* back.

Which row a rebalance from polling or the offsets-topic tail goes to is decided by the pure
rules in monitor/rebalancing/merge.py (docs/architecture.md section 5); this module fetches
the rows they look at and writes what they decide (Store.write_rebalances and the tail's
write_tail_update call it). One rebalance is one row, whichever source saw it, so readers
count and list rows as they are.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.models import MemberRef, Rebalance, Trigger
from monitor.rebalancing.merge import (
    Placement,
    StoredRebalance,
    place_polled,
    place_tail,
    polled_window,
    tail_window,
)
from monitor.store.schema import rebalances as rb
from monitor.store.sql import chunks, dumps_json, enum_or_raw, enum_value

STORED_COLUMNS = [f.name for f in dataclasses.fields(StoredRebalance)]


def rebalance_values(r: Rebalance) -> dict:
    return {
        "ended_at": r.ended_at,
        "protocol": r.protocol,
        "trigger": enum_value(r.trigger),
        "members_before": r.members_before,
        "members_after": r.members_after,
        "members_joined": dumps_json(list(r.joined)),
        "members_left": dumps_json(list(r.left)),
        "partitions_moved": r.partitions_moved,
        "generation_before": r.generation_before,
        "generation_after": r.generation_after,
        "source": r.source,
    }


def write_tail_rebalance(conn: Connection, cluster: str, r: Rebalance) -> None:
    rows = _rows_around(conn, cluster, r.group_id, tail_window(r), rb.c.generation_before == r.generation_before)
    _write(conn, cluster, r, place_tail(r, rows))


def write_polled_rebalance(conn: Connection, cluster: str, r: Rebalance, merged_id: int | None) -> Placement:
    """Write `r`; the placement says whether it went into the tail's row (`merged`)."""
    also = None if merged_id is None else rb.c.id == merged_id
    placement = place_polled(r, _rows_around(conn, cluster, r.group_id, polled_window(r), also), merged_id)
    _write(conn, cluster, r, placement)
    return placement


def _rows_around(conn: Connection, cluster: str, group_id: str, window: tuple[int, int], also) -> list:
    """The group's rows overlapping `window` (an unsettled row reaches forever), and those matching `also`."""
    lo, hi = window
    where = sa.and_(rb.c.started_at <= hi, sa.or_(rb.c.ended_at.is_(None), rb.c.ended_at >= lo))
    if also is not None:
        where = sa.or_(where, also)
    columns = [
        rb.c.id,
        rb.c.started_at,
        rb.c.ended_at,
        rb.c.source,
        rb.c.trigger,
        rb.c.protocol,
        rb.c.generation_before,
    ]
    found = conn.execute(sa.select(*columns).where(rb.c.cluster == cluster, rb.c.group_id == group_id, where))
    return [StoredRebalance(*row) for row in found]


def _write(conn: Connection, cluster: str, r: Rebalance, p: Placement) -> None:
    encoded = rebalance_values(r)
    values = {name: encoded[name] for name in p.take} | p.set
    if p.row_id is None:
        conn.execute(rb.insert().values(cluster=cluster, group_id=r.group_id, **values))
    elif values:
        conn.execute(rb.update().where(rb.c.id == p.row_id).values(**values))


# -- reads ------------------------------------------------------------------------------------


def read_unsettled_starts(engine: Engine, cluster: str, groups: list[str]) -> dict[str, int]:
    """{group: started_at} of each of `groups`' newest rebalance stored as begun and not yet ended."""
    out: dict[str, int] = {}
    with engine.connect() as conn:
        for chunk in chunks(groups):
            query = (
                sa.select(rb.c.group_id, sa.func.max(rb.c.started_at))
                .where(rb.c.cluster == cluster, rb.c.ended_at.is_(None), rb.c.group_id.in_(chunk))
                .group_by(rb.c.group_id)
            )
            out.update(conn.execute(query).all())
    return out


@dataclass(frozen=True)
class RebalanceRow:
    """A stored rebalance with the cluster it belongs to."""

    cluster: str
    rebalance: Rebalance


def read_rebalances(
    engine: Engine,
    cluster: str | None = None,
    group: str | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[RebalanceRow]:
    """Rebalances that started in [since, until), oldest first."""
    r = rb
    query = sa.select(r).order_by(r.c.started_at, r.c.id)
    if cluster is not None:
        query = query.where(r.c.cluster == cluster)
    if group is not None:
        query = query.where(r.c.group_id == group)
    if since is not None:
        query = query.where(r.c.started_at >= since)
    if until is not None:
        query = query.where(r.c.started_at < until)
    with engine.connect() as conn:
        return [
            RebalanceRow(
                row.cluster,
                Rebalance(
                    group_id=row.group_id,
                    started_at=row.started_at,
                    ended_at=row.ended_at,
                    protocol=row.protocol,
                    trigger=enum_or_raw(Trigger, row.trigger),
                    members_before=row.members_before,
                    members_after=row.members_after,
                    joined=_refs(row.members_joined),
                    left=_refs(row.members_left),
                    partitions_moved=row.partitions_moved,
                    generation_before=row.generation_before,
                    generation_after=row.generation_after,
                    source=row.source,
                ),
            )
            for row in conn.execute(query)
        ]


def _refs(text: str) -> tuple[MemberRef, ...]:
    return tuple(MemberRef(**d) for d in json.loads(text))


def read_rebalance_counts(engine: Engine, cluster: str, since: int) -> dict[str, int]:
    """Rebalances per group that started at or after `since`."""
    r = rb
    query = (
        sa.select(r.c.group_id, sa.func.count())
        .where(r.c.cluster == cluster, r.c.started_at >= since)
        .group_by(r.c.group_id)
    )
    with engine.connect() as conn:
        return dict(conn.execute(query).all())
