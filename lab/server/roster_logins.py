"""The login a roster row's student has on the course server (`lab tokens ROSTER`), and how
the row's other ids (email, SID, ...) lead to it (`lab serve --roster`: an autograder names a
student by what Gradescope knows of them)."""

from __future__ import annotations

from collections.abc import Iterable

from lab.batch.roster import RosterEntry

LOGIN_COLUMNS = ("folder", "username", "sis_login_id", "email", "id_number", "sis_user_id", "canvas_id")


def roster_login(entry: RosterEntry) -> str:
    """The row's folder, else its first id column filled (in LOGIN_COLUMNS' order); "" for none."""
    for name in LOGIN_COLUMNS:
        value = getattr(entry, name, "")
        if value:
            return value
    return ""


def alias_key(value: str) -> str:
    """How a student's id is compared: without surrounding spaces or letter case."""
    return value.strip().casefold()


def roster_aliases(entries: Iterable[RosterEntry]) -> dict[str, str]:
    """Every id of every row (alias_key of it) -> the row's login. An id two rows share (which
    a roster refuses for one column, not across columns) leads to neither."""
    found: dict[str, str] = {}
    shared: set[str] = set()
    for entry in entries:
        login = roster_login(entry)
        if not login:
            continue
        for name in LOGIN_COLUMNS:
            value = alias_key(getattr(entry, name, ""))
            if not value:
                continue
            if found.get(value, login) != login:
                shared.add(value)
            found[value] = login
    return {key: login for key, login in found.items() if key not in shared}
