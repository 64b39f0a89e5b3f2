"""Read functions for the CLI, the dashboard and the exporter: plain SQL in, dataclasses out.

Each function uses one connection and so one read transaction: the queries in
it see the same instant even while the collector writes (WAL). Lag is clamped
at 0 and is None where nothing is committed or the log end is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.lag import compute_lag
from monitor.models import GroupState, GroupType, UnknownGroup
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
from monitor.store.sql import enum_or_raw


@dataclass(frozen=True)
class GroupRow:
    """A group now: its current state interval plus lag at its newest sample."""

    cluster: str
    group_id: str
    state: GroupState
    type: GroupType
    protocol_type: str
    assignor: str
    coordinator: int | None
    state_inferred: bool
    note: str | None
    since: int  # when the current state facts began
    members: int
    partitions: int  # group-partitions with offsets at the newest sample
    total_lag: int | None
    max_lag: int | None
    last_sample_at: int | None


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


_LAG_SQL = sa.case(  # monitor.lag.compute_lag in SQL (the writer stores no negative offset)
    (sa.or_(offset_samples.c.committed.is_(None), partition_samples.c.log_end.is_(None)), sa.null()),
    (
        partition_samples.c.log_end > offset_samples.c.committed,
        partition_samples.c.log_end - offset_samples.c.committed,
    ),
    else_=0,
)


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


def read_groups(engine: Engine, cluster: str | None = None) -> list[GroupRow]:
    """Current groups (open state interval) with member count and lag at their newest sample."""
    st = group_states
    states_q = sa.select(
        st.c.cluster,
        st.c.group_id,
        st.c.state,
        st.c.type,
        st.c.protocol_type,
        st.c.assignor,
        st.c.coordinator,
        st.c.state_inferred,
        st.c.note,
        st.c.valid_from,
    ).where(st.c.valid_to.is_(None))
    m = group_members
    members_q = (
        sa.select(m.c.cluster, m.c.group_id, sa.func.count())
        .where(m.c.valid_to.is_(None))
        .group_by(m.c.cluster, m.c.group_id)
    )
    g = consumer_groups
    newest_q = sa.select(g.c.id, g.c.cluster, g.c.group_id, g.c.last_sample_id, samples.c.taken_at).join(
        samples, samples.c.id == g.c.last_sample_id
    )
    if cluster is not None:
        states_q = states_q.where(st.c.cluster == cluster)
        members_q = members_q.where(m.c.cluster == cluster)
        newest_q = newest_q.where(g.c.cluster == cluster)
    with engine.connect() as conn:
        states = conn.execute(states_q).all()
        members = {(c, gid): n for c, gid, n in conn.execute(members_q)}
        current = {(c, gid) for c, gid, *_ in states}
        by_sample: dict[int, dict[int, tuple]] = {}  # sample id -> group ref -> (cluster, group, at)
        for gref, c, gid, sample_id, at in conn.execute(newest_q):
            if (c, gid) in current:
                by_sample.setdefault(sample_id, {})[gref] = (c, gid, at)
        lags = {}
        # One range scan per distinct newest sample (usually one per cluster): keyed on
        # sample_id = constant, so the plan never depends on table statistics.
        for sample_id, wanted in by_sample.items():
            for gref, n, total, worst in conn.execute(group_lag_at_sample, {"sample_id": sample_id}):
                if gref in wanted:
                    c, gid, at = wanted[gref]
                    lags[(c, gid)] = (at, n, total, worst)
    rows = []
    for c, gid, state, type_, ptype, assignor, coord, inferred, note, since in states:
        at, n, total, worst = lags.get((c, gid), (None, 0, None, None))
        rows.append(
            GroupRow(
                cluster=c,
                group_id=gid,
                state=enum_or_raw(GroupState, state),
                type=enum_or_raw(GroupType, type_),
                protocol_type=ptype,
                assignor=assignor,
                coordinator=coord,
                state_inferred=bool(inferred),
                note=note,
                since=since,
                members=members.get((c, gid), 0),
                partitions=n,
                total_lag=None if total is None else int(total),
                max_lag=worst,
                last_sample_at=at,
            )
        )
    return sorted(rows, key=lambda r: (r.cluster, r.group_id))


def read_group_shard(engine: Engine, cluster: str, group: str) -> str | None:
    """The collector shard ("2/3") that took the group's newest sample; None if it has none."""
    g = consumer_groups
    with engine.connect() as conn:
        return conn.execute(
            sa.select(samples.c.shard)
            .join(g, g.c.last_sample_id == samples.c.id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).scalar()


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
        sa.select(s.c.taken_at, p.c.tp_id, p.c.log_start, p.c.log_end, p.c.lso_gap, s.c.resolution_ms)
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
            PartitionPoint(at, *ids[tp_id], start, end, None if gap is None else end - gap, res)
            for at, tp_id, start, end, gap, res in conn.execute(query)
        ]
    return sorted(points, key=lambda x: (x.at, x.topic, x.partition))
