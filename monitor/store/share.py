"""Share groups in the store: each share-partition's start offset and in-flight records at a sample.

Written by Store.write_snapshot (writer._write_share_partitions) beside the
position offset_samples holds for the same group-partition; read here for the
CLI's `lag`/`share` views and the dashboard's in-flight picture.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import SharePartition, TopicPartition, UnknownGroup
from monitor.store.schema import consumer_groups, group_partitions, samples, share_partition_samples, topic_partitions


def read_share_partitions(engine: Engine, cluster: str, group: str) -> dict[TopicPartition, SharePartition]:
    """The group's share-partitions at its newest sample (empty for other group types); raises UnknownGroup."""
    g, gp, tp, sp = consumer_groups, group_partitions, topic_partitions, share_partition_samples
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(g.c.id, g.c.last_sample_id, samples.c.taken_at)
            .outerjoin(samples, samples.c.id == g.c.last_sample_id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).first()
        if found is None:
            raise UnknownGroup(f"group {group!r} is not in the store for cluster {cluster!r}")
        gref, sample_id, _ = found
        rows = conn.execute(
            sa.select(
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
            .where(sp.c.sample_id == sample_id, gp.c.group_ref == gref)
        ).all()
    return {
        TopicPartition(topic, partition): SharePartition(
            start_offset=start,
            delivery_complete=complete,
            acknowledged=acked,
            archived=archived,
            redelivering=redelivering,
            max_delivery_count=most,
        )
        for topic, partition, start, complete, acked, archived, redelivering, most in rows
    }
