"""Group ids no store can key on: consumer_groups.full_id.

Kafka accepts any string as a group id, a NUL or 30,000 characters included.
PostgreSQL refuses both in an indexed text column, so such a group is now stored
under a stand-in name (a readable head and a digest, monitor/names.py) and its
whole id is kept here as UTF-8 bytes.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("consumer_groups") as batch:
        batch.add_column(sa.Column("full_id", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("consumer_groups") as batch:
        batch.drop_column("full_id")
