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

from monitor.lag import TimeLag, compute_lag, compute_time_lag
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

# Lag seconds look back as far as the collector's own log-end history after a restart
# (monitor.alerts.engine.HISTORY_PRIME_MS), so the pages agree with `python -m monitor status`;
# a consumer further behind gets a bound ("≥ X s").
LAG_HISTORY_MS = 3_600_000
# The overview's max lag seconds interpolate over at most this many samples of that hour (2-minute
# steps): with 1,000 groups every one of which needs interpolation, 60 points cost ~1 s (bench).
OVERVIEW_HISTORY_POINTS = 30


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


def _history_by_tp(
    conn, cluster: str, tp_ids: list[int] | None, since: int, until: int, sample_ids: list[int] | None = None
) -> dict[int, list[tuple[int, int]]]:
    """(log_end, at) per tp_id, oldest first, from successful samples in [since, until]."""
    s, p = samples, partition_samples
    query = (
        sa.select(p.c.tp_id, p.c.log_end, s.c.taken_at)
        .select_from(s)
        .join(p, p.c.sample_id == s.c.id)
        .where(s.c.cluster == cluster, s.c.taken_at >= since, s.c.taken_at <= until, s.c.ok.is_(True))
        .order_by(s.c.taken_at, s.c.id)
    )
    if tp_ids is not None:
        query = query.where(p.c.tp_id.in_(tp_ids))
    if sample_ids is not None:
        query = query.where(s.c.id.in_(sample_ids))
    out: dict[int, list[tuple[int, int]]] = {}
    for tp_id, end, at in conn.execute(query).all():  # one fetchall: 2x faster than row by row
        out.setdefault(tp_id, []).append((end, at))
    return out


def read_lag_seconds(
    engine: Engine, cluster: str, group: str, history_ms: int = LAG_HISTORY_MS
) -> dict[tuple[str, int], TimeLag | None]:
    """Lag seconds per partition at the group's newest sample, interpolated over the stored log-end history."""
    g, gp, tp, o, s = consumer_groups, group_partitions, topic_partitions, offset_samples, samples
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(g.c.id, s.c.taken_at)
            .join(s, s.c.id == g.c.last_sample_id)
            .where(g.c.cluster == cluster, g.c.group_id == group)
        ).first()
        if found is None:
            return {}
        gref, at = found
        committed = {
            (tp_id, topic, part): c
            for tp_id, topic, part, c in conn.execute(
                sa.select(tp.c.id, tp.c.topic, tp.c.partition, o.c.committed)
                .select_from(gp)
                .join(tp, tp.c.id == gp.c.tp_id)
                .join(
                    o,
                    sa.and_(
                        o.c.gp_id == gp.c.id,
                        o.c.sample_id == sa.select(g.c.last_sample_id).where(g.c.id == gref).scalar_subquery(),
                    ),
                )
                .where(gp.c.group_ref == gref)
            )
        }
        history = _history_by_tp(conn, cluster, sorted({k[0] for k in committed}), at - history_ms, at)
    return {
        (topic, part): compute_time_lag(c, history.get(tp_id, []), at) for (tp_id, topic, part), c in committed.items()
    }


def read_max_lag_seconds(
    engine: Engine, cluster: str, history_ms: int = LAG_HISTORY_MS, points: int = OVERVIEW_HISTORY_POINTS
) -> dict[str, TimeLag]:
    """Per group, its worst partition's lag seconds at its newest sample (the overview's column).

    The history is thinned to `points` samples of the last `history_ms` so the cost does not grow with
    the poll rate: between two kept samples the log end is taken as growing steadily. Most partitions
    need no history at all: one caught up is 0 s, one behind the oldest kept point is the bound
    "≥ age of that point", and a group with such a bound needs nothing more (no interpolated answer
    can exceed it). Only the other groups' partitions load their history.
    """
    g, gp, o, p = consumer_groups, group_partitions, offset_samples, partition_samples
    with engine.connect() as conn:
        newest = conn.execute(
            sa.select(sa.func.max(samples.c.taken_at)).where(samples.c.cluster == cluster, samples.c.ok.is_(True))
        ).scalar()
        if newest is None:
            return {}
        kept = read_thinned_sample_times(engine, cluster, newest - history_ms, newest + 1, points)
        kept_ids = [sid for sid, _ in kept]
        first_at = kept[0][1]
        top = dict(
            conn.execute(
                sa.select(p.c.tp_id, sa.func.max(p.c.log_end)).where(p.c.sample_id.in_(kept_ids)).group_by(p.c.tp_id)
            ).all()
        )
        # Each partition's oldest kept point: the first kept sample of each shard holds its partitions.
        oldest: dict[int, tuple[int, int]] = {}  # tp_id -> (log_end, at)
        firsts = conn.execute(
            sa.select(samples.c.id, samples.c.taken_at)
            .where(
                samples.c.id.in_(
                    sa.select(sa.func.min(samples.c.id)).where(samples.c.id.in_(kept_ids)).group_by(samples.c.shard)
                )
            )
            .order_by(samples.c.taken_at.desc())
        ).all()
        for first_id, at in firsts:  # newest first, so the oldest point of a partition wins
            oldest.update(
                (tp_id, (end, at))
                for tp_id, end in conn.execute(sa.select(p.c.tp_id, p.c.log_end).where(p.c.sample_id == first_id))
            )
        sample_at = dict(kept)
        rows = conn.execute(
            sa.select(g.c.group_id, g.c.last_sample_id, gp.c.tp_id, o.c.committed)
            .select_from(g)
            .join(gp, gp.c.group_ref == g.c.id)
            .join(o, sa.and_(o.c.gp_id == gp.c.id, o.c.sample_id == g.c.last_sample_id))
            .where(g.c.cluster == cluster)
        ).all()
        missing = sorted({sid for _, sid, _, _ in rows if sid not in sample_at})
        for chunk in chunks(missing):
            sample_at.update(
                conn.execute(sa.select(samples.c.id, samples.c.taken_at).where(samples.c.id.in_(chunk))).all()
            )
        worst: dict[str, TimeLag] = {}
        middle: dict[str, list[tuple[int, int, int]]] = {}  # group -> (tp_id, committed, at) to interpolate
        for gid, sid, tp_id, committed in rows:
            at = sample_at[sid]
            if committed is None or tp_id not in top:
                continue
            if committed >= top[tp_id]:
                lag = TimeLag(0.0)
            elif tp_id in oldest and committed < oldest[tp_id][0]:
                lag = TimeLag((at - oldest[tp_id][1]) / 1000, at_least=True) if at > oldest[tp_id][1] else None
            else:
                middle.setdefault(gid, []).append((tp_id, committed, at))
                continue
            if lag is not None and _worse(lag, worst.get(gid)):
                worst[gid] = lag
        todo = {gid: parts for gid, parts in middle.items() if not (gid in worst and worst[gid].at_least)}
        recent = _recent_histories(conn, cluster, sorted({t for parts in todo.values() for t, _, _ in parts}), kept)
        # A partition whose committed offset is inside the recent tail is answered from it; the rest
        # (further behind) load their whole kept history.
        far = sorted(
            {
                tp_id
                for parts in todo.values()
                for tp_id, committed, _ in parts
                if tp_id not in recent or committed < recent[tp_id][0][0]
            }
        )
        history: dict[int, list[tuple[int, int]]] = {}
        for chunk in chunks(far):
            history.update(_history_by_tp(conn, cluster, chunk, first_at, newest, kept_ids))
    for gid, parts in todo.items():
        for tp_id, committed, at in parts:
            points = recent[tp_id] if tp_id in recent and committed >= recent[tp_id][0][0] else history.get(tp_id, [])
            lag = compute_time_lag(committed, points, at)
            if lag is not None and _worse(lag, worst.get(gid)):
                worst[gid] = lag
    return worst


_TAIL = 6  # kept samples in the recent tail that most partitions' committed offsets fall into


def _recent_histories(
    conn, cluster: str, tp_ids: list[int], kept: list[tuple[int, int]]
) -> dict[int, list[tuple[int, int]]]:
    """Per partition, the last `_TAIL` kept points behind an anchor that answers exactly like the whole history.

    compute_time_lag works on the running maximum of the log end. The anchor is the point just before
    the tail with its log end replaced by the maximum of every older kept point, so for a committed
    offset at or past the anchor's log end, the bracketing pair and its values are the same as with the
    whole history. Partitions without a point at the anchor's sample are left out (use the whole history).
    """
    if len(kept) <= _TAIL + 1 or not tp_ids:
        return {}
    p = partition_samples
    older = [sid for sid, _ in kept[:-_TAIL]]
    anchor_at = kept[-_TAIL - 1][1]
    out: dict[int, list[tuple[int, int]]] = {}
    for chunk in chunks(tp_ids):
        top = dict(
            conn.execute(
                sa.select(p.c.tp_id, sa.func.max(p.c.log_end))
                .where(p.c.sample_id.in_(older), p.c.tp_id.in_(chunk))
                .group_by(p.c.tp_id)
            ).all()
        )
        tail = _history_by_tp(conn, cluster, chunk, anchor_at, kept[-1][1], [sid for sid, _ in kept[-_TAIL - 1 :]])
        for tp_id, points in tail.items():
            if points[0][1] == anchor_at and tp_id in top:
                out[tp_id] = [(top[tp_id], anchor_at), *points[1:]]
    return out


def _worse(lag: TimeLag, than: TimeLag | None) -> bool:
    return than is None or (lag.seconds, lag.at_least) > (than.seconds, than.at_least)
