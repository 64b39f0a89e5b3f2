"""Health engine: whole-cycle times, status reasons, the engine's saved state.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("samples", sa.Column("sampling_ms", sa.Integer(), nullable=True))
    op.add_column("partition_status", sa.Column("reason", sa.String(), nullable=True))
    op.create_table(
        "health_state",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("shard", sa.String(), nullable=False),
        sa.Column("saved_at", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "shard", name=op.f("pk_health_state")),
    )


def downgrade() -> None:
    op.drop_table("health_state")
    with op.batch_alter_table("partition_status") as batch:
        batch.drop_column("reason")
    with op.batch_alter_table("samples") as batch:
        batch.drop_column("sampling_ms")
