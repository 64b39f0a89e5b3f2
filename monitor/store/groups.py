"""Groups in the store: which groups there are, their state, members and partition owners, now and over time.

The slowly changing facts (state, type, assignor, coordinator; members; the owner
of each partition) are validity intervals: one row per fact, valid_to NULL while
it holds, written only when it changes (by Store.write_snapshot in writer.py,
which caches the open rows). A group is current while it has an open state
interval; a gone group keeps its last one. read_groups adds each current group's
lag at its newest sample (lag.group_lag_at_sample) and, when Kafka did not answer for it
in its collector's newest cycle, when it last did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import GroupState, GroupType, StreamsMember, Topology
from monitor.store.group_facts import read_member_detail, read_topology
from monitor.store.lag import group_lag_at_sample
from monitor.store.schema import (
    assignments,
    consumer_groups,
    group_members,
    group_states,
    samples,
)
from monitor.store.sql import enum_or_raw

UNANSWERED_LOOKBACK_MS = 600_000


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
    # Kafka did not answer for the group in its collector's newest cycle: when it last did (the numbers
    # above are from then); None when it answered
    last_answered_at: int | None = None


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
        unanswered = {(c, gid): at for c in {row[0] for row in states} for gid, at in _read_unanswered(conn, c).items()}
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
                last_answered_at=unanswered.get((c, gid)),
            )
        )
    return sorted(rows, key=lambda r: (r.cluster, r.group_id))


def read_unanswered(engine: Engine, cluster: str) -> dict[str, int]:
    """{group: when Kafka last answered for it}: the groups its collector's newest cycle did not hear from."""
    with engine.connect() as conn:
        return _read_unanswered(conn, cluster)


def _read_unanswered(conn, cluster: str) -> dict[str, int]:
    """{group: when Kafka last answered for it} for the groups its collector's newest cycle (each
    shard's or coordinated collector's) did not hear from; collectors silent for UNANSWERED_LOOKBACK_MS
    before the newest are left out.
    Read from the newest samples only, by the (cluster, taken_at) index."""
    s = samples
    newest = sa.select(sa.func.max(s.c.taken_at)).where(s.c.cluster == cluster).scalar_subquery()
    recent = conn.execute(
        sa.select(s.c.shard, s.c.collector, s.c.unanswered)
        .where(s.c.cluster == cluster, s.c.taken_at >= newest - UNANSWERED_LOOKBACK_MS)
        .order_by(s.c.taken_at, s.c.id)
    )
    last = {(shard, collector): text for shard, collector, text in recent}  # each collector's newest row wins
    return {g: at for text in last.values() if text for g, at in json.loads(text).items()}


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
    epoch: int | None = None  # share and streams groups: the group epoch
    assignment_epoch: int | None = None
    topology: Topology | None = None  # streams groups
    full_id: str | None = None  # the id Kafka knows, when group_id is a stand-in for it (monitor.names)


@dataclass(frozen=True)
class MemberRow:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    since: int
    assignment: tuple[tuple[str, int], ...]
    rack: str | None = None
    subscribed: tuple[str, ...] = ()  # share groups (and any group read from the coordinator's log)
    streams: StreamsMember | None = None  # streams groups: process, topology epoch, tasks


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
        g = consumer_groups
        full_id = conn.execute(sa.select(g.c.full_id).where(g.c.cluster == cluster, g.c.group_id == group)).scalar()
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
        epoch=row.epoch,
        assignment_epoch=row.assignment_epoch,
        topology=read_topology(row.topology),
        full_id=None if full_id is None else bytes(full_id).decode("utf-8", "surrogatepass"),
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
            sa.select(m.c.member_id, m.c.instance_id, m.c.client_id, m.c.host, m.c.valid_from, m.c.rack, m.c.detail)
            .where(m.c.cluster == cluster, m.c.group_id == group, m.c.valid_to.is_(None))
            .order_by(m.c.client_id, m.c.member_id)
        ).all()
    return [
        MemberRow(mid, inst, client, host, since, tuple(sorted(owned.get(mid, ()))), rack, *read_member_detail(detail))
        for mid, inst, client, host, since, rack, detail in rows
    ]


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
