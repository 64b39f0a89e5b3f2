"""Health and alerts: change-only status history, alert episodes, silences, the notification outbox.

See the "Health and alerts" block at the end of monitor/store/schema.py.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "partition_status",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partition_status")),
    )
    op.create_index(op.f("ix_partition_status_cluster_group_id_at"), "partition_status", ["cluster", "group_id", "at"])
    op.create_table(
        "group_status",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("worst", sa.SmallInteger(), nullable=False),
        sa.Column("total_lag", sa.BigInteger(), nullable=False),
        sa.Column("complete", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_status")),
    )
    op.create_index(op.f("ix_group_status_cluster_group_id_at"), "group_status", ["cluster", "group_id", "at"])
    op.create_table(
        "alerts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("rule", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("severity", sa.String(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("fired_at", sa.BigInteger(), nullable=True),
        sa.Column("resolved_at", sa.BigInteger(), nullable=True),
        sa.Column("last_notified_at", sa.BigInteger(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("acked_at", sa.BigInteger(), nullable=True),
        sa.Column("acked_by", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
    )
    op.create_index(op.f("ix_alerts_cluster_state"), "alerts", ["cluster", "state"])
    op.create_index(op.f("ix_alerts_cluster_started_at"), "alerts", ["cluster", "started_at"])
    op.create_table(
        "alert_silences",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("matchers", sa.Text(), nullable=False),
        sa.Column("until", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_silences")),
    )
    op.create_index(op.f("ix_alert_silences_until"), "alert_silences", ["until"])
    op.create_table(
        "alert_outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("alert_id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger(), nullable=False),
        sa.Column("sent_at", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["alert_id"], ["alerts.id"], name=op.f("fk_alert_outbox_alert_id_alerts")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_outbox")),
    )
    op.create_index(op.f("ix_alert_outbox_sent_at_next_attempt_at"), "alert_outbox", ["sent_at", "next_attempt_at"])


def downgrade() -> None:
    for index, table in [
        ("ix_alert_outbox_sent_at_next_attempt_at", "alert_outbox"),
        ("ix_alert_silences_until", "alert_silences"),
        ("ix_alerts_cluster_started_at", "alerts"),
        ("ix_alerts_cluster_state", "alerts"),
        ("ix_group_status_cluster_group_id_at", "group_status"),
        ("ix_partition_status_cluster_group_id_at", "partition_status"),
    ]:
        op.drop_index(op.f(index), table_name=table)
    for table in ("alert_outbox", "alert_silences", "alerts", "group_status", "partition_status"):
        op.drop_table(table)
