"""Browser sessions last only as long as the token they signed in with: `lab tokens --reissue`
(and --revoke) ends every session of the old token, on a real server over HTTP, and in
Chromium; the new token signs in as before."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.server.running import (
    EXAMPLE,
    ROOT,
    STAGE,
    RunningServer,
    client,
    lab_env,
    needs_server_extra,
    signin_token,
)

if TYPE_CHECKING:
    import httpx

pytestmark = needs_server_extra


def lab_tokens(*args: str) -> dict[str, str]:
    """`lab tokens ...`: the tokens it issued, by login."""
    done = subprocess.run([sys.executable, "-m", "lab", "tokens", *args], cwd=ROOT, env=lab_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {row["login"]: row["token"] for row in csv.DictReader(io.StringIO(done.stdout))}


@pytest.fixture
def class_of_one(tmp_path):
    """A server with one student, ana, her token issued by `lab tokens ROSTER`; and a function that
    reissues it (`lab tokens ROSTER --reissue`), returning the new token."""
    roster, database = tmp_path / "roster.csv", tmp_path / "lab.db"
    roster.write_text("folder,name,email\nana,Ana,ana@example.edu\n")
    token = lab_tokens(str(roster), "--database", str(database))["ana"]
    server = RunningServer(database, tmp_path / "server.log", "--no-local").start()
    try:
        yield server, token, lambda: lab_tokens(str(roster), "--reissue", "--database", str(database))["ana"]
    finally:
        server.stop()


def sign_in(server: RunningServer, token: str) -> tuple[httpx.Client, httpx.Response]:
    """A browser-like client that sent the sign-in form with `token`, and the form's answer."""
    http = client(server, None)
    return http, http.post("/signin", data={"token": token, "csrf": signin_token(http)}, follow_redirects=False)


def form_token(http: httpx.Client) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', http.get("/").text)
    assert found, "not signed in"
    return found.group(1)


def upload(http: httpx.Client, csrf: str, text: bytes) -> httpx.Response:
    return http.post("/upload", data={"stage": STAGE, "csrf": csrf}, files={"file": ("k.cl", text, "text/plain")},
                     follow_redirects=False)


def stored(server: RunningServer, token: str) -> int:
    with client(server, token) as api:
        return len(api.get("/api/submissions").json())


def test_reissuing_a_token_ends_the_sessions_signed_in_with_the_old_one(class_of_one):
    """Issue 35: after `lab tokens --reissue`, a browser signed in with the old token still uploaded."""
    server, old, reissue = class_of_one
    http, answer = sign_in(server, old)
    try:
        assert answer.status_code == 303
        csrf = form_token(http)
        sent = upload(http, csrf, EXAMPLE.read_bytes())
        assert sent.status_code == 303 and sent.headers["location"].startswith("/submissions/")
        mine = sent.headers["location"]
        assert http.get(mine).status_code == 200

        new = reissue()
        assert new != old
        late = upload(http, csrf, EXAMPLE.read_bytes() + b"\n// after the reissue\n")
        assert late.status_code == 303 and late.headers["location"] == "/"  # to the sign-in page
        assert http.get(mine, follow_redirects=False).status_code == 303
        front = http.get("/")
        assert 'id="token"' in front.text and "Submit a kernel" not in front.text
    finally:
        http.close()
    assert stored(server, new) == 1  # the late upload was not stored
    with client(server, old) as api:
        assert api.get("/api/submissions").status_code == 401
    again, refused = sign_in(server, old)
    again.close()
    assert refused.status_code == 401 and "not valid" in refused.text
    fresh, answer = sign_in(server, new)
    try:
        assert answer.status_code == 303
        sent = upload(fresh, form_token(fresh), EXAMPLE.read_bytes() + b"\n// with the new token\n")
        assert sent.status_code == 303 and sent.headers["location"].startswith("/submissions/")
    finally:
        fresh.close()
    assert stored(server, new) == 2


def test_a_browser_signed_in_with_a_reissued_token_is_signed_out_in_chromium(browser, class_of_one):
    server, old, reissue = class_of_one
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url)
    page.fill("#token", old)
    page.click("button[type=submit]")
    page.wait_for_selector("text=Submit a kernel")
    reissue()
    page.select_option("#stage", STAGE)
    page.set_input_files("#file", str(EXAMPLE))
    page.click("form[action='/upload'] button[type=submit]")
    page.wait_for_selector("#token")  # the sign-in form, not the submission's page
    assert "/submissions/" not in page.url
    context.close()
