"""Every form post of the web pages is refused when it comes from another site: the sign-in form
(another site signing a browser in to its own account), the upload, and an instructor's regrade
and mark; over HTTP against a real server, and in Chromium from a page of another origin."""

from __future__ import annotations

import httpx
import pytest

from tests.server.running import EXAMPLE, STAGE, client, needs_server_extra, signin_token

pytestmark = needs_server_extra
FOREIGN = {"Origin": "http://attacker.example"}


def signed_in(course_server, token: str) -> tuple[httpx.Client, str]:
    """A browser-like client signed in with `token`, and its session's form token."""
    http = client(course_server.server, None)
    answer = http.post("/signin", data={"token": token, "csrf": signin_token(http)}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return http, signin_token_of_home(http)


def signin_token_of_home(http) -> str:
    import re

    found = re.search(r'name="csrf" value="([^"]+)"', http.get("/").text)
    assert found
    return found.group(1)


def own_submissions(course_server, token: str) -> int:
    with client(course_server.server, token) as http:
        return len(http.get("/api/submissions").json())


def test_the_sign_in_form_needs_its_own_token_and_cookie(course_server):
    with client(course_server.server, None) as http:
        for fields in ({"token": course_server.alice}, {"token": course_server.alice, "csrf": "forged"}):
            refused = http.post("/signin", data=fields, follow_redirects=False)
            assert refused.status_code == 403 and "another site" in refused.text, fields
            assert "lab_session" not in refused.headers.get("set-cookie", "")
        page = http.get("/")
        cookie = page.headers["set-cookie"]
        assert "lab_signin=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        token = signin_token(http)
    # Another browser's sign-in token (an attacker's own, put in a forged form) is not this browser's.
    with client(course_server.server, None) as other:
        signin_token(other)
        refused = other.post("/signin", data={"token": course_server.alice, "csrf": token}, follow_redirects=False)
        assert refused.status_code == 403
    with client(course_server.server, None) as http:
        token = signin_token(http)
        accepted = http.post("/signin", data={"token": course_server.alice, "csrf": token},
                             headers={"Origin": course_server.server.url, "Sec-Fetch-Site": "same-origin"},
                             follow_redirects=False)
        assert accepted.status_code == 303
        session = accepted.headers["set-cookie"]
        assert "lab_session=" in session and "HttpOnly" in session and "SameSite=lax" in session


@pytest.mark.parametrize("headers", [FOREIGN, {"Origin": "null"}, {"Referer": "http://attacker.example/page"},
                                     {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}],
                         ids=["origin", "null-origin", "referer", "fetch-cross-site", "fetch-same-site"])
def test_a_sign_in_from_another_site_is_refused_even_with_the_token(course_server, headers):
    with client(course_server.server, None) as http:
        token = signin_token(http)
        refused = http.post("/signin", data={"token": course_server.alice, "csrf": token}, headers=headers,
                            follow_redirects=False)
    assert refused.status_code == 403 and "another site" in refused.text
    assert "lab_session" not in refused.headers.get("set-cookie", "")


def test_an_upload_from_another_site_is_refused_and_nothing_stored(course_server):
    before = own_submissions(course_server, course_server.bob)
    http, csrf = signed_in(course_server, course_server.bob)
    try:
        files = {"file": ("x.cl", EXAMPLE.read_bytes() + b"\n// forged\n", "text/plain")}
        for fields, headers in (({"stage": STAGE, "csrf": csrf}, FOREIGN), ({"stage": STAGE}, {}),
                                ({"stage": STAGE, "csrf": "forged"}, {})):
            refused = http.post("/upload", data=fields, files=files, headers=headers, follow_redirects=False)
            assert refused.status_code == 403, (fields, headers)
        assert own_submissions(course_server, course_server.bob) == before
        sent = http.post("/upload", data={"stage": STAGE, "csrf": csrf}, files=files,
                         headers={"Origin": course_server.server.url}, follow_redirects=False)
        assert sent.status_code == 303 and sent.headers["location"].startswith("/submissions/")
    finally:
        http.close()
    assert own_submissions(course_server, course_server.bob) == before + 1


def test_an_instructors_actions_from_another_site_are_refused(course_server):
    with client(course_server.server, course_server.alice) as api:
        mine = api.post("/api/submissions", data={"stage": STAGE},
                        files={"file": ("m.cl", EXAMPLE.read_bytes() + b"\n// to mark\n", "text/plain")}).json()["id"]
    http, csrf = signed_in(course_server, course_server.teacher)
    try:
        for path, fields in ((f"/submissions/{mine}/mark", {"mark": "cheated", "note": "forged", "csrf": csrf}),
                             (f"/submissions/{mine}/regrade", {"csrf": csrf}), ("/signout", {"csrf": csrf}),
                             ("/leaderboard/opt-in", {"shown": "yes", "csrf": csrf})):
            refused = http.post(path, data=fields, headers={"Sec-Fetch-Site": "cross-site", **FOREIGN},
                                follow_redirects=False)
            assert refused.status_code == 403, path
        assert http.get("/").status_code == 200 and "Sign in" not in http.get("/").text  # still signed in
    finally:
        http.close()
    with client(course_server.server, course_server.teacher) as api:
        assert api.get(f"/api/submissions/{mine}").json()["mark"] is None


def test_a_page_of_another_site_cannot_sign_a_browser_in_or_upload(browser, course_server):
    """In Chromium: a page of another origin posts forms to the server; both are refused."""
    url = course_server.server.url
    context = browser.new_context()
    forged = f"""<html><body>
      <form id="signin" method="post" action="{url}/signin"><input name="token" value="{course_server.bob}"></form>
      <form id="upload" method="post" action="{url}/upload" enctype="multipart/form-data">
        <input name="stage" value="{STAGE}"></form>
    </body></html>"""
    page = context.new_page()
    page.route("http://attacker.example/**", lambda route: route.fulfill(status=200, content_type="text/html",
                                                                          body=forged))
    page.goto("http://attacker.example/")
    with page.expect_navigation():
        page.evaluate("document.getElementById('signin').submit()")
    assert "another site" in page.inner_text("body")
    assert not [c for c in context.cookies(url) if c["name"] == "lab_session"]
    # Signed in on the real page, then the other site's upload form is sent.
    page.goto(url)
    page.fill("#token", course_server.alice)
    page.click("button[type=submit]")
    page.wait_for_selector("text=Submit a kernel")
    before = own_submissions(course_server, course_server.alice)
    page.goto("http://attacker.example/")
    with page.expect_navigation():
        answer = page.evaluate("document.getElementById('upload').submit()")
    assert answer is None
    assert "another site" in page.inner_text("body") or "Refused" in page.inner_text("body")
    assert own_submissions(course_server, course_server.alice) == before
    context.close()
