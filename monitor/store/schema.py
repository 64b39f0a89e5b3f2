"""The tables, as SQLAlchemy Core. migrations/versions must create exactly these.

Layout, and why:

- High-volume facts (one row per group-partition or topic-partition per cycle)
  are normalised to small integers: `offset_samples` (~21 bytes a row with
  64-bit offsets) and `partition_samples` (~30 bytes) hold only ids and
  offsets and are SQLite WITHOUT ROWID tables clustered on (sample_id, x_id),
  so the primary key is the table and there is no second index. Keying by
  sample first makes every cycle an append at the end of the b-tree (a few
  hundred dirty pages, not one per partition), retention a contiguous range
  delete, and "all partitions at one sample" a range scan; per-group history
  seeks (sample_id, gp_id) for each sample in the window.
- Dimension tables intern (cluster, topic, partition) -> `topic_partitions.id`,
  (cluster, group) -> `consumer_groups.id` and (group, topic-partition) ->
  `group_partitions.id`. Every fact row reaches its cluster through them.
- Slowly changing facts (group state, members, assignments) are stored only
  when they change, as validity intervals [valid_from, valid_to); valid_to NULL
  means current. They, events and rebalances keep readable text keys
  (cluster, group_id, topic) because they are small and people query them.
- `partition_samples.lso_gap` stores log_end - last_stable rather than the
  last stable offset itself: it is 0 for every partition without open
  transactions, and SQLite stores 0 in no bytes (6 saved per row).
- Rollups reuse the same fact tables: a retained sample row carries the
  resolution it stands for (`samples.resolution_ms`: 0 raw, 60 000, 600 000),
  see monitor.store.retention.

Timestamps are integer epoch milliseconds UTC (BigInteger); offsets BigInteger.
"""

from __future__ import annotations

import sqlalchemy as sa

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

RAW = 0  # samples.resolution_ms of a sample as the collector wrote it

samples = sa.Table(
    "samples",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("taken_at", sa.BigInteger, nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Column("groups", sa.Integer, nullable=False),
    sa.Column("partitions", sa.Integer, nullable=False),
    sa.Column("ok", sa.Boolean, nullable=False),
    sa.Column("errors", sa.Text, nullable=True),  # JSON list of strings; NULL when none
    sa.Column("resolution_ms", sa.Integer, nullable=False),  # 0 raw, else rolled-up bucket
    # Collector shards (0005): which collector of the cluster took the sample, "i/n" ("1/1" unsharded).
    # A sample holds only that shard's groups, so "a group's samples" are its shard's samples.
    sa.Column("shard", sa.String, nullable=False, server_default="1/1"),
    # Health engine (0006): duration_ms is the whole cycle (sampling, store, health, alerts, exporter);
    # sampling_ms the Kafka part of it. NULL on rows from before 0006, when duration_ms was sampling only.
    sa.Column("sampling_ms", sa.Integer, nullable=True),
    # Partial answers (0009): JSON {group id: when Kafka last answered for it}, the groups it did not
    # answer for this cycle (they have no rows in it); NULL when it answered for all.
    sa.Column("unanswered", sa.Text, nullable=True),
    # Coordinated collectors (0012): they all store under shard "kafka", so a group's history stays in one
    # place as it moves between them; which of them took the sample (NULL: a static shard). Readers thin
    # per (shard, collector): each collector's samples hold only its groups.
    sa.Column("collector", sa.String, nullable=True),
    sa.Index(None, "cluster", "taken_at"),
)

topic_partitions = sa.Table(
    "topic_partitions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.UniqueConstraint("cluster", "topic", "partition"),
)

consumer_groups = sa.Table(
    "consumer_groups",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("first_seen_at", sa.BigInteger, nullable=False),
    # The newest sample holding this group's offsets, so "lag now" is one seek.
    # Not a foreign key: retention may delete that sample of a long-gone group.
    sa.Column("last_sample_id", sa.Integer, nullable=True),
    # The id Kafka knows, UTF-8, when group_id is a stand-in for it (monitor.names); NULL otherwise.
    sa.Column("full_id", sa.LargeBinary, nullable=True),
    sa.UniqueConstraint("cluster", "group_id"),
)

group_partitions = sa.Table(
    "group_partitions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("group_ref", sa.Integer, sa.ForeignKey("consumer_groups.id"), nullable=False),
    sa.Column("tp_id", sa.Integer, sa.ForeignKey("topic_partitions.id"), nullable=False),
    sa.UniqueConstraint("group_ref", "tp_id"),
)

offset_samples = sa.Table(
    "offset_samples",
    metadata,
    sa.Column("sample_id", sa.Integer, sa.ForeignKey("samples.id"), primary_key=True),
    sa.Column("gp_id", sa.Integer, sa.ForeignKey("group_partitions.id"), primary_key=True),
    sa.Column("committed", sa.BigInteger, nullable=True),  # NULL: nothing committed
    sqlite_with_rowid=False,
)

partition_samples = sa.Table(
    "partition_samples",
    metadata,
    sa.Column("sample_id", sa.Integer, sa.ForeignKey("samples.id"), primary_key=True),
    sa.Column("tp_id", sa.Integer, sa.ForeignKey("topic_partitions.id"), primary_key=True),
    sa.Column("log_start", sa.BigInteger, nullable=False),
    sa.Column("log_end", sa.BigInteger, nullable=False),
    # log_end - last_stable (offsets held back by open transactions): 0, which SQLite
    # stores in no bytes at all, for every partition without open transactions.
    # NULL: the last stable offset was not fetched.
    sa.Column("lso_gap", sa.BigInteger, nullable=True),
    sqlite_with_rowid=False,
)

# A share group's position (offset_samples) is its start offset plus the records already done after
# it (KIP-1226's lag then follows); this holds the rest of each share-partition's picture (0008).
share_partition_samples = sa.Table(
    "share_partition_samples",
    metadata,
    sa.Column("sample_id", sa.Integer, sa.ForeignKey("samples.id"), primary_key=True),
    sa.Column("gp_id", sa.Integer, sa.ForeignKey("group_partitions.id"), primary_key=True),
    sa.Column("start_offset", sa.BigInteger, nullable=False),
    sa.Column("delivery_complete", sa.BigInteger, nullable=True),  # NULL: the coordinator has not said
    sa.Column("acknowledged", sa.BigInteger, nullable=False),
    sa.Column("archived", sa.BigInteger, nullable=False),
    sa.Column("redelivering", sa.BigInteger, nullable=False),
    sa.Column("max_delivery_count", sa.Integer, nullable=False),
    sqlite_with_rowid=False,
)

group_states = sa.Table(
    "group_states",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("valid_from", sa.BigInteger, nullable=False),
    sa.Column("valid_to", sa.BigInteger, nullable=True),
    sa.Column("state", sa.String, nullable=False),
    sa.Column("type", sa.String, nullable=False),
    sa.Column("protocol_type", sa.String, nullable=False),
    sa.Column("assignor", sa.String, nullable=False),
    sa.Column("coordinator", sa.Integer, nullable=True),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("state_inferred", sa.Boolean, nullable=False),
    # Share and streams groups (0008): the group and target-assignment epochs, a streams group's topology (JSON)
    sa.Column("epoch", sa.Integer, nullable=True),
    sa.Column("assignment_epoch", sa.Integer, nullable=True),
    sa.Column("topology", sa.Text, nullable=True),
    sa.Index(None, "cluster", "group_id", "valid_to"),
)

group_members = sa.Table(
    "group_members",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("member_id", sa.String, nullable=False),
    sa.Column("instance_id", sa.String, nullable=True),
    sa.Column("client_id", sa.String, nullable=False),
    sa.Column("host", sa.String, nullable=False),
    sa.Column("valid_from", sa.BigInteger, nullable=False),
    sa.Column("valid_to", sa.BigInteger, nullable=True),
    # 0008: the member's rack, and what only share and streams members have (JSON, see store.groups)
    sa.Column("rack", sa.String, nullable=True),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Index(None, "cluster", "group_id", "valid_to"),
)

assignments = sa.Table(
    "assignments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.Column("member_id", sa.String, nullable=False),
    sa.Column("valid_from", sa.BigInteger, nullable=False),
    sa.Column("valid_to", sa.BigInteger, nullable=True),
    sa.Index(None, "cluster", "group_id", "valid_to"),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("kind", sa.String, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),  # JSON object
    sa.Index(None, "cluster", "at"),
    sa.Index(None, "cluster", "group_id", "at"),
)

rebalances = sa.Table(
    "rebalances",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("ended_at", sa.BigInteger, nullable=True),  # NULL while in progress
    sa.Column("protocol", sa.String, nullable=False),
    sa.Column("trigger", sa.String, nullable=False),
    sa.Column("members_before", sa.Integer, nullable=False),
    sa.Column("members_after", sa.Integer, nullable=False),
    sa.Column("members_joined", sa.Text, nullable=False),  # JSON list of MemberRef objects
    sa.Column("members_left", sa.Text, nullable=False),  # JSON list of MemberRef objects
    sa.Column("partitions_moved", sa.Integer, nullable=False),
    sa.Column("generation_before", sa.Integer, nullable=True),
    sa.Column("generation_after", sa.Integer, nullable=True),
    sa.Column("source", sa.String, nullable=False),
    sa.UniqueConstraint("cluster", "group_id", "started_at"),
    sa.Index(None, "cluster", "started_at"),
)


# --- Health and alerts: status history, alert state, silences, outbox -------------
# Status rows are written only when a partition's or group's status changes, so a steady
# cluster adds nothing; the status at time t is the newest row with at <= t. `status` is
# monitor.models.Status as a small int. Alerts keep one row per episode (pending -> firing
# -> resolved) keyed by rule + cluster + group + topic ('' when not per topic); the outbox
# holds every notification until a channel accepted it. Only channel NAMES are stored:
# their Apprise URLs are secrets that live in the environment or the rules file.

partition_status = sa.Table(
    "partition_status",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("status", sa.SmallInteger, nullable=False),
    sa.Column("reason", sa.String, nullable=True),  # why, in words that stay true later (0006)
    sa.Index(None, "cluster", "group_id", "at"),
)

group_status = sa.Table(
    "group_status",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("status", sa.SmallInteger, nullable=False),  # OK, WARN or ERR
    sa.Column("worst", sa.SmallInteger, nullable=False),  # worst partition status (STOP/STALL/REWIND kept)
    sa.Column("total_lag", sa.BigInteger, nullable=False),
    sa.Column("complete", sa.Float, nullable=False),
    sa.Index(None, "cluster", "group_id", "at"),
)

# The health engine's windows and log-end histories (0006), one row per collector shard,
# saved every minute and at stop: a restarted collector judges on them at once
# instead of re-reading its raw history. `body` is zlib-compressed JSON.
health_state = sa.Table(
    "health_state",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("shard", sa.String, primary_key=True),
    sa.Column("saved_at", sa.BigInteger, nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
)

alerts = sa.Table(
    "alerts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("rule", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),  # '' for cluster-wide rules
    sa.Column("topic", sa.String, nullable=False),  # '' unless the rule is per topic
    sa.Column("state", sa.String, nullable=False),  # pending | firing | resolved
    sa.Column("severity", sa.String, nullable=False),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("fired_at", sa.BigInteger, nullable=True),
    sa.Column("resolved_at", sa.BigInteger, nullable=True),
    sa.Column("last_notified_at", sa.BigInteger, nullable=True),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),  # JSON object
    sa.Column("labels", sa.Text, nullable=False),  # JSON object
    sa.Column("acked_at", sa.BigInteger, nullable=True),
    sa.Column("acked_by", sa.String, nullable=True),
    sa.Index(None, "cluster", "state"),
    sa.Index(None, "cluster", "started_at"),
)

alert_silences = sa.Table(
    "alert_silences",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("matchers", sa.Text, nullable=False),  # JSON object: field -> regex
    sa.Column("until", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("created_by", sa.String, nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Index(None, "until"),
)

alert_outbox = sa.Table(
    "alert_outbox",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("alert_id", sa.Integer, sa.ForeignKey("alerts.id"), nullable=False),
    sa.Column("channel", sa.String, nullable=False),  # a channel name, never its URL
    sa.Column("kind", sa.String, nullable=False),  # firing | repeat | resolved
    sa.Column("title", sa.Text, nullable=False),  # the message as it was when the alert changed
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.BigInteger, nullable=False),
    sa.Column("sent_at", sa.BigInteger, nullable=True),  # NULL until the channel accepted it
    sa.Column("last_error", sa.Text, nullable=True),
    # The sender that took the row, and until when (0010): several collectors may share the store,
    # and a row is sent by the one that claimed it; a claim not finished by then (its sender died) lapses.
    sa.Column("claimed_by", sa.String, nullable=True),
    sa.Column("claimed_until", sa.BigInteger, nullable=True),
    sa.Index(None, "sent_at", "next_attempt_at"),
)


# --- offsets-topic tail: exact commits and generations read from __consumer_offsets ---------------
# Where the tail stands per __consumer_offsets partition, written in the same transaction as
# what it read, so a restart neither stores a record twice nor skips one.
offsets_tail_positions = sa.Table(
    "offsets_tail_positions",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    # Collector shards (0005): each shard's tail stores only its own groups' records, so each has its
    # own positions ("1/1" unsharded).
    sa.Column("shard", sa.String, primary_key=True, server_default="1/1"),
    sa.Column("partition", sa.Integer, primary_key=True),
    sa.Column("next_offset", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.BigInteger, nullable=False),
    # Records the tail could not decode or apply (0009): how many on this partition, and the newest one's
    # offset and reason; it reads on past them.
    sa.Column("skipped", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("last_skipped", sa.Text, nullable=True),
)

# Coordinated collectors (0012, `--shard kafka`): each one's row, written every cycle. `partitions` is JSON
# {__consumer_offsets partition: when it was assigned (ms)}; a row whose seen_at stops moving is a collector
# that stopped or died (its partitions are another's by then).
collectors = sa.Table(
    "collectors",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("name", sa.String, primary_key=True),
    sa.Column("partitions", sa.Text, nullable=False),
    sa.Column("groups", sa.Integer, nullable=False),
    sa.Column("tail_lag", sa.BigInteger, nullable=True),  # records of its partitions its tail has not read
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("seen_at", sa.BigInteger, nullable=False),
)

# Every commit (or deletion) per group-partition, ~20 bytes a row: clustered on
# commit time (0007), so storing a second's commits appends to the table whatever
# history it holds, and reading a time range is a range scan; rolled up with age
# like the samples (last commit per minute, then per 10 minutes), see retention.
offset_commits = sa.Table(
    "offset_commits",
    metadata,
    sa.Column("committed_at", sa.BigInteger, primary_key=True),  # the commit timestamp Kafka stored
    sa.Column("gp_id", sa.Integer, sa.ForeignKey("group_partitions.id"), primary_key=True),
    sa.Column("committed", sa.BigInteger, primary_key=True),  # -1: offset deleted or expired (tombstone)
    sa.Column("leader_epoch", sa.Integer, nullable=True),
    sqlite_with_rowid=False,
)

# Every classic generation, KIP-848 group epoch and target assignment epoch, with its
# members and their assignments (JSON), so any rebalance can be replayed exactly.
group_generations = sa.Table(
    "group_generations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("group_id", sa.String, nullable=False),
    sa.Column("kind", sa.String, nullable=False),  # generation | group_epoch | assignment_epoch
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("protocol_type", sa.String, nullable=True),
    sa.Column("protocol", sa.String, nullable=True),
    sa.Column("leader", sa.String, nullable=True),
    sa.Column("members", sa.Text, nullable=False),  # JSON list of {member_id, instance_id, client_id, host, assignment}
    sa.UniqueConstraint("cluster", "group_id", "kind", "epoch"),
    sa.Index(None, "cluster", "at"),
)


# -- Analytics (PySpark, spark/): result tables, replaced per recomputed bucket ------------------
# Spark is their only writer. Buckets are tumbling and epoch-aligned (window '1m' | '5m' | '1h' |
# '1d'); topic '' is the whole group. analysis_runs is the job's ledger: the newest 'ok' run's
# watermark (a samples.id) is where the next run's incremental read starts.

lag_trends = sa.Table(
    "lag_trends",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("group_id", sa.String, primary_key=True),
    sa.Column("topic", sa.String, primary_key=True),  # '' = all topics of the group
    sa.Column("window", sa.String, primary_key=True),
    sa.Column("bucket_start", sa.BigInteger, primary_key=True),
    sa.Column("samples", sa.Integer, nullable=False),
    sa.Column("lag_avg", sa.Float, nullable=True),
    sa.Column("lag_max", sa.BigInteger, nullable=True),
    sa.Column("lag_p95", sa.Float, nullable=True),
    sa.Column("lag_last", sa.BigInteger, nullable=True),
    sa.Column("lag_slope_per_min", sa.Float, nullable=True),  # offsets/min; > 0 falling behind
    sa.Column("produce_rate", sa.Float, nullable=True),  # messages/s
    sa.Column("consume_rate", sa.Float, nullable=True),  # messages/s
    sa.Column("catch_up_eta_s", sa.Float, nullable=True),  # NULL: not catching up (or unknown)
    sa.Column("catching_up", sa.Boolean, nullable=True),
    sa.Column("lag_seconds_avg", sa.Float, nullable=True),
    sa.Column("lag_seconds_max", sa.Float, nullable=True),
    sa.Column("lag_seconds_p50", sa.Float, nullable=True),
    sa.Column("lag_seconds_p95", sa.Float, nullable=True),
    sa.Column("lag_seconds_bounded", sa.Boolean, nullable=False),  # some value is only a lower bound
    sa.Column("run_id", sa.Integer, nullable=False),
    sa.Index(None, "window", "bucket_start"),
)

rebalance_stats = sa.Table(
    "rebalance_stats",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("group_id", sa.String, primary_key=True),
    sa.Column("window", sa.String, primary_key=True),  # '1h' | '1d'
    sa.Column("bucket_start", sa.BigInteger, primary_key=True),
    sa.Column("protocol", sa.String, nullable=False),
    sa.Column("rebalances", sa.Integer, nullable=False),
    sa.Column("completed", sa.Integer, nullable=False),
    sa.Column("total_duration_ms", sa.BigInteger, nullable=True),
    sa.Column("mean_duration_ms", sa.Float, nullable=True),
    sa.Column("p95_duration_ms", sa.Float, nullable=True),
    sa.Column("max_duration_ms", sa.BigInteger, nullable=True),
    sa.Column("partitions_moved", sa.Integer, nullable=False),
    sa.Column("members_joined", sa.Integer, nullable=False),
    sa.Column("members_left", sa.Integer, nullable=False),
    sa.Column("triggers", sa.Text, nullable=True),  # JSON {trigger: rebalances}
    sa.Column("top_members", sa.Text, nullable=True),  # JSON [{"name", "rebalances"}], most first
    sa.Column("top_hosts", sa.Text, nullable=True),
    sa.Column("top_clients", sa.Text, nullable=True),
    sa.Column("run_id", sa.Integer, nullable=False),
    sa.Index(None, "window", "bucket_start"),
)

rebalance_ranking = sa.Table(  # the least stable groups of each cluster over the last day
    "rebalance_ranking",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("group_id", sa.String, primary_key=True),
    sa.Column("rank", sa.Integer, nullable=False),
    sa.Column("window_start", sa.BigInteger, nullable=False),
    sa.Column("window_end", sa.BigInteger, nullable=False),
    sa.Column("protocol", sa.String, nullable=False),
    sa.Column("rebalances", sa.Integer, nullable=False),
    sa.Column("per_hour", sa.Float, nullable=False),
    sa.Column("total_duration_ms", sa.BigInteger, nullable=False),
    sa.Column("mean_duration_ms", sa.Float, nullable=True),
    sa.Column("partitions_moved", sa.Integer, nullable=False),
    sa.Column("run_id", sa.Integer, nullable=False),
)

rebalance_protocols = sa.Table(  # eager vs cooperative vs consumer, per cluster over the last day
    "rebalance_protocols",
    metadata,
    sa.Column("cluster", sa.String, primary_key=True),
    sa.Column("protocol", sa.String, primary_key=True),
    sa.Column("window_start", sa.BigInteger, nullable=False),
    sa.Column("window_end", sa.BigInteger, nullable=False),
    sa.Column("groups", sa.Integer, nullable=False),
    sa.Column("rebalances", sa.Integer, nullable=False),
    sa.Column("per_group", sa.Float, nullable=False),
    sa.Column("mean_duration_ms", sa.Float, nullable=True),
    sa.Column("p95_duration_ms", sa.Float, nullable=True),
    sa.Column("mean_partitions_moved", sa.Float, nullable=True),
    sa.Column("run_id", sa.Integer, nullable=False),
)

analysis_runs = sa.Table(
    "analysis_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("finished_at", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String, nullable=False),  # 'ok' | 'failed'
    sa.Column("watermark", sa.Integer, nullable=False),  # samples.id read up to (inclusive)
    sa.Column("rows_read", sa.BigInteger, nullable=False),  # new rows taken from the store
    sa.Column("rows_written", sa.BigInteger, nullable=False),  # result rows replaced
    sa.Column("range_start", sa.BigInteger, nullable=True),  # the recomputed time range
    sa.Column("range_end", sa.BigInteger, nullable=True),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Column("master", sa.String, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Index(None, "status", "id"),
)
