"""Samples in the store: one row per collector cycle, ok or failed, and which of them a history read looks at.

Every offset and log-end row hangs off a sample, so the clusters and collector
shards are known by the samples they wrote (read_clusters, read_shards); a cycle
that produced no snapshot is a sample with errors and no rows, so gaps in the
history are explained. The Store writes them (insert_sample in the cycle's
transaction, set_cycle_time once the whole cycle is timed).

History reads thin the window to at most `points` samples (evenly spaced by
sample id) before touching the offset tables, so a chart over a day costs the
same as one over an hour; the newest sample in the window is always kept, so
the last point of every chart equals "lag now". With several collectors a sample
holds only its collector's groups, so thinning is per collector: a group's chart
thins its shard's samples (of a coordinated collector's shard "kafka": those of
each collector that held it, before and after it moved), and cluster-wide reads
keep `points` of every collector.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.store.schema import RAW, group_states, samples
from monitor.store.sql import dumps_json


@dataclass(frozen=True)
class ClusterRow:
    cluster: str
    samples: int
    first_sample_at: int
    last_sample_at: int
    last_ok: bool
    last_errors: tuple[str, ...]
    groups: int  # groups with a current state


@dataclass(frozen=True)
class ShardRow:
    """One collector shard of a cluster ("1/1" when unsharded) and its newest cycle."""

    shard: str
    samples: int
    last_sample_at: int
    last_ok: bool
    last_errors: tuple[str, ...]


@dataclass(frozen=True)
class SampleRow:
    id: int
    cluster: str
    taken_at: int
    duration_ms: int
    groups: int
    partitions: int
    ok: bool
    errors: tuple[str, ...]
    resolution_ms: int
    sampling_ms: int | None = None  # the Kafka part of duration_ms (the whole cycle); None before 0006


def read_clusters(engine: Engine) -> list[ClusterRow]:
    """Every cluster that has written a sample, with its newest cycle's outcome."""
    s = samples
    newest = (
        sa.select(
            s.c.cluster,
            sa.func.count().label("n"),
            sa.func.min(s.c.taken_at).label("first"),
            sa.func.max(s.c.id).label("last_id"),
        )
        .group_by(s.c.cluster)
        .subquery()
    )
    open_groups = (
        sa.select(group_states.c.cluster, sa.func.count().label("groups"))
        .where(group_states.c.valid_to.is_(None))
        .group_by(group_states.c.cluster)
        .subquery()
    )
    query = (
        sa.select(
            newest.c.cluster,
            newest.c.n,
            newest.c.first,
            s.c.taken_at,
            s.c.ok,
            s.c.errors,
            sa.func.coalesce(open_groups.c.groups, 0),
        )
        .join(s, s.c.id == newest.c.last_id)
        .outerjoin(open_groups, open_groups.c.cluster == newest.c.cluster)
        .order_by(newest.c.cluster)
    )
    with engine.connect() as conn:
        return [
            ClusterRow(cluster, n, first, last, bool(ok), _errors(errors), groups)
            for cluster, n, first, last, ok, errors, groups in conn.execute(query)
        ]


def read_shards(engine: Engine, cluster: str) -> list[ShardRow]:
    """Every collector shard that wrote a sample of the cluster, with its newest cycle, by shard."""
    s = samples
    newest = (
        sa.select(s.c.shard, sa.func.count().label("n"), sa.func.max(s.c.id).label("last_id"))
        .where(s.c.cluster == cluster)
        .group_by(s.c.shard)
        .subquery()
    )
    query = (
        sa.select(newest.c.shard, newest.c.n, s.c.taken_at, s.c.ok, s.c.errors)
        .join(s, s.c.id == newest.c.last_id)
        .order_by(newest.c.shard)
    )
    with engine.connect() as conn:
        return [ShardRow(shard, n, at, bool(ok), _errors(errors)) for shard, n, at, ok, errors in conn.execute(query)]


def read_host_newest(engine: Engine, cluster: str, host: str) -> ShardRow | None:
    """The newest cycle of the cluster's coordinated collectors on `host` (named "host-pid"), or None."""
    s = samples
    query = (
        sa.select(s.c.shard, s.c.taken_at, s.c.ok, s.c.errors)
        .where(s.c.cluster == cluster, s.c.collector.startswith(f"{host}-", autoescape=True))
        .order_by(s.c.id.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else ShardRow(row.shard, 1, row.taken_at, bool(row.ok), _errors(row.errors))


def read_samples(engine: Engine, cluster: str, since: int | None = None) -> list[SampleRow]:
    """Collector cycles (ok or failed) from `since` on, oldest first."""
    s = samples
    query = sa.select(s).where(s.c.cluster == cluster).order_by(s.c.taken_at, s.c.id)
    if since is not None:
        query = query.where(s.c.taken_at >= since)
    with engine.connect() as conn:
        return [
            SampleRow(
                r.id,
                r.cluster,
                r.taken_at,
                r.duration_ms,
                r.groups,
                r.partitions,
                bool(r.ok),
                _errors(r.errors),
                r.resolution_ms,
                r.sampling_ms,
            )
            for r in conn.execute(query)
        ]


def _errors(text: str | None) -> tuple[str, ...]:
    return tuple(json.loads(text)) if text else ()


# -- which samples a history read looks at ------------------------------------------------


def thin(items: list, points: int) -> list:
    """At most `points` items evenly spread over `items`, always keeping the first and the last."""
    if points <= 0 or len(items) <= points:
        return list(items)
    if points == 1:
        return [items[-1]]
    step = (len(items) - 1) / (points - 1)
    return [items[round(i * step)] for i in range(points)]


def read_thinned_sample_times(
    engine: Engine,
    cluster: str,
    since: int,
    until: int | None = None,
    points: int = 20,
    shard: str | None = None,
) -> list[tuple[int, int]]:
    """(sample id, taken_at): up to `points` successful samples of every collector in [since, until) (of one
    shard), merged oldest first.

    A collector's samples hold only its groups: a static shard's, or a coordinated collector's (they share
    the shard "kafka" and take turns, and a group moves between them). Thinning one list of all of them
    could keep only one collector's samples, and so only its groups.
    """
    s = samples
    query = (
        sa.select(s.c.shard, s.c.collector, s.c.id, s.c.taken_at)
        .where(s.c.cluster == cluster, s.c.taken_at >= since, s.c.ok.is_(True))
        .order_by(s.c.taken_at, s.c.id)
    )
    if until is not None:
        query = query.where(s.c.taken_at < until)
    if shard is not None:
        query = query.where(s.c.shard == shard)
    by_writer: dict[tuple, list[tuple[int, int]]] = {}
    with engine.connect() as conn:
        for label, collector, sid, at in conn.execute(query):
            by_writer.setdefault((label, collector), []).append((sid, at))
    return sorted((x for times in by_writer.values() for x in thin(times, points)), key=lambda x: (x[1], x[0]))


# When a sample's log ends were read (ClusterSnapshot.log_ends_at): sampling reads them last
LOG_ENDS_AT = samples.c.taken_at + sa.func.coalesce(samples.c.sampling_ms, 0)


# -- writes, inside the Store's transactions (it holds the writer lock) ----------------------


def insert_sample(
    conn: Connection,
    cluster: str,
    taken_at: int,
    duration_ms: int,
    *,
    groups: int,
    partitions: int,
    errors: tuple[str, ...],
    shard: str,
    collector: str | None = None,
    unanswered: dict[str, int] | None = None,
) -> int:
    """One cycle's sample row; returns its id. `unanswered`: {group: when Kafka last answered for it};
    `collector`: a coordinated collector's name."""
    result = conn.execute(
        samples.insert().values(
            cluster=cluster,
            shard=shard,
            collector=collector,
            taken_at=taken_at,
            duration_ms=duration_ms,  # the sampling part until write_cycle_time adds the rest
            sampling_ms=duration_ms,
            groups=groups,
            partitions=partitions,
            ok=not errors,
            errors=dumps_json(list(errors)) if errors else None,
            unanswered=dumps_json(unanswered) if unanswered else None,
            resolution_ms=RAW,
        )
    )
    return result.inserted_primary_key[0]


def set_cycle_time(conn: Connection, sample_id: int, duration_ms: int, sampling_ms: int | None) -> None:
    """The whole cycle's time on its sample, known only once the health step and the observers are done."""
    conn.execute(
        samples.update().where(samples.c.id == sample_id).values(duration_ms=duration_ms, sampling_ms=sampling_ms)
    )
