"""Health in the store: the status history, the health engine's saved state, the samples it restarts from.

The collector's health stage (monitor.health.stage) decides the status changes and the collector
writes them with its cycle (Store.write_cycle); `monitor
status` and the dashboard read what it wrote (the newest status of each group and
partition, and its history), so they show the engine's own verdicts and reasons
instead of judging again.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.models import Status, TopicPartition, intern_tp
from monitor.store.engine import write_engine
from monitor.store.schema import (
    consumer_groups,
    group_partitions,
    group_status,
    health_state,
    offset_samples,
    partition_samples,
    partition_status,
    samples,
    topic_partitions,
)


@dataclass(frozen=True)
class StatusRow:
    at: int
    group_id: str
    topic: str | None  # None for the group's own row
    partition: int | None
    status: Status
    total_lag: int | None = None


@dataclass(frozen=True)
class PartitionVerdict:
    """A partition's newest status as the collector judged it: since when, and why."""

    status: Status
    since: int
    reason: str | None


@dataclass(frozen=True)
class GroupHealth:
    """A group's newest stored status (written only when it changes, so `since` is when it began)."""

    status: Status
    worst: Status  # the worst partition status (STOP/STALL/REWIND are kept here)
    since: int


# -- status history -------------------------------------------------------------------------


class StatusChanges(NamedTuple):
    """One cycle's status changes, written with the cycle (Store.write_cycle).

    partitions: (group, tp, status[, reason]); groups: (group, status, worst, lag, complete).
    """

    at: int
    partitions: tuple = ()
    groups: tuple = ()


def write_status_changes(
    engine: Engine,
    cluster: str,
    at: int,
    partitions: Iterable[tuple[str, TopicPartition, Status] | tuple[str, TopicPartition, Status, str]],
    groups: Iterable[tuple[str, Status, Status, int, float]],
) -> None:
    """Append changed statuses in a transaction of their own (the collector writes them with its cycle)."""
    changes = StatusChanges(at, tuple(partitions), tuple(groups))
    if changes.partitions or changes.groups:
        with write_engine(engine).begin() as conn:
            insert_status_changes(conn, cluster, changes)


def insert_status_changes(conn: Connection, cluster: str, changes: StatusChanges) -> None:
    """Append `changes` in `conn`'s transaction."""
    at = changes.at
    p_rows = [
        {
            "cluster": cluster,
            "group_id": p[0],
            "topic": p[1].topic,
            "partition": p[1].partition,
            "at": at,
            "status": int(p[2]),
            "reason": p[3] if len(p) > 3 else None,
        }
        for p in changes.partitions
    ]
    g_rows = [
        {
            "cluster": cluster,
            "group_id": g,
            "at": at,
            "status": int(s),
            "worst": int(w),
            "total_lag": lag,
            "complete": complete,
        }
        for g, s, w, lag, complete in changes.groups
    ]
    if p_rows:
        conn.execute(partition_status.insert(), p_rows)
    if g_rows:
        conn.execute(group_status.insert(), g_rows)


def read_current_statuses(engine: Engine, cluster: str) -> tuple[dict, dict]:
    """({(group, tp): status}, {group: (status, worst)}) as last written: the collector's starting point."""
    p, g = partition_status, group_status
    newest_p = (
        sa.select(sa.func.max(p.c.id)).where(p.c.cluster == cluster).group_by(p.c.group_id, p.c.topic, p.c.partition)
    )
    newest_g = sa.select(sa.func.max(g.c.id)).where(g.c.cluster == cluster).group_by(g.c.group_id)
    with engine.connect() as conn:
        parts = {
            (gid, intern_tp(t, n)): Status(s)
            for gid, t, n, s in conn.execute(
                sa.select(p.c.group_id, p.c.topic, p.c.partition, p.c.status).where(p.c.id.in_(newest_p))
            )
        }
        groups = {
            gid: (Status(s), Status(w))
            for gid, s, w in conn.execute(sa.select(g.c.group_id, g.c.status, g.c.worst).where(g.c.id.in_(newest_g)))
        }
    return parts, groups


def read_status_history(engine: Engine, cluster: str, group: str, since: int | None = None) -> list[StatusRow]:
    """Status changes of a group and its partitions, oldest first (a step function per series)."""
    p, g = partition_status, group_status
    pq = sa.select(p.c.at, p.c.topic, p.c.partition, p.c.status).where(p.c.cluster == cluster, p.c.group_id == group)
    gq = sa.select(g.c.at, g.c.status, g.c.total_lag).where(g.c.cluster == cluster, g.c.group_id == group)
    if since is not None:
        pq, gq = pq.where(p.c.at >= since), gq.where(g.c.at >= since)
    with engine.connect() as conn:
        rows = [StatusRow(at, group, None, None, Status(s), lag) for at, s, lag in conn.execute(gq)]
        rows += [StatusRow(at, group, t, n, Status(s)) for at, t, n, s in conn.execute(pq)]
    return sorted(rows, key=lambda r: (r.at, r.topic is not None, r.topic or "", r.partition or 0))


def read_recent_commit_samples(
    engine: Engine,
    cluster: str,
    last_samples: int,
    shard: str | None = None,
    since: int | None = None,
) -> dict[tuple[str, TopicPartition], list[tuple[int, int | None, int | None]]]:
    """(taken_at, committed, log_end) of every group-partition over the newest raw samples, oldest first.

    What the health engine's windows are rebuilt from when the collector restarts:
    all samples taken after `since` (its saved state's time), else the newest `last_samples`.
    With `shard`, the newest samples of that collector shard (the only ones
    holding its groups); otherwise the cluster's newest, whichever shard took them.
    """
    s, o, gp, g, tp, ps = (
        samples,
        offset_samples,
        group_partitions,
        consumer_groups,
        topic_partitions,
        partition_samples,
    )
    ids = sa.select(s.c.id).where(s.c.cluster == cluster, s.c.ok.is_(True), s.c.resolution_ms == 0)
    if shard is not None:
        ids = ids.where(s.c.shard == shard)
    ids = (
        ids.where(s.c.taken_at > since) if since is not None else ids.order_by(s.c.id.desc()).limit(last_samples)
    ).subquery()
    query = (
        sa.select(s.c.taken_at, g.c.group_id, tp.c.topic, tp.c.partition, o.c.committed, ps.c.log_end)
        .select_from(o)
        .join(ids, ids.c.id == o.c.sample_id)
        .join(s, s.c.id == o.c.sample_id)
        .join(gp, gp.c.id == o.c.gp_id)
        .join(g, g.c.id == gp.c.group_ref)
        .join(tp, tp.c.id == gp.c.tp_id)
        .outerjoin(ps, sa.and_(ps.c.sample_id == o.c.sample_id, ps.c.tp_id == gp.c.tp_id))
        .order_by(s.c.taken_at)
    )
    out: dict = {}
    with engine.connect() as conn:
        for at, gid, topic, partition, committed, log_end in conn.execute(query):
            out.setdefault((gid, intern_tp(topic, partition)), []).append((at, committed, log_end))
    return out


# -- alerts ---------------------------------------------------------------------------------


def read_sample_time(engine: Engine, cluster: str, group: str) -> int | None:
    """When the group's newest sample was taken."""
    g = consumer_groups
    with engine.connect() as conn:
        return conn.execute(
            sa.select(samples.c.taken_at)
            .join(g, g.c.last_sample_id == samples.c.id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).scalar()


def read_partition_verdicts(engine: Engine, cluster: str, group: str) -> dict[TopicPartition, PartitionVerdict]:
    """The newest status row of each partition of `group`."""
    p = partition_status
    newest = (
        sa.select(sa.func.max(p.c.id))
        .where(p.c.cluster == cluster, p.c.group_id == group)
        .group_by(p.c.topic, p.c.partition)
    )
    with engine.connect() as conn:
        return {
            TopicPartition(t, n): PartitionVerdict(Status(s), at, reason)
            for t, n, s, at, reason in conn.execute(
                sa.select(p.c.topic, p.c.partition, p.c.status, p.c.at, p.c.reason).where(p.c.id.in_(newest))
            )
        }


def read_group_health_now(engine: Engine, cluster: str) -> dict[str, GroupHealth]:
    """Every group's newest row of group_status."""
    g = group_status
    newest = sa.select(sa.func.max(g.c.id)).where(g.c.cluster == cluster).group_by(g.c.group_id)
    with engine.connect() as conn:
        return {
            gid: GroupHealth(Status(s), Status(w), at)
            for gid, s, w, at in conn.execute(
                sa.select(g.c.group_id, g.c.status, g.c.worst, g.c.at).where(g.c.id.in_(newest))
            )
        }


def read_partition_health_now(engine: Engine, cluster: str, group: str) -> dict[tuple[str, int], Status]:
    """A group's newest status per partition."""
    p = partition_status
    newest = (
        sa.select(sa.func.max(p.c.id))
        .where(p.c.cluster == cluster, p.c.group_id == group)
        .group_by(p.c.topic, p.c.partition)
    )
    with engine.connect() as conn:
        return {
            (t, n): Status(s)
            for t, n, s in conn.execute(sa.select(p.c.topic, p.c.partition, p.c.status).where(p.c.id.in_(newest)))
        }


# -- the engine's saved state ----------------------------------------------------------------


def write_health_state(engine: Engine, cluster: str, shard: str, saved_at: int, records: Iterable) -> None:
    """Replace this collector shard's saved health state: its records as compressed JSON lines, compressed
    as they come (no whole-state string in memory)."""
    packer = zlib.compressobj(1)
    chunks = [packer.compress(json.dumps(r, separators=(",", ":")).encode() + b"\n") for r in records]
    chunks.append(packer.flush())
    body = b"".join(chunks)
    key = sa.and_(health_state.c.cluster == cluster, health_state.c.shard == shard)
    with write_engine(engine).begin() as conn:
        if not conn.execute(health_state.update().where(key).values(saved_at=saved_at, body=body)).rowcount:
            conn.execute(health_state.insert().values(cluster=cluster, shard=shard, saved_at=saved_at, body=body))


def read_health_state(engine: Engine, cluster: str, shard: str) -> tuple[int, Iterator] | None:
    """(saved_at, its records, read as they are decompressed) of this collector shard, or None when it never
    saved one."""
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(health_state.c.saved_at, health_state.c.body).where(
                health_state.c.cluster == cluster, health_state.c.shard == shard
            )
        ).first()
    return None if row is None else (row.saved_at, _json_lines(row.body))


def _json_lines(body: bytes, chunk: int = 1 << 20) -> Iterator:
    """Each line of a compressed body of JSON lines, decompressed a megabyte at a time."""
    unpacker, rest = zlib.decompressobj(), b""
    while body:
        *lines, rest = (rest + unpacker.decompress(body, chunk)).split(b"\n")
        body = unpacker.unconsumed_tail
        yield from map(json.loads, lines)
    yield from map(json.loads, filter(None, (rest + unpacker.flush()).split(b"\n")))
