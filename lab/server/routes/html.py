"""How the server's HTML goes out: the pages' templates (templates/) and the headers every page
and feedback page carries, the redirect after a form, the refusal of a forged form, and
PageAnswer: the answer a page's dependency gives in its route's place.

Every value a template shows goes through grader.course.sinks.for_html (jinja2's finalize, with
autoescape on); a student's text never runs as a template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader

from grader.course.sinks import html_finalize
from grader.report import Status
from lab.server.states import Mark

PAGE_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'"
# The feedback page is the grader's own HTML: no script, inline styles, pictures as data: URLs.
FEEDBACK_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
TEMPLATES = Path(__file__).parent.parent / "templates"

_templates = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                         finalize=html_finalize, trim_blocks=True, lstrip_blocks=True)


def status_words(status: str | None) -> str:
    """A graded submission's status as a person is told it ("correct, speed not graded here")."""
    return Status(status).words if status else ""


# How a mark is shown, to the student and the instructor.
MARK_WORDS = {Mark.HELD: "held for review by your instructor", Mark.CHEATED: "marked by your instructor as "
              "not your own work: it is not counted"}


def page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
    """The template `name` rendered with `values` (and `words`, `MARK_WORDS`), with the pages'
    headers: their Content-Security-Policy, nosniff, same-origin referrers, no-store."""
    return HTMLResponse(_templates.get_template(name).render(words=status_words, MARK_WORDS=MARK_WORDS, **values),
                        status_code=status,
                        headers={"Content-Security-Policy": PAGE_POLICY, "X-Content-Type-Options": "nosniff",
                                 "Referrer-Policy": "same-origin", "Cache-Control": "no-store"})


def feedback_page(html: str) -> HTMLResponse:
    """A stored feedback page, under its own policy (no script at all)."""
    return HTMLResponse(html, headers={"Content-Security-Policy": FEEDBACK_POLICY, "Cache-Control": "no-store"})


def message(status: int, title: str, text: str) -> HTMLResponse:
    """A page that says one thing: a refusal (403, 422) or a page not found (404)."""
    return page("message.html.j2", status, title=title, message=text)


def redirect(path: str) -> RedirectResponse:
    """303 to `path`: where a form post or a page without a session goes next."""
    return RedirectResponse(path, status_code=303)


NO_FORM_TOKEN = ("this form did not come from this site's page: its token is missing or old (a form another site "
                 "sends has none)")


def forged(why: str) -> HTMLResponse:
    """The answer to a form post refused as cross-site (`why`: one line)."""
    return message(403, "Refused", f"{why}: reload this site's page and send the form from it")


class PageAnswer(Exception):
    """Raised by a page's dependency to answer the request itself (a redirect to sign in, a
    forged form refused): create_app's handler (answer_page) sends `response` as it is."""

    def __init__(self, response: Response):
        super().__init__(response.status_code)
        self.response = response


async def answer_page(request: Request, error: Exception) -> Response:
    """The exception handler for PageAnswer: its response."""
    assert isinstance(error, PageAnswer)
    return error.response
