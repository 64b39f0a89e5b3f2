"""Share groups (KIP-932) and streams groups (KIP-1071): their epochs, topology, members' tasks and in-flight records.

group_states gains the group and target-assignment epochs and a streams group's
topology (JSON); group_members the member's rack and what only share and streams
members have (JSON: subscribed topics, process id, tasks). share_partition_samples
holds each share-partition's start offset and in-flight counts per sample, beside
the position offset_samples holds for it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("group_states") as batch:
        batch.add_column(sa.Column("epoch", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("assignment_epoch", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("topology", sa.Text(), nullable=True))
    with op.batch_alter_table("group_members") as batch:
        batch.add_column(sa.Column("rack", sa.String(), nullable=True))
        batch.add_column(sa.Column("detail", sa.Text(), nullable=True))
    op.create_table(
        "share_partition_samples",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("gp_id", sa.Integer(), nullable=False),
        sa.Column("start_offset", sa.BigInteger(), nullable=False),
        sa.Column("delivery_complete", sa.BigInteger(), nullable=True),
        sa.Column("acknowledged", sa.BigInteger(), nullable=False),
        sa.Column("archived", sa.BigInteger(), nullable=False),
        sa.Column("redelivering", sa.BigInteger(), nullable=False),
        sa.Column("max_delivery_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sample_id"], ["samples.id"], name=op.f("fk_share_partition_samples_sample_id_samples")
        ),
        sa.ForeignKeyConstraint(
            ["gp_id"], ["group_partitions.id"], name=op.f("fk_share_partition_samples_gp_id_group_partitions")
        ),
        sa.PrimaryKeyConstraint("sample_id", "gp_id", name=op.f("pk_share_partition_samples")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("share_partition_samples")
    with op.batch_alter_table("group_members") as batch:
        batch.drop_column("detail")
        batch.drop_column("rack")
    with op.batch_alter_table("group_states") as batch:
        batch.drop_column("topology")
        batch.drop_column("assignment_epoch")
        batch.drop_column("epoch")
