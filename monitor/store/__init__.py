"""The store: SQLite (or PostgreSQL) via SQLAlchemy Core. The collector writes, everyone reads.

A module per subject, holding its dataclasses, its read_* functions and, where the subject is written
on its own, its writes:

- groups        groups now and over time: state, members, partition owners (validity intervals)
- lag           offsets and log ends per sample: a group's lag now, lag history, the charts' lag series
- lag_seconds   lag in seconds, interpolated over the stored log-end history
- share         share groups: each share-partition's start offset and in-flight records per sample
- group_facts   share and streams groups' topology and members' tasks, as the JSON stored with them
- topics        partitions with their produce rates, and the groups consuming each topic
- samples       the collector's cycles: clusters, shards, sample rows, and the thinning of history reads
- events        what changed between two samples
- rebalances    one row per rebalance, placed by the merge rules of monitor/rebalancing/merge.py
- health        status history, the newest statuses, the health engine's saved state
- alerts        alert episodes, silences, the outbox (and the retention of the status history)
- offsets_tail  what the offsets-topic tail stores: exact commits, generations, its read positions
- collectors    coordinated collectors (`--shard kafka`) as each reports itself every cycle
- analysis      the Spark jobs' result tables (trends, rebalance stats, runs)

and around them:

- writer     Store: the collector's one writer (lock, per-cluster id cache, transaction()); write_snapshot
             writes a cycle's offsets and group intervals, which share that cache, and hands the sample
             row, events and rebalances to their modules
- schema     tables and why they look like that (compact facts, SCD intervals)
- engine     make_engine (WAL, busy_timeout, ...), upgrade (Alembic to head; upgrade_apart in a child
             process), the database's revision, tables and size
- retention  apply_retention: raw -> 1 min -> 10 min rollups, then deletion
- sql        the SQL helpers the modules share (interning, executemany, ON CONFLICT, chunks, enums, JSON)

Every read_* uses one connection and so one read transaction: the queries in it see the same
instant even while the collector writes (WAL). This package re-exports what the CLI, the
collector and Spark use; the other reads are imported from their subject's module.
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
from monitor.store.engine import DEFAULT_URL, make_engine, safe_url, store_errors, upgrade, upgrade_apart, write_engine
from monitor.store.events import EventRow, read_events
from monitor.store.groups import GroupRow, read_groups, read_unanswered
from monitor.store.lag import (
    LagPoint,
    PartitionLag,
    PartitionPoint,
    read_group_lag,
    read_lag_history,
    read_partition_history,
)
from monitor.store.rebalances import RebalanceRow, read_rebalances
from monitor.store.retention import RetentionPolicy, RetentionResult, apply_retention
from monitor.store.samples import ClusterRow, SampleRow, ShardRow, read_clusters, read_samples, read_shards
from monitor.store.schema import metadata
from monitor.store.share import read_share_partitions
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
    "read_share_partitions",
    "read_stability_ranking",
    "read_trends",
    "read_unanswered",
    "safe_url",
    "store_errors",
    "upgrade",
    "upgrade_apart",
    "write_engine",
]
