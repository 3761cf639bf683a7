"""Several `lab serve` processes on one database: which of them a submission's grading belongs
to (its own lanes' claims, leased and renewed as a remote worker's are).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("server", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as table:
        table.drop_column("server")
