"""Coordinated collectors: one row each in `collectors`, and who took each sample.

With `--shard kafka` the collectors of a cluster share its groups through a
consumer group of their own; each writes, every cycle, the __consumer_offsets
partitions it holds (and since when), how many groups that is and how far its
tail is behind on them, for the Health page, /metrics and `lagmon collectors`.
They all store samples under shard "kafka" (a group's history stays in one place
as it moves); `samples.collector` says which of them took each.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "collectors",
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("name", sa.String, nullable=False),
        sa.Column("partitions", sa.Text, nullable=False),
        sa.Column("groups", sa.Integer, nullable=False),
        sa.Column("tail_lag", sa.BigInteger, nullable=True),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("seen_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("cluster", "name", name=op.f("pk_collectors")),
    )
    with op.batch_alter_table("samples") as batch:
        batch.add_column(sa.Column("collector", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        batch.drop_column("collector")
    op.drop_table("collectors")
