"""The web pages in a real browser: Debian's Chromium driven by Playwright (never a downloaded
browser). Sign in with the token, upload, watch it graded, read the feedback; another student's
pages are refused; a form without the session's token is refused.

Screenshots go to tmp_path, or to $LAB_SCREENSHOTS where set (to look at them)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.server.running import EXAMPLE, GRADE_S, STAGE, needs_server_extra

pytestmark = needs_server_extra

def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("LAB_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sign_in(browser, url: str, token: str):
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.goto(url)
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_selector("text=Submit a kernel")
    return context, page


def test_a_student_signs_in_uploads_and_reads_the_feedback(browser, course_server, tmp_path):
    from playwright.sync_api import expect

    url, folder = course_server.server.url, shots(tmp_path)
    context, page = sign_in(browser, url, course_server.alice)
    # Alice's name holds markup: it is shown as text, never as an element.
    assert "Alice <b>A</b>" in page.inner_text("header")
    assert page.locator("header b").count() == 0
    page.select_option("#stage", STAGE)
    page.set_input_files("#file", str(EXAMPLE))
    page.click("form[action='/upload'] button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/\d+$"))
    mine = page.url.rsplit("/", 1)[1]
    expect(page.locator("#state")).to_contain_text("Graded", timeout=GRADE_S * 1000)
    assert re.search(r"score \d+ / 100", page.inner_text("#state"))
    page.screenshot(path=str(folder / "submission.png"), full_page=True)
    page.click("#feedback")
    page.wait_for_url(re.compile(r"/feedback$"))
    assert "transpose_coalesced" in page.content()
    page.screenshot(path=str(folder / "feedback.png"), full_page=True)
    page.goto(url)
    assert page.locator(f"a[href='/submissions/{mine}']").count() == 1
    page.screenshot(path=str(folder / "home.png"), full_page=True)

    # Bob's browser: Alice's submission and feedback pages are refused, and not listed.
    other, theirs = sign_in(browser, url, course_server.bob)
    assert theirs.locator(f"a[href='/submissions/{mine}']").count() == 0
    for path in (f"/submissions/{mine}", f"/submissions/{mine}/feedback"):
        answer = theirs.goto(url + path)
        assert answer.status == 404, path
        assert "no submission" in theirs.inner_text("body") and "transpose" not in theirs.content()
    theirs.screenshot(path=str(folder / "refused.png"), full_page=True)
    assert theirs.goto(url + "/queue").status == 403 and theirs.locator("#queue").count() == 0
    other.close()

    # A form sent without the session's form token (another site's form) is refused.
    for fields in ({"stage": STAGE}, {"stage": STAGE, "csrf": "forged"}):
        answer = context.request.post(f"{url}/upload", multipart={
            **fields, "file": {"name": "x.cl", "mimeType": "text/plain", "buffer": EXAMPLE.read_bytes() + b"//x\n"}})
        assert answer.status == 403
        assert "token" in answer.text()
    answer = context.request.post(f"{url}/signout", form={"csrf": "forged"})
    assert answer.status == 403
    # A student's own form token does not make them an instructor.
    page.goto(f"{url}/submissions/{mine}")
    assert page.locator("#regrade").count() == 0
    page.goto(url)
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    answer = context.request.post(f"{url}/submissions/{mine}/regrade", form={"csrf": csrf})
    assert answer.status == 403
    context.close()

    # The instructor sees every submission, whose it is, and grades one again.
    teacher, theirs = sign_in(browser, url, course_server.teacher)
    theirs.click("#queue")
    from grader.backends.discovery import discover
    from lab.server.lane_plan import plan_lanes

    planned = ", ".join(plan.label for plan in plan_lanes(discover()))  # one lane per GPU, as lab batch plans
    assert f"This server grades on: {planned}." in theirs.inner_text("#lanes")
    assert re.search(r"In the last 10 minutes \d+ gradings? ended", theirs.inner_text("#pace"))  # the recent pace (lab.server.pace)
    theirs.screenshot(path=str(folder / "queue.png"), full_page=True)
    theirs.goto(url)
    assert theirs.locator(f"a[href='/submissions/{mine}']").count() == 1
    theirs.goto(f"{url}/submissions/{mine}")
    assert "Student: alice" in theirs.inner_text("body")
    theirs.click("#regrade")
    expect(theirs.locator("#state")).to_contain_text("Graded", timeout=GRADE_S * 1000)
    assert "gradings started: 2" in theirs.inner_text("body")
    # A mark and its note (markup, shown as text) reach the student's page.
    theirs.select_option("#mark-choice", "held")
    theirs.fill("#mark-note", "<i>see me</i> after class")
    theirs.click("#set-mark")
    theirs.wait_for_selector("#mark")
    theirs.screenshot(path=str(folder / "instructor.png"), full_page=True)
    teacher.close()
    student, page = sign_in(browser, url, course_server.alice)
    page.goto(f"{url}/submissions/{mine}")
    assert page.inner_text("#mark") == "held for review by your instructor: <i>see me</i> after class"
    assert page.locator("#mark i").count() == 0 and page.locator("#set-mark").count() == 0
    student.close()


def test_a_wrong_token_is_refused_on_the_sign_in_page(browser, course_server):
    page = browser.new_page()
    page.goto(course_server.server.url)
    page.fill("#token", "lab_not-a-token")
    page.click("button[type=submit]")
    assert "not valid" in page.inner_text("[role=alert]")
    page.close()
