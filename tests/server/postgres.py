"""A throwaway PostgreSQL cluster from the machine's own PostgreSQL (Debian's package): initdb in
a temporary folder, a Unix socket only (no TCP port), stopped and removed at the end. Where the
tests run as root, the cluster runs as `nobody` (PostgreSQL refuses root)."""

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


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


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
        subprocess.run(_as_owner([postgres_tool("initdb"), "-D", str(folder / "data"), "-U", "lab", "--auth=trust",
                                  "-E", "UTF8", "--no-sync"]), check=True, capture_output=True, timeout=120)
        pg_ctl = postgres_tool("pg_ctl")
        subprocess.run(_as_owner([pg_ctl, "-D", str(folder / "data"), "-l", str(folder / "log"), "-w", "-o",
                                  f"-k {folder} -p {port} -c listen_addresses= -c fsync=off", "start"]),
                       check=True, capture_output=True, timeout=120)
        try:
            yield f"postgresql+psycopg://lab@/postgres?host={folder}&port={port}"
        finally:
            subprocess.run(_as_owner([pg_ctl, "-D", str(folder / "data"), "-m", "immediate", "stop"]),
                           capture_output=True, timeout=120)
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
