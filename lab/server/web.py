"""The browser pages: sign in with the token, upload, watch the queue, read the feedback.

A browser session is a random cookie (HttpOnly, SameSite=Lax; Secure behind TLS) whose hash the
store keeps with the session's form token; every form that changes something carries that
token and is refused without it (cross-site requests). The sign-in form carries the value of a
sign-in cookie (SameSite=Strict) set with the page, so another site cannot sign a browser in to
an account of its choosing; every form post is also refused where the browser says it comes
from another site (lab.server.form_guard). Every value a template shows goes
through grader.course.sinks.for_html (jinja2's finalize, with autoescape on); a student's text never runs
as a template."""

from __future__ import annotations

import secrets
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from grader.course.catalog import UnknownStageError
from grader.course.sinks import html_finalize
from grader.report import Status
from lab.server.database import User
from lab.server.form_guard import foreign_origin, token_matches
from lab.server.intake import UploadRefused
from lab.server.server import NotYours, Server
from lab.server.service import FEEDBACK_POLICY, MARK_NOTE_LIMIT
from lab.server.states import Mark, Role, State

COOKIE = "lab_session"
SIGNIN_COOKIE = "lab_signin"  # the sign-in form's token, until signed in
SIGNIN_COOKIE_S = 24 * 3600
REFRESH_S = 2  # a page of a submission not yet graded reloads itself this often
PAGE_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'"

_templates = Environment(loader=FileSystemLoader(str(Path(__file__).parent / "templates")), autoescape=True,
                         finalize=html_finalize, trim_blocks=True, lstrip_blocks=True)


def status_words(status: str | None) -> str:
    """A graded submission's status as a person is told it ("correct, speed not graded here")."""
    return Status(status).words if status else ""


# How a mark is shown, to the student and the instructor.
MARK_WORDS = {Mark.HELD: "held for review by your instructor", Mark.CHEATED: "marked by your instructor as "
              "not your own work: it is not counted"}


def _page(name: str, status: int = 200, **values) -> HTMLResponse:
    return HTMLResponse(_templates.get_template(name).render(words=status_words, MARK_WORDS=MARK_WORDS, **values), status_code=status,
                        headers={"Content-Security-Policy": PAGE_POLICY, "X-Content-Type-Options": "nosniff",
                                 "Referrer-Policy": "same-origin", "Cache-Control": "no-store"})


def _to(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


NO_FORM_TOKEN = ("this form did not come from this site's page: its token is missing or old (a form another site "
                 "sends has none)")


def _forged(why: str) -> HTMLResponse:
    """The answer to a form post refused as cross-site (`why`: one line)."""
    return _page("message.html.j2", 403, title="Refused", message=f"{why}: reload this site's page and send the "
                                                                  "form from it")


def install(app: FastAPI, server: Server) -> None:
    """Add the web pages to `app`."""

    def signed_in(request: Request) -> tuple[User, str] | None:
        cookie = request.cookies.get(COOKIE)
        return server.store.session_user(cookie) if cookie else None

    async def checked_form(request: Request) -> tuple[User, FormData, str] | Response:
        """The signed-in user, the form and the session's form token, where the form carries it.
        (Here and in every async page, the store is called from a thread: it may wait on a lock.)"""
        foreign = foreign_origin(request)
        if foreign:
            return _forged(foreign)
        session = await run_in_threadpool(signed_in, request)
        if session is None:
            return _to("/")
        form = await request.form(max_files=1, max_fields=4)
        if not token_matches(form.get("csrf"), session[1]):
            return _forged(NO_FORM_TOKEN)
        return session[0], form, session[1]

    def signin_page(request: Request, status: int = 200, error: str | None = None) -> HTMLResponse:
        """The sign-in form, with its token: the sign-in cookie's value (set anew where absent)."""
        kept = request.cookies.get(SIGNIN_COOKIE, "")
        token = kept if 20 <= len(kept) <= 100 else secrets.token_urlsafe(32)
        response = _page("signin.html.j2", status, error=error, csrf=token)
        if token != kept:
            response.set_cookie(SIGNIN_COOKIE, token, max_age=SIGNIN_COOKIE_S, httponly=True, samesite="strict",
                                secure=server.settings.secure_cookies, path="/")
        return response

    def home(user: User, csrf: str, status: int = 200, error: str | None = None, stage: str = "") -> HTMLResponse:
        mine = server.store.submissions(None if user.instructor else user)
        return _page("home.html.j2", status, user=user, csrf=csrf, stages=server.open_stages(user),
                     all_stages=server.catalog.ids(), chosen=stage,
                     submissions=mine, error=error, DONE=State.DONE)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        session = signed_in(request)
        if session is None:
            return signin_page(request)
        return home(*session)

    @app.post("/signin")
    async def signin(request: Request) -> Response:
        foreign = foreign_origin(request)
        if foreign:
            return _forged(foreign)
        form = await request.form(max_files=0, max_fields=3)
        if not token_matches(form.get("csrf"), request.cookies.get(SIGNIN_COOKIE)):
            return _forged(NO_FORM_TOKEN)
        token = form.get("token")
        given = token.strip() if isinstance(token, str) else ""
        user = await run_in_threadpool(server.store.user_by_token, given) if given else None
        opened = None
        if user is not None and user.role not in (Role.WORKER, Role.GRADER):
            opened = await run_in_threadpool(server.store.open_session, user, given)
        if opened is None:  # no such token, a worker's or an autograder's, or one reissued meanwhile
            return signin_page(request, 401, "that token is not valid: copy it again, or ask your instructor for a "
                                             "new one")
        cookie, _ = opened
        response = _to("/")
        response.set_cookie(COOKIE, cookie, httponly=True, samesite="lax", secure=server.settings.secure_cookies,
                            path="/")
        response.delete_cookie(SIGNIN_COOKIE, path="/")
        return response

    @app.post("/signout")
    async def signout(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        await run_in_threadpool(server.store.close_session, request.cookies.get(COOKIE, ""))
        response = _to("/")
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.post("/upload")
    async def upload(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        user, form, csrf = checked
        stage, sent = form.get("stage"), form.get("file")
        if not isinstance(stage, str) or sent is None or isinstance(sent, str):
            return await run_in_threadpool(home, user, csrf, 422, "choose a stage and a kernel file")
        data = await sent.read()
        try:
            accepted = await run_in_threadpool(server.accept, user, stage, sent.filename, data)
        except UploadRefused as error:
            return await run_in_threadpool(home, user, csrf, error.status, str(error), stage)
        return _to(f"/submissions/{accepted.submission.id}")

    @app.get("/submissions/{submission_id}", response_class=HTMLResponse)
    def submission_page(submission_id: int, request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return _to("/")
        try:
            shown = server.visible(session[0], submission_id)
        except NotYours as error:
            return _page("message.html.j2", 404, title="Not found", message=str(error))
        return _page("submission.html.j2", s=shown, user=session[0], csrf=session[1],
                     position=server.position(shown), phase=server.progress.phase(shown.id) if shown.state == State.GRADING else None,
                     refresh=None if shown.state.finished else REFRESH_S, DONE=State.DONE, FAILED=State.FAILED)

    @app.get("/queue", response_class=HTMLResponse)
    def queue_page(request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return _to("/")
        if not session[0].instructor:
            return _page("message.html.j2", 403, title="Refused", message="only an instructor sees the queue")
        grading = [s for s in server.store.submissions() if s.state == State.GRADING]
        order = server.store.queue_order()
        waiting = [found for found in map(server.store.get, order) if found is not None]
        return _page("queue.html.j2", refresh=REFRESH_S, lanes=[plan.label for plan in server.settings.lanes],
                     grading=grading, phases={s.id: server.progress.phase(s.id) for s in grading}, waiting=waiting)

    @app.get("/leaderboard", response_class=HTMLResponse)
    def leaderboard_page(request: Request, stage: str = "") -> Response:
        session = signed_in(request)
        if session is None:
            return _to("/")
        try:
            rows = server.leaderboard(session[0], stage)
        except UnknownStageError as error:
            return _page("message.html.j2", 404, title="Not found", message=str(error))
        return _page("leaderboard.html.j2", stage=stage, rows=rows, user=session[0])

    @app.post("/leaderboard/opt-in")
    async def leaderboard_opt_in(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        user, form, _ = checked
        await run_in_threadpool(server.store.set_leaderboard, user, form.get("shown") == "yes")
        return _to("/")

    @app.post("/submissions/{submission_id}/regrade")
    async def regrade(submission_id: int, request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        user = checked[0]
        if not user.instructor:
            return _page("message.html.j2", 403, title="Refused", message="only an instructor may regrade")
        try:
            await run_in_threadpool(server.visible, user, submission_id)
        except NotYours as error:
            return _page("message.html.j2", 404, title="Not found", message=str(error))
        await run_in_threadpool(server.regrade, submission_id)  # one still queued or being graded is left as it is
        return _to(f"/submissions/{submission_id}")

    @app.post("/submissions/{submission_id}/mark")
    async def set_mark(submission_id: int, request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        user, form, _ = checked
        if not user.instructor:
            return _page("message.html.j2", 403, title="Refused", message="only an instructor may mark a submission")
        given, note = form.get("mark"), form.get("note") or ""
        if given not in ("", *tuple(Mark)) or not isinstance(note, str) or len(note) > MARK_NOTE_LIMIT:
            return _page("message.html.j2", 422, title="Refused",
                         message=f"a mark is none, held or cheated, and its note at most {MARK_NOTE_LIMIT} characters")
        try:
            await run_in_threadpool(server.visible, user, submission_id)
        except NotYours as error:
            return _page("message.html.j2", 404, title="Not found", message=str(error))
        await run_in_threadpool(server.store.set_mark, submission_id, Mark(given) if given else None, note)
        return _to(f"/submissions/{submission_id}")

    @app.get("/submissions/{submission_id}/feedback", response_class=HTMLResponse)
    def feedback_page(submission_id: int, request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return _to("/")
        try:
            server.visible(session[0], submission_id)
        except NotYours as error:
            return _page("message.html.j2", 404, title="Not found", message=str(error))
        page = server.store.feedback_html(submission_id)
        if page is None:
            return _to(f"/submissions/{submission_id}")
        return HTMLResponse(page, headers={"Content-Security-Policy": FEEDBACK_POLICY, "Cache-Control": "no-store"})
