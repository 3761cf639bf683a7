"""The leaderboard: a student's opt-in to show their name, and whether a submission was correct.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN, which SQLite does in place (a batch would copy the tables their keys point at)
    op.add_column("users", sa.Column("leaderboard", sa.Boolean, nullable=False, server_default=sa.false()))
    op.add_column("submissions", sa.Column("correct", sa.Boolean, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as table:
        table.drop_column("correct")
    with op.batch_alter_table("users") as table:
        table.drop_column("leaderboard")
