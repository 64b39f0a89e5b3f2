"""Readers of the Spark jobs' result tables (lag trends, rebalance stats, the run ledger).

The tables are written only by spark/ (see the Analytics block of schema.py);
the CLI, the dashboard's Trends and Health pages read them through here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.store.schema import analysis_runs, lag_trends, rebalance_protocols, rebalance_ranking, rebalance_stats


@dataclass(frozen=True)
class TrendRow:
    cluster: str
    group_id: str
    topic: str  # '' = the whole group
    window: str
    bucket_start: int
    samples: int
    lag_avg: float | None
    lag_max: int | None
    lag_p95: float | None
    lag_last: int | None
    lag_slope_per_min: float | None
    produce_rate: float | None
    consume_rate: float | None
    catch_up_eta_s: float | None
    catching_up: bool | None
    lag_seconds_avg: float | None
    lag_seconds_max: float | None
    lag_seconds_p50: float | None
    lag_seconds_p95: float | None
    lag_seconds_bounded: bool
    run_id: int


@dataclass(frozen=True)
class RebalanceStatsRow:
    cluster: str
    group_id: str
    window: str
    bucket_start: int
    protocol: str
    rebalances: int
    completed: int
    total_duration_ms: int | None
    mean_duration_ms: float | None
    p95_duration_ms: float | None
    max_duration_ms: int | None
    partitions_moved: int
    members_joined: int
    members_left: int
    triggers: dict
    top_members: list
    top_hosts: list
    top_clients: list
    run_id: int


@dataclass(frozen=True)
class RankingRow:
    cluster: str
    group_id: str
    rank: int
    window_start: int
    window_end: int
    protocol: str
    rebalances: int
    per_hour: float
    total_duration_ms: int
    mean_duration_ms: float | None
    partitions_moved: int
    run_id: int


@dataclass(frozen=True)
class ProtocolRow:
    cluster: str
    protocol: str
    window_start: int
    window_end: int
    groups: int
    rebalances: int
    per_group: float
    mean_duration_ms: float | None
    p95_duration_ms: float | None
    mean_partitions_moved: float | None
    run_id: int


@dataclass(frozen=True)
class AnalysisRun:
    id: int
    started_at: int
    finished_at: int
    status: str
    watermark: int
    rows_read: int
    rows_written: int
    range_start: int | None
    range_end: int | None
    duration_ms: int
    master: str
    error: str | None


_JSON = {"triggers", "top_members", "top_hosts", "top_clients"}


def _rows(engine: Engine, query, cls) -> list:
    names = [f.name for f in fields(cls)]
    with engine.connect() as conn:
        out = []
        for row in conn.execute(query).mappings():
            values = {n: row[n] for n in names}
            for n in _JSON & values.keys():
                values[n] = json.loads(values[n]) if values[n] else ({} if n == "triggers" else [])
            out.append(cls(**values))
        return out


def read_trends(
    engine: Engine,
    cluster: str | None = None,
    group: str | None = None,
    window: str | None = None,
    topic: str | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[TrendRow]:
    """lag_trends rows, oldest bucket first; topic None = every topic and the whole-group rows ('')."""
    t = lag_trends
    q = sa.select(t)
    for column, value in ((t.c.cluster, cluster), (t.c.group_id, group), (t.c.window, window), (t.c.topic, topic)):
        if value is not None:
            q = q.where(column == value)
    if since is not None:
        q = q.where(t.c.bucket_start >= since)
    if until is not None:
        q = q.where(t.c.bucket_start < until)
    q = q.order_by(t.c.cluster, t.c.group_id, t.c.topic, t.c.window, t.c.bucket_start)
    return _rows(engine, q, TrendRow)


def read_latest_trends(engine: Engine, cluster: str, window: str, topic: str = "") -> list[TrendRow]:
    """The newest bucket of each group (of `topic`; '' = the whole group) in `window`, by group name."""
    t = lag_trends
    newest = (
        sa.select(t.c.group_id, sa.func.max(t.c.bucket_start).label("bucket_start"))
        .where(t.c.cluster == cluster, t.c.window == window, t.c.topic == topic)
        .group_by(t.c.group_id)
        .subquery()
    )
    q = (
        sa.select(t)
        .join(newest, sa.and_(t.c.group_id == newest.c.group_id, t.c.bucket_start == newest.c.bucket_start))
        .where(t.c.cluster == cluster, t.c.window == window, t.c.topic == topic)
        .order_by(t.c.group_id)
    )
    return _rows(engine, q, TrendRow)


def read_rebalance_stats(
    engine: Engine,
    cluster: str | None = None,
    group: str | None = None,
    window: str | None = None,
    since: int | None = None,
) -> list[RebalanceStatsRow]:
    t = rebalance_stats
    q = sa.select(t)
    for column, value in ((t.c.cluster, cluster), (t.c.group_id, group), (t.c.window, window)):
        if value is not None:
            q = q.where(column == value)
    if since is not None:
        q = q.where(t.c.bucket_start >= since)
    return _rows(engine, q.order_by(t.c.cluster, t.c.group_id, t.c.window, t.c.bucket_start), RebalanceStatsRow)


def read_stability_ranking(engine: Engine, cluster: str | None = None) -> list[RankingRow]:
    """The least stable groups first (per cluster), over the day before the last analysis."""
    t = rebalance_ranking
    q = sa.select(t)
    if cluster is not None:
        q = q.where(t.c.cluster == cluster)
    return _rows(engine, q.order_by(t.c.cluster, t.c.rank), RankingRow)


def read_protocol_comparison(engine: Engine, cluster: str | None = None) -> list[ProtocolRow]:
    t = rebalance_protocols
    q = sa.select(t)
    if cluster is not None:
        q = q.where(t.c.cluster == cluster)
    return _rows(engine, q.order_by(t.c.cluster, t.c.protocol), ProtocolRow)


def read_last_analysis(engine: Engine, status: str | None = None) -> AnalysisRun | None:
    """The newest analysis run (of that status), or None before the first."""
    q = sa.select(analysis_runs).order_by(analysis_runs.c.id.desc()).limit(1)
    if status is not None:
        q = q.where(analysis_runs.c.status == status)
    rows = _rows(engine, q, AnalysisRun)
    return rows[0] if rows else None


def read_analysis_watermark(engine: Engine) -> int:
    """The samples.id the last successful run read up to (0 before the first)."""
    with engine.connect() as conn:
        value = conn.execute(
            sa.select(sa.func.max(analysis_runs.c.watermark)).where(analysis_runs.c.status == "ok")
        ).scalar()
    return value or 0
