"""Analytics result tables written by the Spark jobs (spark/): trends, rebalance stats, run ledger.

See the "Analytics" block at the end of monitor/store/schema.py.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lag_trends",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("window", sa.String(), nullable=False),
        sa.Column("bucket_start", sa.BigInteger(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("lag_avg", sa.Float(), nullable=True),
        sa.Column("lag_max", sa.BigInteger(), nullable=True),
        sa.Column("lag_p95", sa.Float(), nullable=True),
        sa.Column("lag_last", sa.BigInteger(), nullable=True),
        sa.Column("lag_slope_per_min", sa.Float(), nullable=True),
        sa.Column("produce_rate", sa.Float(), nullable=True),
        sa.Column("consume_rate", sa.Float(), nullable=True),
        sa.Column("catch_up_eta_s", sa.Float(), nullable=True),
        sa.Column("catching_up", sa.Boolean(), nullable=True),
        sa.Column("lag_seconds_avg", sa.Float(), nullable=True),
        sa.Column("lag_seconds_max", sa.Float(), nullable=True),
        sa.Column("lag_seconds_p50", sa.Float(), nullable=True),
        sa.Column("lag_seconds_p95", sa.Float(), nullable=True),
        sa.Column("lag_seconds_bounded", sa.Boolean(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "group_id", "topic", "window", "bucket_start", name=op.f("pk_lag_trends")),
    )
    op.create_index(op.f("ix_lag_trends_window_bucket_start"), "lag_trends", ["window", "bucket_start"])
    op.create_table(
        "rebalance_stats",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("window", sa.String(), nullable=False),
        sa.Column("bucket_start", sa.BigInteger(), nullable=False),
        sa.Column("protocol", sa.String(), nullable=False),
        sa.Column("rebalances", sa.Integer(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("total_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("mean_duration_ms", sa.Float(), nullable=True),
        sa.Column("p95_duration_ms", sa.Float(), nullable=True),
        sa.Column("max_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("partitions_moved", sa.Integer(), nullable=False),
        sa.Column("members_joined", sa.Integer(), nullable=False),
        sa.Column("members_left", sa.Integer(), nullable=False),
        sa.Column("triggers", sa.Text(), nullable=True),
        sa.Column("top_members", sa.Text(), nullable=True),
        sa.Column("top_hosts", sa.Text(), nullable=True),
        sa.Column("top_clients", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "group_id", "window", "bucket_start", name=op.f("pk_rebalance_stats")),
    )
    op.create_index(op.f("ix_rebalance_stats_window_bucket_start"), "rebalance_stats", ["window", "bucket_start"])
    op.create_table(
        "rebalance_ranking",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("window_end", sa.BigInteger(), nullable=False),
        sa.Column("protocol", sa.String(), nullable=False),
        sa.Column("rebalances", sa.Integer(), nullable=False),
        sa.Column("per_hour", sa.Float(), nullable=False),
        sa.Column("total_duration_ms", sa.BigInteger(), nullable=False),
        sa.Column("mean_duration_ms", sa.Float(), nullable=True),
        sa.Column("partitions_moved", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "group_id", name=op.f("pk_rebalance_ranking")),
    )
    op.create_table(
        "rebalance_protocols",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("protocol", sa.String(), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("window_end", sa.BigInteger(), nullable=False),
        sa.Column("groups", sa.Integer(), nullable=False),
        sa.Column("rebalances", sa.Integer(), nullable=False),
        sa.Column("per_group", sa.Float(), nullable=False),
        sa.Column("mean_duration_ms", sa.Float(), nullable=True),
        sa.Column("p95_duration_ms", sa.Float(), nullable=True),
        sa.Column("mean_partitions_moved", sa.Float(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "protocol", name=op.f("pk_rebalance_protocols")),
    )
    op.create_table(
        "analysis_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("watermark", sa.Integer(), nullable=False),
        sa.Column("rows_read", sa.BigInteger(), nullable=False),
        sa.Column("rows_written", sa.BigInteger(), nullable=False),
        sa.Column("range_start", sa.BigInteger(), nullable=True),
        sa.Column("range_end", sa.BigInteger(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("master", sa.String(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analysis_runs")),
    )
    op.create_index(op.f("ix_analysis_runs_status_id"), "analysis_runs", ["status", "id"])


def downgrade() -> None:
    op.drop_table("analysis_runs")
    op.drop_table("rebalance_protocols")
    op.drop_table("rebalance_ranking")
    op.drop_table("rebalance_stats")
    op.drop_table("lag_trends")
