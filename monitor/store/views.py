"""Reads for the dashboard that the CLI does not need: plain SQL in, dataclasses out.

History reads thin the window to at most `points` samples (evenly spaced by
sample id) before touching the offset tables, so a chart over a day costs the
same as one over an hour; the newest sample in the window is always kept, so
the last point of every chart equals "lag now". With collector shards a sample
holds only its shard's groups, so thinning is per shard: a group's chart thins
its own shard's samples, and cluster-wide reads keep `points` of every shard.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.lag import compute_lag
from monitor.models import GroupState, GroupType
from monitor.store.reader import LagPoint, group_lag_at_sample
from monitor.store.samples import read_sample_times, read_thinned_sample_times, thin
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
from monitor.store.sql import chunks, enum_or_raw


@dataclass(frozen=True)
class GroupHeader:
    """What `kafka-consumer-groups --describe --state` prints, from the newest state interval."""

    group_id: str
    state: GroupState
    type: GroupType
    protocol_type: str
    assignor: str
    coordinator: int | None
    state_inferred: bool
    note: str | None
    since: int
    current: bool  # False: the group is gone; this was its last known state
    members: int


@dataclass(frozen=True)
class MemberRow:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    since: int
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AssignmentSpan:
    """One partition owned by one member over [valid_from, valid_to); valid_to None: still owned."""

    topic: str
    partition: int
    member_id: str
    client_id: str | None
    valid_from: int
    valid_to: int | None


def read_group_names(engine: Engine, cluster: str) -> list[str]:
    """Every group the cluster ever stored, current or gone, sorted."""
    g = consumer_groups
    with engine.connect() as conn:
        names = set(conn.execute(sa.select(g.c.group_id).where(g.c.cluster == cluster)).scalars())
        names |= set(
            conn.execute(
                sa.select(group_states.c.group_id).distinct().where(group_states.c.cluster == cluster)
            ).scalars()
        )
    return sorted(names)


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


def read_group_header(engine: Engine, cluster: str, group: str) -> GroupHeader | None:
    """The group's current state interval (or its last one if it is gone); None if never seen."""
    st, m = group_states, group_members
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(st)
            .where(st.c.cluster == cluster, st.c.group_id == group)
            .order_by(st.c.valid_to.is_(None).desc(), st.c.valid_from.desc(), st.c.id.desc())
            .limit(1)
        ).first()
        if row is None:
            return None
        members = conn.execute(
            sa.select(sa.func.count()).where(m.c.cluster == cluster, m.c.group_id == group, m.c.valid_to.is_(None))
        ).scalar()
    return GroupHeader(
        group_id=group,
        state=enum_or_raw(GroupState, row.state),
        type=enum_or_raw(GroupType, row.type),
        protocol_type=row.protocol_type,
        assignor=row.assignor,
        coordinator=row.coordinator,
        state_inferred=bool(row.state_inferred),
        note=row.note,
        since=row.valid_from,
        current=row.valid_to is None,
        members=members,
    )


def read_members(engine: Engine, cluster: str, group: str) -> list[MemberRow]:
    """Current members with the partitions each owns now."""
    m, a = group_members, assignments
    with engine.connect() as conn:
        owned: dict[str, list[tuple[str, int]]] = {}
        for topic, partition, owner in conn.execute(
            sa.select(a.c.topic, a.c.partition, a.c.member_id).where(
                a.c.cluster == cluster, a.c.group_id == group, a.c.valid_to.is_(None)
            )
        ):
            owned.setdefault(owner, []).append((topic, partition))
        rows = conn.execute(
            sa.select(m.c.member_id, m.c.instance_id, m.c.client_id, m.c.host, m.c.valid_from)
            .where(m.c.cluster == cluster, m.c.group_id == group, m.c.valid_to.is_(None))
            .order_by(m.c.client_id, m.c.member_id)
        ).all()
    return [
        MemberRow(mid, inst, client, host, since, tuple(sorted(owned.get(mid, ()))))
        for mid, inst, client, host, since in rows
    ]


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
        chosen = thin(read_sample_times(engine, cluster, since, until, shard), points)
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


def read_assignment_history(engine: Engine, cluster: str, group: str, since: int, until: int) -> list[AssignmentSpan]:
    """Ownership intervals of the group's partitions that overlap [since, until)."""
    a, m = assignments, group_members
    with engine.connect() as conn:
        spans = conn.execute(
            sa.select(a.c.topic, a.c.partition, a.c.member_id, a.c.valid_from, a.c.valid_to)
            .where(
                a.c.cluster == cluster,
                a.c.group_id == group,
                a.c.valid_from < until,
                sa.or_(a.c.valid_to.is_(None), a.c.valid_to > since),
            )
            .order_by(a.c.topic, a.c.partition, a.c.valid_from)
        ).all()
        clients = dict(
            conn.execute(
                sa.select(m.c.member_id, m.c.client_id).where(m.c.cluster == cluster, m.c.group_id == group)
            ).all()
        )
    return [AssignmentSpan(topic, part, mid, clients.get(mid), start, end) for topic, part, mid, start, end in spans]
