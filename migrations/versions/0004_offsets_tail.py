"""Offsets-topic tail: read positions, exact commit history, generations and epochs.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "offsets_tail_positions",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("next_offset", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "partition", name=op.f("pk_offsets_tail_positions")),
    )
    op.create_table(
        "offset_commits",
        sa.Column("gp_id", sa.Integer(), nullable=False),
        sa.Column("committed_at", sa.BigInteger(), nullable=False),
        sa.Column("committed", sa.BigInteger(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["gp_id"], ["group_partitions.id"], name=op.f("fk_offset_commits_gp_id_group_partitions")
        ),
        sa.PrimaryKeyConstraint("gp_id", "committed_at", "committed", name=op.f("pk_offset_commits")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "group_generations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("protocol_type", sa.String(), nullable=True),
        sa.Column("protocol", sa.String(), nullable=True),
        sa.Column("leader", sa.String(), nullable=True),
        sa.Column("members", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_generations")),
        sa.UniqueConstraint(
            "cluster", "group_id", "kind", "epoch", name=op.f("uq_group_generations_cluster_group_id_kind_epoch")
        ),
    )
    op.create_index(op.f("ix_group_generations_cluster_at"), "group_generations", ["cluster", "at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_group_generations_cluster_at"), table_name="group_generations")
    op.drop_table("group_generations")
    op.drop_table("offset_commits")
    op.drop_table("offsets_tail_positions")
