"""Fixtures: a running server with a student roster's tokens and an instructor's."""

from __future__ import annotations

import itertools
import shutil
from dataclasses import dataclass

import pytest

from tests.server import postgres
from tests.server.running import RunningServer, needs_server_extra


@dataclass(frozen=True)
class Class:
    server: RunningServer
    alice: str  # tokens
    bob: str
    teacher: str


def issue(database) -> tuple[str, str, str]:
    """Tokens for alice, bob and the instructor `teacher` in `database` (a SQLite file or a URL)."""
    from lab.server.database import Store, sqlite_url
    from lab.server.states import Role

    store = Store(str(database) if "://" in str(database) else sqlite_url(database))
    try:
        return (store.issue_token("alice", "Alice <b>A</b>"), store.issue_token("bob", "Bob"),
                store.issue_token("teacher", "Teacher", Role.INSTRUCTOR))
    finally:
        store.close()


@pytest.fixture(scope="module")
def course_server(tmp_path_factory):
    if needs_server_extra.args[0]:
        pytest.skip(needs_server_extra.kwargs["reason"])
    folder = tmp_path_factory.mktemp("server")
    database = folder / "lab.db"
    alice, bob, teacher = issue(database)
    server = RunningServer(database, folder / "server.log").start()
    try:
        yield Class(server, alice, bob, teacher)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_cluster():
    why = postgres.missing()
    if why:
        pytest.skip(why)
    with postgres.cluster() as url:
        yield url


_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """An empty database: a SQLite file's path, or a fresh PostgreSQL database's URL."""
    if needs_server_extra.args[0]:
        pytest.skip(needs_server_extra.kwargs["reason"])
    if request.param == "sqlite":
        return tmp_path / "lab.db"
    return postgres.fresh_database(request.getfixturevalue("postgres_cluster"), f"lab_test_{next(_numbers)}")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    if CHROMIUM is None:
        pytest.skip("no chromium here (Debian: apt-get install chromium)")
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()
