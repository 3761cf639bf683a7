"""A throwaway PostgreSQL cluster from the machine's own PostgreSQL (Debian's package): initdb in
a temporary folder, a Unix socket only (no TCP port), stopped and removed at the end. Where the
tests run as root, the cluster runs as `nobody` (PostgreSQL refuses root): its commands start as
that user themselves (subprocess's user and group), so no tool such as runuser need be on PATH."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.server.running import free_port


def postgres_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def missing() -> str | None:
    """Why no cluster can be started here, or None."""
    if postgres_tool("initdb") is None or postgres_tool("pg_ctl") is None:
        return "no PostgreSQL here (Debian: apt-get install postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            return "running as root, and there is no user nobody to run PostgreSQL as"
    return None


def _run(command: list[object], **options) -> subprocess.CompletedProcess:
    """Run a PostgreSQL command as the cluster's owner: `nobody` where the tests run as root (its
    own group, no supplementary groups), else the tests' own user."""
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        options.update(user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[])
    return subprocess.run([str(part) for part in command], capture_output=True, timeout=120, **options)


@contextmanager
def cluster() -> Iterator[str]:
    """A running cluster; yields the URL of its `postgres` database (user `lab`, no password)."""
    folder = Path(tempfile.mkdtemp(prefix="lab-pg-"))
    try:
        folder.chmod(0o755)
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        port = free_port()
        _run([postgres_tool("initdb"), "-D", folder / "data", "-U", "lab", "--auth=trust", "-E", "UTF8",
              "--no-sync"], check=True, cwd=folder)
        pg_ctl = postgres_tool("pg_ctl")
        _run([pg_ctl, "-D", folder / "data", "-l", folder / "log", "-w", "-o",
              f"-k {folder} -p {port} -c listen_addresses= -c fsync=off", "start"], check=True, cwd=folder)
        try:
            yield f"postgresql+psycopg://lab@/postgres?host={folder}&port={port}"
        finally:
            _run([pg_ctl, "-D", folder / "data", "-m", "immediate", "stop"], cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(url: str, name: str) -> str:
    """Create database `name` on the cluster at `url`; its URL."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return url.replace("/postgres?", f"/{name}?", 1)
