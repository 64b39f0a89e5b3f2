"""The last answer the store holds for groups: what a restarted collector carries for a group its
first answer leaves out (collector.compute_carried), instead of taking the group for gone.

Rebuilt from the open validity intervals (state, members, owners) and the group's newest sample
(committed offsets, the log offsets of the same sample, share-partitions); marked `stale_since`
that sample's time, so nothing of it is stored or exported as new.
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import GroupSnapshot, GroupState, GroupType, Member, PartitionOffsets, TopicPartition
from monitor.store.group_facts import read_member_detail, read_topology
from monitor.store.schema import (
    assignments,
    consumer_groups,
    group_members,
    group_partitions,
    group_states,
    offset_samples,
    partition_samples,
    samples,
    topic_partitions,
)
from monitor.store.share import read_share_partitions
from monitor.store.sql import chunks, enum_or_raw


def read_current_groups(engine: Engine, cluster: str) -> set[str]:
    """The groups the store holds as current (an open state interval)."""
    st = group_states
    with engine.connect() as conn:
        return set(
            conn.execute(sa.select(st.c.group_id).where(st.c.cluster == cluster, st.c.valid_to.is_(None))).scalars()
        )


def read_last_answers(
    engine: Engine, cluster: str, group_ids: list[str]
) -> tuple[dict[str, GroupSnapshot], dict[TopicPartition, PartitionOffsets]]:
    """({group: its last stored answer, stale}, the log offsets of its partitions at that answer) for the
    current ones of `group_ids`."""
    st, m, a = group_states, group_members, assignments
    states, members, owned, offsets, answered_at = {}, defaultdict(list), defaultdict(list), defaultdict(dict), {}
    partitions: dict[TopicPartition, PartitionOffsets] = {}
    with engine.connect() as conn:
        for ids in chunks(sorted(group_ids)):
            open_rows = (st.c.cluster == cluster, st.c.group_id.in_(ids), st.c.valid_to.is_(None))
            states.update((row.group_id, row) for row in conn.execute(sa.select(st).where(*open_rows)))
            for row in conn.execute(
                sa.select(m).where(m.c.cluster == cluster, m.c.group_id.in_(ids), m.c.valid_to.is_(None))
            ):
                members[row.group_id].append(row)
            for group_id, member_id, topic, partition in conn.execute(
                sa.select(a.c.group_id, a.c.member_id, a.c.topic, a.c.partition).where(
                    a.c.cluster == cluster, a.c.group_id.in_(ids), a.c.valid_to.is_(None)
                )
            ):
                owned[(group_id, member_id)].append(TopicPartition(topic, partition))
            for group_id, at, topic, partition, committed, start, end, lso_gap in conn.execute(
                _newest_offsets(cluster, ids)
            ):
                tp = TopicPartition(topic, partition)
                answered_at[group_id] = at
                offsets[group_id][tp] = committed
                if end is not None:
                    partitions[tp] = PartitionOffsets(start, end, None if lso_gap is None else end - lso_gap)
    groups = {}
    for group_id, row in states.items():
        type_ = enum_or_raw(GroupType, row.type)
        groups[group_id] = GroupSnapshot(
            group_id,
            enum_or_raw(GroupState, row.state),
            type_,
            protocol_type=row.protocol_type,
            assignor=row.assignor,
            coordinator=row.coordinator,
            members=tuple(_member(r, tuple(sorted(owned[(group_id, r.member_id)]))) for r in members[group_id]),
            committed=offsets[group_id],
            state_inferred=bool(row.state_inferred),
            note=row.note,
            epoch=row.epoch,
            assignment_epoch=row.assignment_epoch,
            share=read_share_partitions(engine, cluster, group_id) if type_ is GroupType.SHARE else None,
            topology=read_topology(row.topology),
            stale_since=answered_at.get(group_id, row.valid_from),
        )
    return groups, partitions


def _member(row, assignment: tuple[TopicPartition, ...]) -> Member:
    subscribed, streams = read_member_detail(row.detail)
    return Member(
        row.member_id,
        row.client_id,
        row.host,
        instance_id=row.instance_id,
        assignment=assignment,
        rack=row.rack,
        subscribed=subscribed,
        streams=streams,
    )


def _newest_offsets(cluster: str, group_ids: list[str]):
    """(group, sample time, topic, partition, committed, log start, log end, lso gap) at each group's newest sample."""
    g, gp, tp, o, p = consumer_groups, group_partitions, topic_partitions, offset_samples, partition_samples
    return (
        sa.select(g.c.group_id, samples.c.taken_at, tp.c.topic, tp.c.partition, o.c.committed)
        .add_columns(p.c.log_start, p.c.log_end, p.c.lso_gap)
        .select_from(g)
        .join(samples, samples.c.id == g.c.last_sample_id)
        .join(gp, gp.c.group_ref == g.c.id)
        .join(o, sa.and_(o.c.sample_id == g.c.last_sample_id, o.c.gp_id == gp.c.id))
        .join(tp, tp.c.id == gp.c.tp_id)
        .outerjoin(p, sa.and_(p.c.sample_id == g.c.last_sample_id, p.c.tp_id == gp.c.tp_id))
        .where(g.c.cluster == cluster, g.c.group_id.in_(group_ids))
    )
