"""Share groups in the store: each share-partition's start offset and in-flight records at a sample.

Written by Store.write_snapshot (writer._write_share_partitions) beside the
position offset_samples holds for the same group-partition; read here for the
CLI's `lag`/`share` views, the dashboard's in-flight picture, and the health
engine's archived counts when a collector restarts or takes a group over.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import SharePartition, TopicPartition, UnknownGroup, intern_tp
from monitor.store.schema import consumer_groups, group_partitions, samples, share_partition_samples, topic_partitions


def read_share_partitions(engine: Engine, cluster: str, group: str) -> dict[TopicPartition, SharePartition]:
    """The group's share-partitions at its newest sample (empty for other group types); raises UnknownGroup."""
    g, gp, sp = consumer_groups, group_partitions, share_partition_samples
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(g.c.id, g.c.last_sample_id, samples.c.taken_at)
            .outerjoin(samples, samples.c.id == g.c.last_sample_id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).first()
        if found is None:
            raise UnknownGroup(f"group {group!r} is not in the store for cluster {cluster!r}")
        gref, sample_id, _ = found
        rows = conn.execute(_share_rows().where(sp.c.sample_id == sample_id, gp.c.group_ref == gref)).all()
    return {TopicPartition(topic, partition): _share_partition(*numbers) for topic, partition, *numbers in rows}


def read_share_history(
    engine: Engine, cluster: str, since: int, groups: Collection[str] | None = None
) -> dict[str, list[tuple[int, dict[TopicPartition, SharePartition]]]]:
    """Each share group's (or each of `groups`') share-partitions at every raw sample taken after `since`,
    oldest first: what the health engine replays to learn the archived counts and rises it did not see."""
    g, gp, sp = consumer_groups, group_partitions, share_partition_samples
    query = (
        _share_rows(samples.c.taken_at, g.c.group_id)
        .join(samples, samples.c.id == sp.c.sample_id)
        .join(g, g.c.id == gp.c.group_ref)
        .where(g.c.cluster == cluster, samples.c.taken_at > since, samples.c.resolution_ms == 0)
        .order_by(samples.c.taken_at)
    )
    if groups is not None:
        query = query.where(g.c.group_id.in_(groups))
    out: dict[str, dict[int, dict[TopicPartition, SharePartition]]] = {}
    with engine.connect() as conn:
        for at, group_id, topic, partition, *numbers in conn.execute(query):
            out.setdefault(group_id, {}).setdefault(at, {})[intern_tp(topic, partition)] = _share_partition(*numbers)
    return {group_id: list(points.items()) for group_id, points in out.items()}


def _share_partition(
    start: int, complete: int | None, acked: int, archived: int, redelivering: int, most: int
) -> SharePartition:
    return SharePartition(
        start_offset=start,
        delivery_complete=complete,
        acknowledged=acked,
        archived=archived,
        redelivering=redelivering,
        max_delivery_count=most,
    )


def _share_rows(*leading: sa.ColumnElement) -> sa.Select:
    """`leading`, then topic, partition and _share_partition's arguments, per stored share-partition."""
    gp, tp, sp = group_partitions, topic_partitions, share_partition_samples
    return (
        sa.select(
            *leading,
            tp.c.topic,
            tp.c.partition,
            sp.c.start_offset,
            sp.c.delivery_complete,
            sp.c.acknowledged,
            sp.c.archived,
            sp.c.redelivering,
            sp.c.max_delivery_count,
        )
        .select_from(sp)
        .join(gp, gp.c.id == sp.c.gp_id)
        .join(tp, tp.c.id == gp.c.tp_id)
    )
