"""Offsets and lag in the store: a group's lag now, its per-partition history, and the log ends behind it.

Offsets are stored per sample (offset_samples: committed per group-partition;
partition_samples: log start and end per topic-partition), written by
Store.write_snapshot (writer.py, where they share the cycle's cached ids), so lag
is computed when read: clamped at 0, None where nothing is committed or the log
end is unknown (monitor.lag.compute_lag; group_lag_at_sample is the same rule in
SQL, one range scan per sample). Chart reads (read_lag_series,
read_total_lag_series) thin their window's samples first, per collector
(samples.py says how and why); read_lag_history and read_partition_history return
every stored point, at any resolution.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.lag import compute_lag
from monitor.models import UnknownGroup
from monitor.store.samples import LOG_ENDS_AT, read_thinned_sample_times
from monitor.store.schema import (
    assignments,
    consumer_groups,
    group_members,
    group_partitions,
    offset_samples,
    partition_samples,
    samples,
    topic_partitions,
)
from monitor.store.sql import chunks


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    lag: int | None
    member_id: str | None
    client_id: str | None
    host: str | None


@dataclass(frozen=True)
class LagPoint:
    at: int
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    lag: int | None
    resolution_ms: int  # 0 raw; else this point is the last value of such a bucket


@dataclass(frozen=True)
class PartitionPoint:
    at: int
    topic: str
    partition: int
    log_start: int
    log_end: int
    last_stable: int | None
    resolution_ms: int
    log_ends_at: int  # when the log ends were read (ClusterSnapshot.log_ends_at): the time-lag lookup's time


_LAG_SQL = sa.case(  # monitor.lag.compute_lag in SQL (the writer stores no negative offset)
    (sa.or_(offset_samples.c.committed.is_(None), partition_samples.c.log_end.is_(None)), sa.null()),
    (
        partition_samples.c.log_end > offset_samples.c.committed,
        partition_samples.c.log_end - offset_samples.c.committed,
    ),
    else_=0,
)


# (group ref, partitions, total lag, max lag) of every group with offsets in the sample bound as :sample_id
group_lag_at_sample = (
    sa.select(group_partitions.c.group_ref, sa.func.count(), sa.func.sum(_LAG_SQL), sa.func.max(_LAG_SQL))
    .select_from(offset_samples)
    .join(group_partitions, group_partitions.c.id == offset_samples.c.gp_id)
    .outerjoin(
        partition_samples,
        sa.and_(
            partition_samples.c.sample_id == offset_samples.c.sample_id,
            partition_samples.c.tp_id == group_partitions.c.tp_id,
        ),
    )
    .where(offset_samples.c.sample_id == sa.bindparam("sample_id"))
    .group_by(group_partitions.c.group_ref)
)


def read_group_lag(engine: Engine, cluster: str, group: str) -> list[PartitionLag]:
    """Per partition at the group's newest sample, with the current owner; raises UnknownGroup."""
    g, gp, tp = consumer_groups, group_partitions, topic_partitions
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(g.c.id, g.c.last_sample_id).where(g.c.cluster == cluster, g.c.group_id == group)
        ).first()
        if found is None:
            raise UnknownGroup(f"group {group!r} is not in the store for cluster {cluster!r}")
        gref, sample_id = found
        offsets = {
            (topic, partition): (committed, log_end)
            for topic, partition, committed, log_end in conn.execute(
                sa.select(tp.c.topic, tp.c.partition, offset_samples.c.committed, partition_samples.c.log_end)
                .select_from(gp)
                .join(tp, tp.c.id == gp.c.tp_id)
                .join(
                    offset_samples, sa.and_(offset_samples.c.sample_id == sample_id, offset_samples.c.gp_id == gp.c.id)
                )
                .outerjoin(
                    partition_samples,
                    sa.and_(partition_samples.c.sample_id == sample_id, partition_samples.c.tp_id == gp.c.tp_id),
                )
                .where(gp.c.group_ref == gref)
            )
        }
        a, m = assignments, group_members
        owners = {
            (topic, partition): owner
            for topic, partition, owner in conn.execute(
                sa.select(a.c.topic, a.c.partition, a.c.member_id).where(
                    a.c.cluster == cluster, a.c.group_id == group, a.c.valid_to.is_(None)
                )
            )
        }
        who = {
            mid: (client, host)
            for mid, client, host in conn.execute(
                sa.select(m.c.member_id, m.c.client_id, m.c.host).where(
                    m.c.cluster == cluster, m.c.group_id == group, m.c.valid_to.is_(None)
                )
            )
        }
        unsampled = [key for key in owners if key not in offsets]
        if unsampled and sample_id is not None:
            # Assigned but nothing committed and not reported: show the log end anyway.
            topics = sorted({topic for topic, _ in unsampled})
            ends = {
                (topic, partition): log_end
                for topic, partition, log_end in conn.execute(
                    sa.select(tp.c.topic, tp.c.partition, partition_samples.c.log_end)
                    .join(partition_samples, partition_samples.c.tp_id == tp.c.id)
                    .where(tp.c.cluster == cluster, tp.c.topic.in_(topics), partition_samples.c.sample_id == sample_id)
                )
            }
            for key in unsampled:
                offsets[key] = (None, ends.get(key))
        elif unsampled:
            for key in unsampled:
                offsets[key] = (None, None)
    rows = []
    for (topic, partition), (committed, log_end) in sorted(offsets.items()):
        owner = owners.get((topic, partition))
        client, host = who.get(owner, (None, None))
        rows.append(
            PartitionLag(topic, partition, committed, log_end, compute_lag(committed, log_end), owner, client, host)
        )
    return rows


def read_lag_history(engine: Engine, cluster: str, group: str, since: int, until: int | None = None) -> list[LagPoint]:
    """Every stored point of a group's partitions with since <= at < until, any resolution."""
    g, gp, tp, s = consumer_groups, group_partitions, topic_partitions, samples
    query = (
        sa.select(
            s.c.taken_at,
            tp.c.topic,
            tp.c.partition,
            offset_samples.c.committed,
            partition_samples.c.log_end,
            s.c.resolution_ms,
        )
        .select_from(s)
        .join(g, sa.and_(g.c.cluster == cluster, g.c.group_id == group))
        .join(gp, gp.c.group_ref == g.c.id)
        .join(offset_samples, sa.and_(offset_samples.c.sample_id == s.c.id, offset_samples.c.gp_id == gp.c.id))
        .join(tp, tp.c.id == gp.c.tp_id)
        .outerjoin(
            partition_samples, sa.and_(partition_samples.c.sample_id == s.c.id, partition_samples.c.tp_id == gp.c.tp_id)
        )
        .where(s.c.cluster == cluster, s.c.taken_at >= since)
        .order_by(s.c.taken_at, tp.c.topic, tp.c.partition)
    )
    if until is not None:
        query = query.where(s.c.taken_at < until)
    with engine.connect() as conn:
        return [
            LagPoint(at, topic, partition, committed, log_end, compute_lag(committed, log_end), res)
            for at, topic, partition, committed, log_end, res in conn.execute(query)
        ]


def read_partition_history(
    engine: Engine, cluster: str, since: int, until: int | None = None, topic: str | None = None
) -> list[PartitionPoint]:
    """Log start/end points per partition with since <= at < until: the time-lag lookup tables."""
    tp, s, p = topic_partitions, samples, partition_samples
    query = (
        sa.select(s.c.taken_at, p.c.tp_id, p.c.log_start, p.c.log_end, p.c.lso_gap, s.c.resolution_ms, LOG_ENDS_AT)
        .select_from(s)
        .join(p, p.c.sample_id == s.c.id)
        .where(s.c.cluster == cluster, s.c.taken_at >= since)
        .order_by(s.c.taken_at)
    )
    if until is not None:
        query = query.where(s.c.taken_at < until)
    names = sa.select(tp.c.id, tp.c.topic, tp.c.partition).where(tp.c.cluster == cluster)
    with engine.connect() as conn:
        if topic is not None:
            names = names.where(tp.c.topic == topic)
        ids = {rid: (t, part) for rid, t, part in conn.execute(names)}
        if topic is not None:
            # (sample_id, tp_id) seeks per sample instead of scanning every partition of it
            query = query.where(p.c.tp_id.in_(list(ids)))
        points = [
            PartitionPoint(at, *ids[tp_id], start, end, None if gap is None else end - gap, res, read_at)
            for at, tp_id, start, end, gap, res, read_at in conn.execute(query)
        ]
    return sorted(points, key=lambda x: (x.at, x.topic, x.partition))


def read_lag_series(
    engine: Engine, cluster: str, group: str, since: int, until: int | None = None, points: int = 300
) -> list[LagPoint]:
    """A group's per-partition lag at up to `points` samples of the window (its shard's), oldest first."""
    g, gp, tp = consumer_groups, group_partitions, topic_partitions
    out: list[LagPoint] = []
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(g.c.id, samples.c.shard)
            .outerjoin(samples, samples.c.id == g.c.last_sample_id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).first()
        if found is None:
            return []
        gref, shard = found
        chosen = read_thinned_sample_times(engine, cluster, since, until, points, shard)
        if not chosen:
            return []
        at_of = dict(chosen)
        names = {
            gp_id: (tp_id, topic, part)
            for gp_id, tp_id, topic, part in conn.execute(
                sa.select(gp.c.id, gp.c.tp_id, tp.c.topic, tp.c.partition)
                .join(tp, tp.c.id == gp.c.tp_id)
                .where(gp.c.group_ref == gref)
            )
        }
        if not names:
            return []
        ids = [sid for sid, _ in chosen]
        for chunk in chunks(ids):
            query = (
                sa.select(
                    offset_samples.c.sample_id,
                    offset_samples.c.gp_id,
                    offset_samples.c.committed,
                    partition_samples.c.log_end,
                )
                .select_from(offset_samples)
                .join(group_partitions, group_partitions.c.id == offset_samples.c.gp_id)
                .outerjoin(
                    partition_samples,
                    sa.and_(
                        partition_samples.c.sample_id == offset_samples.c.sample_id,
                        partition_samples.c.tp_id == group_partitions.c.tp_id,
                    ),
                )
                .where(offset_samples.c.sample_id.in_(chunk), group_partitions.c.group_ref == gref)
            )
            for sid, gp_id, committed, log_end in conn.execute(query):
                _, topic, part = names[gp_id]
                out.append(LagPoint(at_of[sid], topic, part, committed, log_end, compute_lag(committed, log_end), 0))
    return sorted(out, key=lambda p: (p.at, p.topic, p.partition))


def read_total_lag_series(
    engine: Engine, cluster: str, since: int, until: int | None = None, points: int = 20
) -> dict[str, list[tuple[int, int]]]:
    """Per group, (at, total lag) at up to `points` samples of the window: the overview's sparklines."""
    chosen = read_thinned_sample_times(engine, cluster, since, until, points)
    series: dict[str, list[tuple[int, int]]] = {}
    with engine.connect() as conn:
        names = dict(
            conn.execute(
                sa.select(consumer_groups.c.id, consumer_groups.c.group_id).where(consumer_groups.c.cluster == cluster)
            ).all()
        )
        for sample_id, at in chosen:
            for gref, _n, total, _worst in conn.execute(group_lag_at_sample, {"sample_id": sample_id}):
                if gref in names and total is not None:
                    series.setdefault(names[gref], []).append((at, int(total)))
    return series
