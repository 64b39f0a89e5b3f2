"""What a cycle could not see, kept: the groups Kafka did not answer for, and the tail's skipped records.

samples.unanswered is a JSON object {group id: when Kafka last answered for it (epoch ms)},
NULL when it answered for every group: such a group keeps its last answer in the collector
and has no rows in that sample, and the CLI and dashboard say so instead of showing old
numbers as new. offsets_tail_positions.skipped / last_skipped count the records the
offsets-topic tail could not decode or apply on each partition and name the newest, for
the Health page (the tail reads on past them).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        batch.add_column(sa.Column("unanswered", sa.Text(), nullable=True))
    with op.batch_alter_table("offsets_tail_positions") as batch:
        batch.add_column(sa.Column("skipped", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_skipped", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("offsets_tail_positions") as batch:
        batch.drop_column("last_skipped")
        batch.drop_column("skipped")
    with op.batch_alter_table("samples") as batch:
        batch.drop_column("unanswered")
