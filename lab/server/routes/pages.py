"""The browser pages: sign in with the token, upload, watch the queue, read the feedback, and
the instructor's forms (grade again, mark). Who is signed in comes from lab.server.routes.sessions;
how a page goes out, from lab.server.routes.html.

  GET  /                                the sign-in form, or (signed in) the upload form and
                                        one's submissions (an instructor: everyone's)
  POST /signin, /signout                a session opened with a token, or closed
  POST /upload                          the upload form: to the submission's page
  GET  /submissions/{id}                its state (reloading itself until graded) and result
  GET  /submissions/{id}/feedback       its feedback page
  POST /submissions/{id}/regrade, /mark instructors: grade it again, mark it
  GET  /queue                           instructors: the lanes, what they grade, the queue
  GET  /leaderboard?stage=S             the stage's leaderboard
  POST /leaderboard/opt-in              one's name on the leaderboards, or not
A page without a session goes to the sign-in page; another student's submission is 404.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from grader.course.catalog import UnknownStageError
from lab.server.database import User
from lab.server.form_guard import foreign_origin, token_matches
from lab.server.intake import UploadRefused
from lab.server.pace import in_words
from lab.server.routes.dependencies import TheServer, TheSettings, TheStore
from lab.server.routes.html import NO_FORM_TOKEN, feedback_page, forged, message, page, redirect
from lab.server.routes.sessions import (
    COOKIE,
    SIGNIN_COOKIE,
    SIGNIN_COOKIE_S,
    FormPost,
    FormPostAt,
    MaybeSignedIn,
    SignedIn,
    SignedInAt,
    checked_form,
)
from lab.server.server import NotYours, Server
from lab.server.settings import ServerSettings
from lab.server.states import MARK_NOTE_LIMIT, Mark, Role, State

REFRESH_S = 2  # a page of a submission not yet graded reloads itself this often

router = APIRouter()


def signin_page(request: Request, settings: ServerSettings, status: int = 200,
                error: str | None = None) -> HTMLResponse:
    """The sign-in form, with its token: the sign-in cookie's value (set anew where absent)."""
    kept = request.cookies.get(SIGNIN_COOKIE, "")
    token = kept if 20 <= len(kept) <= 100 else secrets.token_urlsafe(32)
    response = page("signin.html.j2", status, error=error, csrf=token)
    if token != kept:
        response.set_cookie(SIGNIN_COOKIE, token, max_age=SIGNIN_COOKIE_S, httponly=True, samesite="strict",
                            secure=settings.secure_cookies, path="/")
    return response


def home(server: Server, user: User, csrf: str, status: int = 200, error: str | None = None,
         stage: str = "") -> HTMLResponse:
    """The signed-in front page: the upload form (`error`: why the last upload was refused,
    `stage`: the stage it chose) and the user's submissions (an instructor's: everyone's)."""
    mine = server.store.submissions(None if user.instructor else user)
    return page("home.html.j2", status, user=user, csrf=csrf, stages=server.open_stages(user),
                all_stages=server.catalog.ids(), chosen=stage, submissions=mine, error=error, DONE=State.DONE)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, session: MaybeSignedIn, server: TheServer) -> HTMLResponse:
    """The front page, or the sign-in form without a session."""
    if session is None:
        return signin_page(request, server.settings)
    return home(server, session.user, session.csrf)


@router.post("/signin")
async def signin(request: Request, store: TheStore, settings: TheSettings) -> Response:
    """Open a session with a person's token (a worker's or an autograder's signs in nowhere)."""
    foreign = foreign_origin(request)
    if foreign:
        return forged(foreign)
    form = await request.form(max_files=0, max_fields=3)
    if not token_matches(form.get("csrf"), request.cookies.get(SIGNIN_COOKIE)):
        return forged(NO_FORM_TOKEN)
    token = form.get("token")
    given = token.strip() if isinstance(token, str) else ""
    user = await run_in_threadpool(store.user_by_token, given) if given else None
    opened = None
    if user is not None and user.role not in (Role.WORKER, Role.GRADER):
        opened = await run_in_threadpool(store.open_session, user, given)
    if opened is None:  # no such token, a worker's or an autograder's, or one reissued meanwhile
        return signin_page(request, settings, 401, "that token is not valid: copy it again, or ask your instructor "
                                                   "for a new one")
    cookie, _ = opened
    response = redirect("/")
    response.set_cookie(COOKIE, cookie, httponly=True, samesite="lax", secure=settings.secure_cookies, path="/")
    response.delete_cookie(SIGNIN_COOKIE, path="/")
    return response


@router.post("/signout", dependencies=[Depends(checked_form)])
async def signout(request: Request, store: TheStore) -> Response:
    """Close the session (a form post that carries the session's form token)."""
    await run_in_threadpool(store.close_session, request.cookies.get(COOKIE, ""))
    response = redirect("/")
    response.delete_cookie(COOKIE, path="/")
    return response


@router.post("/upload")
async def upload(checked: FormPost, server: TheServer) -> Response:
    """The upload form: to the submission's page, or the front page again saying why not."""
    stage, sent = checked.form.get("stage"), checked.form.get("file")
    if not isinstance(stage, str) or sent is None or isinstance(sent, str):
        return await run_in_threadpool(home, server, checked.user, checked.csrf, 422,
                                       "choose a stage and a kernel file")
    data = await sent.read()
    try:
        accepted = await run_in_threadpool(server.accept, checked.user, stage, sent.filename, data)
    except UploadRefused as error:
        return await run_in_threadpool(home, server, checked.user, checked.csrf, error.status, str(error), stage)
    return redirect(f"/submissions/{accepted.submission.id}")


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(submission_id: int, session: SignedInAt, server: TheServer) -> Response:
    """A submission's state, place or phase (reloading until it is finished) and result."""
    try:
        shown = server.visible(session.user, submission_id)
    except NotYours as error:
        return message(404, "Not found", str(error))
    return page("submission.html.j2", s=shown, user=session.user, csrf=session.csrf,
                position=server.position(shown),
                phase=server.progress.phase(shown.id) if shown.state == State.GRADING else None,
                refresh=None if shown.state.finished else REFRESH_S, DONE=State.DONE, FAILED=State.FAILED)


@router.get("/queue", response_class=HTMLResponse)
def queue_page(session: SignedIn, server: TheServer) -> Response:
    """Instructors: the lanes, what is being graded (and its phase), then the queue in order."""
    if not session.user.instructor:
        return message(403, "Refused", "only an instructor sees the queue")
    grading = [s for s in server.store.submissions() if s.state == State.GRADING]
    order = server.store.queue_order()
    waiting = [found for found in map(server.store.get, order) if found is not None]
    pace = server.pace()
    return page("queue.html.j2", refresh=REFRESH_S, lanes=[plan.label for plan in server.settings.lanes],
                grading=grading, phases={s.id: server.progress.phase(s.id) for s in grading}, waiting=waiting,
                pace=pace, window_min=round(pace.window_s / 60),
                drain=in_words(pace.wait_s(len(waiting) + len(grading))) if waiting else "")


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(session: SignedIn, server: TheServer, stage: str = "") -> Response:
    """The stage's leaderboard as the user may see it (404: no such stage)."""
    try:
        rows = server.leaderboard(session.user, stage)
    except UnknownStageError as error:
        return message(404, "Not found", str(error))
    return page("leaderboard.html.j2", stage=stage, rows=rows, user=session.user)


@router.post("/leaderboard/opt-in")
async def leaderboard_opt_in(checked: FormPost, store: TheStore) -> Response:
    """The front page's button: one's name on the leaderboards (shown=yes), or not."""
    await run_in_threadpool(store.set_leaderboard, checked.user, checked.form.get("shown") == "yes")
    return redirect("/")


@router.post("/submissions/{submission_id}/regrade")
async def regrade(submission_id: int, checked: FormPostAt, server: TheServer) -> Response:
    """Instructors: grade a finished submission again (one still queued or grading is left as it is)."""
    if not checked.user.instructor:
        return message(403, "Refused", "only an instructor may regrade")
    try:
        await run_in_threadpool(server.visible, checked.user, submission_id)
    except NotYours as error:
        return message(404, "Not found", str(error))
    await run_in_threadpool(server.regrade, submission_id)
    return redirect(f"/submissions/{submission_id}")


@router.post("/submissions/{submission_id}/mark")
async def set_mark(submission_id: int, checked: FormPostAt, store: TheStore, server: TheServer) -> Response:
    """Instructors: mark a submission held or cheated with a note for the student, or lift the mark."""
    if not checked.user.instructor:
        return message(403, "Refused", "only an instructor may mark a submission")
    given, note = checked.form.get("mark"), checked.form.get("note") or ""
    if given not in ("", *tuple(Mark)) or not isinstance(note, str) or len(note) > MARK_NOTE_LIMIT:
        return message(422, "Refused", f"a mark is none, held or cheated, and its note at most {MARK_NOTE_LIMIT} "
                                       "characters")
    try:
        await run_in_threadpool(server.visible, checked.user, submission_id)
    except NotYours as error:
        return message(404, "Not found", str(error))
    await run_in_threadpool(store.set_mark, submission_id, Mark(given) if isinstance(given, str) and given else None,
                            note)
    return redirect(f"/submissions/{submission_id}")


@router.get("/submissions/{submission_id}/feedback", response_class=HTMLResponse)
def feedback(submission_id: int, session: SignedInAt, server: TheServer) -> Response:
    """A graded submission's feedback page (not graded yet: its submission page)."""
    try:
        server.visible(session.user, submission_id)
    except NotYours as error:
        return message(404, "Not found", str(error))
    html = server.store.feedback_html(submission_id)
    if html is None:
        return redirect(f"/submissions/{submission_id}")
    return feedback_page(html)
