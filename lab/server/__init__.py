"""The course GPU server (`lab serve`): students submit kernels over HTTP, the server stores
each one, grades it through `lab grade`'s path on the course GPU, and keeps every result
(docs/server.md).

Modules, one concept each:
  states            a submission's life (State), instructor marks (Mark), user roles (Role)
  tables, database  the tables (SQLAlchemy) and the store; migrations/: the Alembic revisions
  scheduling        round-robin order across students
  tokens            access tokens: made at random, kept as their hash
  intake            what an upload must be (checked as `lab grade` checks a file)
  stage_windows     stages open and closed by date (--schedule)
  settings          how one `lab serve` runs
  grading_lane      the thread that grades one device's queue; a grading's stored form
  server            the server's state, shared by the API and the pages
  body_limit        request bodies bounded by their route, in size and in time, never read ahead
  private_answers   Cache-Control: no-store on every answer
  service           the FastAPI app: its middleware, its error answers, its routers
  routes/           the routers by concern (students, instructors, workers, pages: the browser's,
                    templates/) and what they share (dependencies, sessions, html)
  report_json       a Report read back from its JSON
  gradebook_export  gradebook.csv (and the LMS files) by a deadline
  roster_logins     the login a roster row's student gets, and the row's ids that lead to it
  credentials       a student's saved server and token (`lab login`)
  client            the student's side of the API (`lab submit`, `lab history`)
  remote_worker     a grading machine that takes submissions over HTTP (`lab work`)

The server's libraries are the optional extra `server` (`pip install gpu-teaching-lab[server]`):
`require()` says which is missing, in one line.
"""

from __future__ import annotations

import importlib.util

NEEDED = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "multipart", "httpx")


class ServerExtraMissing(RuntimeError):
    """A library of the `server` extra is not installed; the message names it."""


def missing_libraries() -> list[str]:
    """The `server` extra's libraries that cannot be imported here."""
    return [name for name in NEEDED if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules: import would fail
        return False


def require() -> None:
    """Raise ServerExtraMissing where a library of the `server` extra is absent."""
    missing = missing_libraries()
    if missing:
        raise ServerExtraMissing(f"the course server needs {', '.join(missing)}: "
                                 "pip install 'gpu-teaching-lab[server]'")
