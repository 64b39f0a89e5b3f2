"""The store: SQLite (or PostgreSQL) via SQLAlchemy Core. write_* from the collector, read_* for everyone.

- schema     tables and why they look like that (compact facts, SCD intervals)
- engine     make_engine (WAL, busy_timeout, ...), upgrade (Alembic to head)
- writer     Store: write_snapshot / write_events / write_rebalances / write_sample_error
- reader     read_* functions returning dataclasses
- retention  apply_retention: raw -> 1 min -> 10 min rollups, then deletion
- alerts     status history, alert episodes, silences, the outbox (import from monitor.store.alerts)
- analysis   read_* of the Spark jobs' result tables (trends, rebalance stats, runs)
"""

from monitor.store.analysis import (
    AnalysisRun,
    ProtocolRow,
    RankingRow,
    RebalanceStatsRow,
    TrendRow,
    read_analysis_watermark,
    read_last_analysis,
    read_protocol_comparison,
    read_rebalance_stats,
    read_stability_ranking,
    read_trends,
)
from monitor.store.engine import DEFAULT_URL, make_engine, upgrade, write_engine
from monitor.store.events import EventRow, read_events
from monitor.store.reader import (
    GroupRow,
    LagPoint,
    PartitionLag,
    PartitionPoint,
    read_group_lag,
    read_groups,
    read_lag_history,
    read_partition_history,
)
from monitor.store.rebalances import RebalanceRow, read_rebalances
from monitor.store.retention import RetentionPolicy, RetentionResult, apply_retention
from monitor.store.samples import ClusterRow, SampleRow, ShardRow, read_clusters, read_samples, read_shards
from monitor.store.schema import metadata
from monitor.store.writer import Store

__all__ = [
    "DEFAULT_URL",
    "AnalysisRun",
    "ClusterRow",
    "EventRow",
    "GroupRow",
    "LagPoint",
    "PartitionLag",
    "PartitionPoint",
    "ProtocolRow",
    "RankingRow",
    "RebalanceRow",
    "RebalanceStatsRow",
    "RetentionPolicy",
    "RetentionResult",
    "SampleRow",
    "ShardRow",
    "Store",
    "TrendRow",
    "apply_retention",
    "make_engine",
    "metadata",
    "read_analysis_watermark",
    "read_clusters",
    "read_events",
    "read_group_lag",
    "read_groups",
    "read_lag_history",
    "read_last_analysis",
    "read_partition_history",
    "read_protocol_comparison",
    "read_rebalance_stats",
    "read_rebalances",
    "read_samples",
    "read_shards",
    "read_stability_ranking",
    "read_trends",
    "upgrade",
    "write_engine",
]
