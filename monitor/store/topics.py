"""Topics in the store: every partition's log start and end at the newest sample, and who consumes it.

A sample holds the log ends of the topics its groups read, so with collector
shards each shard's newest sample is asked for its partitions and a partition
two shards sample is taken from the newer one. Produce rates are log-end growth
between the newest sample and the oldest of the window (of the same shard).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.store.schema import (
    consumer_groups,
    group_partitions,
    group_states,
    offset_samples,
    partition_samples,
    samples,
    topic_partitions,
)


@dataclass(frozen=True)
class TopicPartitionRow:
    topic: str
    partition: int
    log_start: int
    log_end: int
    rate_per_s: float | None  # log-end growth over the window; None with one sample


@dataclass(frozen=True)
class TopicConsumer:
    topic: str
    group_id: str
    partitions: int
    total_lag: int | None


def read_topic_partitions(engine: Engine, cluster: str, since: int) -> list[TopicPartitionRow]:
    """Every partition at the newest sample that has partitions (of each collector shard: each samples
    the topics its groups read), with its produce rate since `since`."""
    s, p, tp = samples, partition_samples, topic_partitions
    found: dict[int, tuple[int, TopicPartitionRow]] = {}  # tp_id -> (sampled at, row)
    with engine.connect() as conn:
        newest_ids = (
            sa.select(sa.func.max(s.c.id)).where(s.c.cluster == cluster, s.c.partitions > 0).group_by(s.c.shard)
        )
        for newest in conn.execute(sa.select(s.c.id, s.c.taken_at, s.c.shard).where(s.c.id.in_(newest_ids))).all():
            oldest = conn.execute(
                sa.select(s.c.id, s.c.taken_at)
                .where(
                    s.c.cluster == cluster,
                    s.c.shard == newest.shard,
                    s.c.partitions > 0,
                    s.c.taken_at >= since,
                    s.c.id < newest.id,
                )
                .order_by(s.c.taken_at, s.c.id)
                .limit(1)
            ).first()
            now_rows = conn.execute(
                sa.select(tp.c.id, tp.c.topic, tp.c.partition, p.c.log_start, p.c.log_end)
                .join(tp, tp.c.id == p.c.tp_id)
                .where(p.c.sample_id == newest.id)
            ).all()
            before = (
                {}
                if oldest is None
                else dict(conn.execute(sa.select(p.c.tp_id, p.c.log_end).where(p.c.sample_id == oldest.id)).all())
            )
            for tp_id, topic, part, start, end in now_rows:
                rate = None
                if oldest is not None and tp_id in before and newest.taken_at > oldest.taken_at:
                    rate = max(0, end - before[tp_id]) * 1000 / (newest.taken_at - oldest.taken_at)
                if tp_id not in found or found[tp_id][0] < newest.taken_at:
                    found[tp_id] = (newest.taken_at, TopicPartitionRow(topic, part, start, end, rate))
    return sorted((row for _, row in found.values()), key=lambda r: (r.topic, r.partition))


def read_topic_consumers(engine: Engine, cluster: str) -> list[TopicConsumer]:
    """Every current group reading each topic, with its lag on that topic at the group's newest sample."""
    g, gp, tp, o, p = consumer_groups, group_partitions, topic_partitions, offset_samples, partition_samples
    lag = sa.case(
        (sa.or_(o.c.committed.is_(None), p.c.log_end.is_(None)), sa.null()),
        (p.c.log_end > o.c.committed, p.c.log_end - o.c.committed),
        else_=0,
    )
    query = (
        sa.select(tp.c.topic, g.c.group_id, sa.func.count(), sa.func.sum(lag))
        .select_from(g)
        .join(gp, gp.c.group_ref == g.c.id)
        .join(tp, tp.c.id == gp.c.tp_id)
        .join(o, sa.and_(o.c.sample_id == g.c.last_sample_id, o.c.gp_id == gp.c.id))
        .outerjoin(p, sa.and_(p.c.sample_id == g.c.last_sample_id, p.c.tp_id == gp.c.tp_id))
        .where(g.c.cluster == cluster)
        .group_by(tp.c.topic, g.c.group_id)
    )
    current = sa.select(group_states.c.group_id).where(
        group_states.c.cluster == cluster, group_states.c.valid_to.is_(None)
    )
    with engine.connect() as conn:
        alive = set(conn.execute(current).scalars())
        rows = [
            TopicConsumer(topic, gid, n, None if total is None else int(total))
            for topic, gid, n, total in conn.execute(query)
            if gid in alive
        ]
    return sorted(rows, key=lambda r: (r.topic, r.group_id))
