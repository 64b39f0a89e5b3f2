"""Lag in seconds from the store: how long ago the log end passed each committed offset.

The answer is interpolated over the stored log-end history (monitor.lag.compute_time_lag).
Reads look back LAG_HISTORY_MS, as far as the collector's own history after a restart, so
the dashboard and `monitor status` agree; a consumer further behind gets a bound ("≥ X s").
The overview's per-group maximum keeps its cost flat in the poll rate and the group count
by thinning that history (see read_max_lag_seconds).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.lag import TimeLag, compute_time_lag
from monitor.store.samples import LOG_ENDS_AT, read_thinned_sample_times
from monitor.store.schema import (
    consumer_groups,
    group_partitions,
    offset_samples,
    partition_samples,
    samples,
    topic_partitions,
)
from monitor.store.sql import chunks

# Lag seconds look back as far as the collector's own log-end history after a restart
# (monitor.alerts.engine.HISTORY_PRIME_MS), so the pages agree with `python -m monitor status`;
# a consumer further behind gets a bound ("≥ X s").
LAG_HISTORY_MS = 3_600_000
# The overview's max lag seconds interpolate over at most this many samples of that hour (2-minute
# steps): with 1,000 groups every one of which needs interpolation, 60 points cost ~1 s (bench).
OVERVIEW_HISTORY_POINTS = 30


def _history_by_tp(
    conn, cluster: str, tp_ids: list[int] | None, since: int, until: int, sample_ids: list[int] | None = None
) -> dict[int, list[tuple[int, int]]]:
    """(log_end, at) per tp_id, oldest first, from successful samples in [since, until]."""
    s, p = samples, partition_samples
    query = (
        sa.select(p.c.tp_id, p.c.log_end, LOG_ENDS_AT)
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
        # Each partition's oldest kept point: the first kept sample of each collector holds its partitions.
        oldest: dict[int, tuple[int, int]] = {}  # tp_id -> (log_end, at)
        firsts = conn.execute(
            sa.select(samples.c.id, LOG_ENDS_AT)
            .where(
                samples.c.id.in_(
                    sa.select(sa.func.min(samples.c.id))
                    .where(samples.c.id.in_(kept_ids))
                    .group_by(samples.c.shard, samples.c.collector)
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
    anchor_id, anchor_at = kept[-_TAIL - 1]
    anchor_read_at = conn.execute(sa.select(LOG_ENDS_AT).where(samples.c.id == anchor_id)).scalar()
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
            if points[0][1] == anchor_read_at and tp_id in top:
                out[tp_id] = [(top[tp_id], anchor_read_at), *points[1:]]
    return out


def _worse(lag: TimeLag, than: TimeLag | None) -> bool:
    return than is None or (lag.seconds, lag.at_least) > (than.seconds, than.at_least)
