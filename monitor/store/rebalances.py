"""Rebalance rows: one row per rebalance, whether polling saw it, the offsets-topic tail did, or both.

A polled rebalance that overlaps a tail row (within MERGE_SLACK_MS) merges into it, and a tail
rebalance into an overlapping polled row: the tail's exact generations and members stay, and
polling's trigger stays when it knows more (docs/architecture.md section 5).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from monitor.models import Rebalance, Trigger
from monitor.store.schema import rebalances
from monitor.store.sql import dumps_json, enum_value

MERGE_SLACK_MS = 1000  # a tail rebalance this close to a polled one's bounds is the same rebalance
TAIL_SOURCES = ("offsets_topic", "both")


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
    """Complete our own row, merge into an overlapping polled row, or add a row."""
    rb = rebalances
    group = sa.and_(rb.c.cluster == cluster, rb.c.group_id == r.group_id)
    own = conn.execute(
        sa.select(rb.c.id, rb.c.source, rb.c.started_at).where(
            group, rb.c.generation_before == r.generation_before, rb.c.source.in_(TAIL_SOURCES)
        )
    ).first()
    if own is not None:
        values = {"generation_after": r.generation_after}
        if r.ended_at is not None:
            values["ended_at"] = max(r.ended_at, own.started_at)
        if own.source == "offsets_topic":
            values.update(_tail_facts(r))
        conn.execute(rb.update().where(rb.c.id == own.id).values(**values))
        return
    moment = r.ended_at if r.ended_at is not None else r.started_at
    polled = conn.execute(
        sa.select(rb.c.id, rb.c.started_at, rb.c.ended_at)
        .where(
            group,
            rb.c.source == "polling",
            rb.c.started_at - MERGE_SLACK_MS <= moment,
            sa.or_(rb.c.ended_at.is_(None), rb.c.ended_at + MERGE_SLACK_MS >= moment),
        )
        .order_by(rb.c.started_at)
        .limit(1)
    ).first()
    if polled is not None:
        values = {
            "source": "both",
            "generation_before": r.generation_before,
            "generation_after": r.generation_after,
            **_tail_facts(r, keep_trigger=True),
        }
        if r.ended_at is not None:  # the coordinator's own time: exact (polling keeps it when it settles)
            values["ended_at"] = max(r.ended_at, polled.started_at)
        conn.execute(rb.update().where(rb.c.id == polled.id).values(**values))
        return
    started = r.started_at
    while conn.execute(sa.select(rb.c.id).where(group, rb.c.started_at == started)).first() is not None:
        started += 1  # two rebalances in one millisecond: keep both rows
    conn.execute(rb.insert().values(cluster=cluster, group_id=r.group_id, started_at=started, **rebalance_values(r)))


def _tail_facts(r: Rebalance, keep_trigger: bool = False) -> dict:
    """The exact per-generation facts of a tail rebalance; polling's trigger stays when it knows more."""
    values = rebalance_values(r)
    for name in ("ended_at", "source", "generation_before", "generation_after", "protocol"):
        values.pop(name)
    if keep_trigger:
        values.pop("trigger")
    return values


def merge_polled_rebalance(conn: Connection, cluster: str, r: Rebalance, row_id: int) -> None:
    """A polled rebalance written onto a row the tail already holds: keep the exact facts, add the rest."""
    rb = rebalances
    row = conn.execute(
        sa.select(rb.c.started_at, rb.c.ended_at, rb.c.trigger, rb.c.protocol).where(rb.c.id == row_id)
    ).one()
    values = {"source": "both"}
    if row.trigger == Trigger.UNKNOWN.value or r.trigger is Trigger.SESSION_TIMEOUT:
        values["trigger"] = r.trigger.value
    if row.ended_at is None and r.ended_at is not None:
        values["ended_at"] = r.ended_at
    if row.protocol != "consumer" and r.started_at < row.started_at:  # classic: the tail saw no start
        taken = conn.execute(
            sa.select(rb.c.id).where(
                rb.c.cluster == cluster, rb.c.group_id == r.group_id, rb.c.started_at == r.started_at
            )
        ).first()
        if taken is None:
            values["started_at"] = r.started_at
    conn.execute(rb.update().where(rb.c.id == row_id).values(**values))


def find_tail_rebalance(conn: Connection, cluster: str, r: Rebalance) -> int | None:
    """A tail-only row of the group that falls inside this polled rebalance's bounds."""
    rb = rebalances
    end = r.ended_at if r.ended_at is not None else r.started_at + 10 * 60_000
    row = conn.execute(
        sa.select(rb.c.id)
        .where(
            rb.c.cluster == cluster,
            rb.c.group_id == r.group_id,
            rb.c.source == "offsets_topic",
            sa.func.coalesce(rb.c.ended_at, rb.c.started_at) >= r.started_at - MERGE_SLACK_MS,
            rb.c.started_at <= end + MERGE_SLACK_MS,
        )
        .order_by(rb.c.started_at)
        .limit(1)
    ).first()
    return None if row is None else row.id
