"""A real `lab serve` for the tests: a subprocess on 127.0.0.1, a free port, a SQLite file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.server import missing_libraries

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "transpose_coalesced.cl"
STAGE = "transpose_coalesced"
START_S = 60.0
GRADE_S = 240.0  # a grading on PoCL, on a loaded 2-core machine

needs_server_extra = pytest.mark.skipif(
    bool(missing_libraries()),
    reason=f"the server extra is not installed (missing {', '.join(missing_libraries())}): "
           "pip install 'gpu-teaching-lab[server]'")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def lab_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_SANDBOX": os.environ.get("LAB_SANDBOX", "off"),
           "COLUMNS": "100", "NO_COLOR": "1"}
    env.update(extra)
    return env


class RunningServer:
    """`lab serve` on a database file; start() waits until it answers, kill() is kill -9."""

    def __init__(self, database: Path, log: Path, *options: str):
        self.database, self.log, self.port, self.options = database, log, free_port(), options
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RunningServer:
        import httpx

        log = open(self.log, "ab")  # noqa: SIM115 - the child writes to it until it ends
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lab", "serve", "--database", str(self.database), "--port", str(self.port),
             *self.options],
            cwd=ROOT, env=lab_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"lab serve ended ({self.process.returncode}): {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/whoami", timeout=2).status_code == 401:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"lab serve did not answer in {START_S} s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """kill -9 the server process, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """End the server, then whatever of its process group is left (a grading worker a
        killed server left behind)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # its own session: start_new_session
        except ProcessLookupError:
            pass


def client(server: RunningServer, token: str | None):
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60)


def submit(http, source: bytes, stage: str = STAGE, name: str = "mine.cl"):
    return http.post("/api/submissions", data={"stage": stage}, files={"file": (name, source, "text/plain")})


def correct(shown: dict) -> bool:
    """Graded, and its correctness check passed (on any device: the speed's points differ)."""
    checks = {c["name"]: c["status"] for c in ((shown.get("report") or {}).get("checks") or [])}
    return shown["state"] == "done" and checks.get("correct") == "passed"


def wait_graded(http, submission_id: int, limit_s: float = GRADE_S) -> dict:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        shown = http.get(f"/api/submissions/{submission_id}").json()
        if shown["state"] in ("done", "failed"):
            return shown
        time.sleep(0.3)
    raise AssertionError(f"submission {submission_id} not graded in {limit_s} s")


def signin_token(http) -> str:
    """The sign-in form's hidden token, from the front page (its cookie kept in `http`)."""
    import re

    page = http.get("/")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)
