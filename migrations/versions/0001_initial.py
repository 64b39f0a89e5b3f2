"""Initial schema: samples, dimensions, compact fact tables, SCD intervals, events, rebalances.

See monitor/store/schema.py for why the tables look like this. The two fact
tables are WITHOUT ROWID on SQLite (ignored elsewhere): their primary key is
the clustering key, so there is no second copy of the key in a rowid index.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("taken_at", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("groups", sa.Integer(), nullable=False),
        sa.Column("partitions", sa.Integer(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("errors", sa.Text(), nullable=True),
        sa.Column("resolution_ms", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_samples")),
    )
    op.create_index(op.f("ix_samples_cluster_taken_at"), "samples", ["cluster", "taken_at"])

    op.create_table(
        "topic_partitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_topic_partitions")),
        sa.UniqueConstraint("cluster", "topic", "partition", name=op.f("uq_topic_partitions_cluster_topic_partition")),
    )
    op.create_table(
        "consumer_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("first_seen_at", sa.BigInteger(), nullable=False),
        sa.Column("last_sample_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consumer_groups")),
        sa.UniqueConstraint("cluster", "group_id", name=op.f("uq_consumer_groups_cluster_group_id")),
    )
    op.create_table(
        "group_partitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_ref", sa.Integer(), nullable=False),
        sa.Column("tp_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_ref"],
            ["consumer_groups.id"],
            name=op.f("fk_group_partitions_group_ref_consumer_groups"),
        ),
        sa.ForeignKeyConstraint(
            ["tp_id"], ["topic_partitions.id"], name=op.f("fk_group_partitions_tp_id_topic_partitions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_partitions")),
        sa.UniqueConstraint("group_ref", "tp_id", name=op.f("uq_group_partitions_group_ref_tp_id")),
    )

    op.create_table(
        "offset_samples",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("gp_id", sa.Integer(), nullable=False),
        sa.Column("committed", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["sample_id"], ["samples.id"], name=op.f("fk_offset_samples_sample_id_samples")),
        sa.ForeignKeyConstraint(
            ["gp_id"], ["group_partitions.id"], name=op.f("fk_offset_samples_gp_id_group_partitions")
        ),
        sa.PrimaryKeyConstraint("sample_id", "gp_id", name=op.f("pk_offset_samples")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "partition_samples",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("tp_id", sa.Integer(), nullable=False),
        sa.Column("log_start", sa.BigInteger(), nullable=False),
        sa.Column("log_end", sa.BigInteger(), nullable=False),
        sa.Column("lso_gap", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["sample_id"], ["samples.id"], name=op.f("fk_partition_samples_sample_id_samples")),
        sa.ForeignKeyConstraint(
            ["tp_id"], ["topic_partitions.id"], name=op.f("fk_partition_samples_tp_id_topic_partitions")
        ),
        sa.PrimaryKeyConstraint("sample_id", "tp_id", name=op.f("pk_partition_samples")),
        sqlite_with_rowid=False,
    )

    op.create_table(
        "group_states",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("valid_from", sa.BigInteger(), nullable=False),
        sa.Column("valid_to", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("protocol_type", sa.String(), nullable=False),
        sa.Column("assignor", sa.String(), nullable=False),
        sa.Column("coordinator", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("state_inferred", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_states")),
    )
    op.create_index(
        op.f("ix_group_states_cluster_group_id_valid_to"), "group_states", ["cluster", "group_id", "valid_to"]
    )
    op.create_table(
        "group_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("member_id", sa.String(), nullable=False),
        sa.Column("instance_id", sa.String(), nullable=True),
        sa.Column("client_id", sa.String(), nullable=False),
        sa.Column("host", sa.String(), nullable=False),
        sa.Column("valid_from", sa.BigInteger(), nullable=False),
        sa.Column("valid_to", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_members")),
    )
    op.create_index(
        op.f("ix_group_members_cluster_group_id_valid_to"), "group_members", ["cluster", "group_id", "valid_to"]
    )
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.String(), nullable=False),
        sa.Column("valid_from", sa.BigInteger(), nullable=False),
        sa.Column("valid_to", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assignments")),
    )
    op.create_index(
        op.f("ix_assignments_cluster_group_id_valid_to"), "assignments", ["cluster", "group_id", "valid_to"]
    )

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index(op.f("ix_events_cluster_at"), "events", ["cluster", "at"])
    op.create_index(op.f("ix_events_cluster_group_id_at"), "events", ["cluster", "group_id", "at"])

    op.create_table(
        "rebalances",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("ended_at", sa.BigInteger(), nullable=True),
        sa.Column("protocol", sa.String(), nullable=False),
        sa.Column("trigger", sa.String(), nullable=False),
        sa.Column("members_before", sa.Integer(), nullable=False),
        sa.Column("members_after", sa.Integer(), nullable=False),
        sa.Column("members_joined", sa.Text(), nullable=False),
        sa.Column("members_left", sa.Text(), nullable=False),
        sa.Column("partitions_moved", sa.Integer(), nullable=False),
        sa.Column("generation_before", sa.Integer(), nullable=True),
        sa.Column("generation_after", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rebalances")),
        sa.UniqueConstraint(
            "cluster", "group_id", "started_at", name=op.f("uq_rebalances_cluster_group_id_started_at")
        ),
    )
    op.create_index(op.f("ix_rebalances_cluster_started_at"), "rebalances", ["cluster", "started_at"])


def downgrade() -> None:
    for table in (
        "rebalances",
        "events",
        "assignments",
        "group_members",
        "group_states",
        "partition_samples",
        "offset_samples",
        "group_partitions",
        "consumer_groups",
        "topic_partitions",
        "samples",
    ):
        op.drop_table(table)  # drops its indexes with it
