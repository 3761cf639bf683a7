"""Alembic's environment for the server's schema: run on the connection lab.server.database
hands over (config.attributes["connection"]), never from an alembic.ini."""

from __future__ import annotations

from alembic import context

from lab.server.tables import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
