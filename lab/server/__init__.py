"""The course GPU server (`lab serve`): students submit kernels over HTTP, the server stores
each one, grades it through `lab grade`'s path on the course GPU, and keeps every result.

Modules, one concept each: states (a submission's life), database (the tables and the store),
scheduling (round-robin order across students), tokens (issuing and checking access tokens),
grading_lane (the loop that grades one device's queue), report_json (a Report read back from
its JSON), service (the FastAPI app: the JSON API), web (the browser pages), credentials (a
student's saved server and token), client (the student's side of the API).

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
