"""The JSON API of a person's own work: who the token is, uploads (a student's, or an
autograder's for a student it names), one's submissions, their reports and feedback pages, and
the leaderboards.

  GET  /api/whoami                      who the token is
  POST /api/submissions                 multipart: stage, file -> 202 queued (200: an identical
                                        earlier submission, `reused`); an autograder's token
                                        (Role.GRADER) adds `student` and submits as that student
  GET  /api/submissions[?stage=&student=]  one's own submissions, newest first (an instructor:
                                        everyone's, or one student's)
  GET  /api/submissions/{id}[?wait=S]   its state, queue position, grading phase, and once
                                        graded its report (Report.to_json); with `wait`, answered
                                        when one of those moves or S seconds pass (a long poll);
                                        an autograder's token reads only those it sent (only this
                                        of the API)
  GET  /api/submissions/{id}/feedback   the HTML feedback page
  GET  /api/leaderboard/{stage}         the fastest correct kernels, one per student (names: opted in)
  POST /api/leaderboard/opt-in          {"shown": true|false}: one's name on the leaderboards
A submission that is not the token's user's is answered 404, as one that does not exist.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from grader import GRADER_VERSION
from grader.course.catalog import UnknownStageError
from lab.server.intake import UploadRefused
from lab.server.routes.dependencies import AnyToken, Person, Submitter, TheServer, json_body, visible
from lab.server.routes.html import FEEDBACK_POLICY
from lab.server.states import Role, State

router = APIRouter()


@router.get("/api/whoami")
def whoami(user: AnyToken) -> dict[str, Any]:
    """The token's login, name and role, its leaderboard choice, and the server's grader version."""
    return {"login": user.login, "name": user.name, "role": str(user.role), "leaderboard": user.leaderboard,
            "grader_version": GRADER_VERSION}


@router.post("/api/submissions")
async def submit(request: Request, user: Submitter, server: TheServer) -> JSONResponse:
    """Store an upload (checked as `lab grade` checks a file) and queue it: 202 with its summary
    and place; 200 with `reused` for an identical earlier one. An autograder's token names the
    student (`student`, the first of two that names one); a person's token may name no one."""
    form = await request.form(max_files=1, max_fields=6)
    stage, upload = form.get("stage"), form.get("file")
    if not isinstance(stage, str) or upload is None or isinstance(upload, str):
        raise HTTPException(422, "send the stage as the field 'stage' and the kernel as the file 'file'")
    names = [name for name in form.getlist("student") if isinstance(name, str) and name.strip()]
    requested_by = None
    if user.role == Role.GRADER:
        if not names:
            raise HTTPException(422, "an autograder names the student it submits for: the field 'student' "
                                     "(their login, email or SID)")
        student = await run_in_threadpool(server.student_named, names[:2])
        if student is None:
            raise HTTPException(404, f"no student {names[0][:200]} on the course server (lab tokens ROSTER "
                                     "issues the roster's logins; lab serve --roster maps emails and SIDs)")
        user, requested_by = student, user
    elif form.getlist("student"):
        raise HTTPException(403, "only an autograder's token submits for another student")
    data = await upload.read()
    try:
        accepted = await run_in_threadpool(server.accept, user, stage, upload.filename, data, requested_by)
    except UploadRefused as error:
        raise HTTPException(error.status, str(error)) from None
    shown = accepted.submission
    body = await run_in_threadpool(lambda: server.summary(shown, server.position(shown)))
    body["reused"] = accepted.reused
    return JSONResponse(body, status_code=200 if accepted.reused else 202)


@router.get("/api/submissions")
def history(user: Person, server: TheServer, stage: str | None = None,
            student: str | None = None) -> list[dict[str, Any]]:
    """One's own submissions, newest first (of `stage`); an instructor's: everyone's, or `student`'s.
    A queued one with its place in line and `wait_s`."""
    if student is not None and not user.instructor and student != user.login:
        raise HTTPException(403, "a student sees only their own submissions")
    if user.instructor:
        found = server.store.submissions(None, stage)
        found = [s for s in found if student is None or s.login == student]
    else:
        found = server.store.submissions(user, stage)
    places = {submission_id: place for place, submission_id in enumerate(server.store.queue_order(), 1)}
    pace = server.pace() if any(s.id in places for s in found) else None
    return [server.summary(s, places.get(s.id), pace) for s in found]


@router.get("/api/submissions/{submission_id}")
async def one(submission_id: int, user: Submitter, server: TheServer,
              wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0) -> dict[str, Any]:
    """A submission the token may see: its summary, place in the queue and, once done, its
    report. `wait` (seconds, at most MAX_WAIT_S): while it is queued or grading, answer once its
    state, place or phase changes, or when `wait` has passed (a long poll: `lab submit` follows
    its grading this way). A person's polls beyond MAX_POLLS_PER_PERSON waiting at once are
    answered at once."""

    def read() -> dict[str, Any]:
        submission = visible(server, user, submission_id)
        return server.summary(submission, server.position(submission))

    deadline = time.monotonic() + wait
    body = await run_in_threadpool(read)  # 404 here for one the token may not see: nothing waits
    first = _moves(body)
    woken = False
    while (_following(body) and _moves(body) == first and time.monotonic() < deadline
           and server.changes.waiting(user.id) < MAX_POLLS_PER_PERSON):
        changed = server.changes.register(submission_id, user.id)
        try:
            body = await run_in_threadpool(read)  # read after registering: no change in between is lost
            if not (_following(body) and _moves(body) == first):
                break
            woken = await server.changes.wait(changed, deadline - time.monotonic()) or woken
        finally:
            server.changes.forget(submission_id, changed)
    else:
        if woken:  # and then out of time, or of polls: what moved is read once more
            body = await run_in_threadpool(read)
    report = (await run_in_threadpool(server.store.report_json, submission_id)
              if body["state"] == str(State.DONE) else None)
    body["report"] = json.loads(report) if report else None
    return body


MAX_WAIT_S = 30.0  # the longest a GET of one submission waits for it to move
MAX_POLLS_PER_PERSON = 8  # long polls of one person waiting at once; more are answered at once


def _following(body: dict[str, Any]) -> bool:
    """Whether a long poll waits on it: it is queued or being graded."""
    return body["state"] in (str(State.QUEUED), str(State.GRADING))


def _moves(body: dict[str, Any]) -> tuple[Any, ...]:
    """What a long poll answers for when it changes."""
    return body["state"], body.get("position"), body.get("phase")


@router.get("/api/submissions/{submission_id}/feedback")
def feedback(submission_id: int, user: Person, server: TheServer) -> HTMLResponse:
    """The feedback page of a graded submission (409 before it is graded)."""
    visible(server, user, submission_id)
    page = server.store.feedback_html(submission_id)
    if page is None:
        raise HTTPException(409, f"submission {submission_id} is not graded yet")
    return HTMLResponse(page, headers={"Content-Security-Policy": FEEDBACK_POLICY})


@router.get("/api/leaderboard/{stage}")
def leaderboard(stage: str, user: Person, server: TheServer) -> list[dict[str, Any]]:
    """The stage's leaderboard as `user` may see it (Server.leaderboard); 404 for no such stage."""
    try:
        return server.leaderboard(user, stage)
    except UnknownStageError as error:
        raise HTTPException(404, str(error)) from None


@router.post("/api/leaderboard/opt-in")
async def opt_in(request: Request, user: Person, server: TheServer) -> dict[str, Any]:
    """Name the user on the leaderboards, or stop (JSON {"shown": true|false})."""
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("shown"), bool):
        raise HTTPException(422, 'send {"shown": true} to be named on the leaderboards, false not to be')
    await run_in_threadpool(server.store.set_leaderboard, user, body["shown"])
    return {"login": user.login, "leaderboard": body["shown"]}
