"""Collector shards: which shard took each sample; per-shard offsets-topic tail positions.

Existing rows were written by one unsharded collector: they become shard "1/1".

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # ADD COLUMN with a constant default: no table copy, even on SQLite
    op.add_column("samples", sa.Column("shard", sa.String(), nullable=False, server_default="1/1"))
    with op.batch_alter_table("offsets_tail_positions", recreate="always") as batch:
        batch.add_column(sa.Column("shard", sa.String(), nullable=False, server_default="1/1"))
        batch.drop_constraint("pk_offsets_tail_positions", type_="primary")
        batch.create_primary_key("pk_offsets_tail_positions", ["cluster", "shard", "partition"])


def downgrade() -> None:
    op.execute("DELETE FROM offsets_tail_positions WHERE shard <> '1/1'")  # one collector again
    with op.batch_alter_table("offsets_tail_positions", recreate="always") as batch:
        batch.drop_constraint("pk_offsets_tail_positions", type_="primary")
        batch.drop_column("shard")
        batch.create_primary_key("pk_offsets_tail_positions", ["cluster", "partition"])
    op.drop_column("samples", "shard")
