"""The login a roster row's student has on the course server (`lab tokens ROSTER`)."""

from __future__ import annotations

from grader.batch.roster import RosterEntry

LOGIN_COLUMNS = ("folder", "username", "sis_login_id", "email", "id_number", "sis_user_id", "canvas_id")


def roster_login(entry: RosterEntry) -> str:
    """The row's folder, else its first id column filled (in LOGIN_COLUMNS' order); "" for none."""
    for name in LOGIN_COLUMNS:
        value = getattr(entry, name, "")
        if value:
            return value
    return ""
