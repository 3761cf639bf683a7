"""A browser session remembers the token it signed in with (its hash): reissuing or revoking that
token ends the session. Sessions opened before this revision have none and are ended.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("web_sessions", sa.Column("token_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as table:
        table.drop_column("token_hash")
