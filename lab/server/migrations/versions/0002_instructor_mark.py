"""A submission's instructor mark: held for review, or cheated (kept and shown, not counted).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("mark", sa.String(20), nullable=True))
    op.add_column("submissions", sa.Column("mark_note", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as table:
        table.drop_column("mark_note")
        table.drop_column("mark")
