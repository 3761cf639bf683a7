"""An autograder's reads: which submissions each autograder's token sent (or was answered with,
for an identical resubmission), the only ones it may read.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "autograder_requests",
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("grader_id", sa.Integer, sa.ForeignKey("users.id"), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("autograder_requests")
