"""Each queued message sent by one sender: alert_outbox.claimed_by / claimed_until.

Collectors that share a store (shards of one cluster, or several clusters) all run an
outbox sender. A sender now claims a row with a conditional UPDATE before sending it and
marks the result only under its own claim, so one row reaches its channel once (at least
once over a crash between sending and marking: the claim lapses and another sender
retries). `claimed_by` names the sender (host and process), never a channel URL.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_outbox") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(), nullable=True))
        batch.add_column(sa.Column("claimed_until", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_outbox") as batch:
        batch.drop_column("claimed_until")
        batch.drop_column("claimed_by")
