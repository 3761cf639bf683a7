"""The FastAPI app: the JSON API under /api (a bearer token per user) and the web pages
(lab.server.web). `create_app` opens the store, queues again what a stopped server was
grading, and starts one grading lane per device.

API (every answer JSON; an error is {"detail": one line}):
  GET  /api/whoami                      who the token is
  POST /api/submissions                 multipart: stage, file -> 202 queued (200: an identical
                                        earlier submission, `reused`); an autograder's token
                                        (Role.GRADER) adds `student` and submits as that student
  GET  /api/submissions[?stage=&student=]  one's own submissions, newest first (an instructor:
                                        everyone's, or one student's)
  GET  /api/submissions/{id}            its state, queue position, grading phase, and once
                                        graded its report (Report.to_json); an autograder's token
                                        reads only those it sent (only this of the API)
  GET  /api/submissions/{id}/feedback   the HTML feedback page
  POST /api/submissions/{id}/regrade    instructors only
  POST /api/submissions/{id}/mark       instructors only: {"mark": "held"|"cheated"|null, "note": ...}
  GET  /api/leaderboard/{stage}         the fastest correct kernels, one per student (names: opted in)
  POST /api/leaderboard/opt-in          {"shown": true|false}: one's name on the leaderboards
  GET  /api/queue                       instructors only: the grading order
  POST /api/worker/claim                workers (lab work; JSON {"backends": [...]}: only those
                                        kernel languages): the next submission to grade, held for a
                                        lease they renew (/api/worker/{id}/renew) until they send its
                                        /result or /fail; a lapsed lease queues it again
  GET  /api/gradebook[?deadline=&pick=]  instructors only: gradebook.csv (lab export-grades)
A submission that is not the token's user's is answered 404, as one that does not exist.
Every answer says Cache-Control: no-store (private_answers); every request body is bounded by its
route, in size and in time, and read only once the route has checked the token (body_limit).
"""

from __future__ import annotations

import base64
import json
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from grader import GRADER_VERSION
from grader.course.catalog import Catalog, UnknownStageError
from lab.server.body_limit import BodyLimit, BodyRule
from lab.server.database import LARGEST_ID, Submission, User, storable_id
from lab.server.intake import UploadRefused
from lab.server.private_answers import NoStore
from lab.server.server import NotYours, Server
from lab.server.settings import ServerSettings
from lab.server.states import Mark, Role, State

WORKER_BODY_LIMIT = 32 << 20  # bytes of a worker's report (compiler logs, pictures of wrong outputs)
FORM_BODY_LIMIT = 64 * 1024  # bytes of any other request's body: a JSON object, a form without a file
JSON_DEPTH_LIMIT = 64  # levels of nesting a JSON body may have (a report has fewer than 10)
MARK_NOTE_LIMIT = 1000  # characters of an instructor's note on a mark
# The feedback page is the grader's own HTML: no script, inline styles, pictures as data: URLs.
FEEDBACK_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"


def server_of(request: Request) -> Server:
    return request.app.state.server


def token_owner(request: Request) -> User:
    """The user of the request's bearer token, whatever their role; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(401, "sign in: send your token as 'Authorization: Bearer TOKEN' (lab login)",
                            headers={"WWW-Authenticate": "Bearer"})
    user = server_of(request).store.user_by_token(token.strip())
    if user is None:
        raise HTTPException(401, "this token is not valid (revoked, or mistyped): ask your instructor for one",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


def submitter(user: User = Depends(token_owner)) -> User:
    """A person's token or an autograder's; 403 for a grading worker's."""
    if user.role == Role.WORKER:
        raise HTTPException(403, "a worker's token only takes submissions to grade (lab work)")
    return user


def token_user(user: User = Depends(submitter)) -> User:
    """A person's token (a student's or an instructor's); 403 for a worker's or an autograder's."""
    if user.role == Role.GRADER:
        raise HTTPException(403, "an autograder's token only submits for a student and reads that result")
    return user


def worker(user: User = Depends(token_owner)) -> User:
    if user.role != Role.WORKER:
        raise HTTPException(403, "only a grading worker's token takes submissions to grade (lab tokens --worker)")
    return user


def instructor(user: User = Depends(token_user)) -> User:
    if not user.instructor:
        raise HTTPException(403, "only an instructor may do this")
    return user


class NotJson:
    """A request body that is not JSON (json_body's answer for it)."""


NOT_JSON = NotJson()


def _depth(value: Any) -> int:
    """How deeply JSON `value` nests (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= JSON_DEPTH_LIMIT:
                todo.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


async def json_body(request: Request) -> Any:
    """The request's body read as JSON; NOT_JSON where it is not JSON (empty, malformed, not
    UTF-8). Raises HTTPException 400 where it nests deeper than JSON_DEPTH_LIMIT levels."""
    deep = HTTPException(400, f"the JSON body nests deeper than {JSON_DEPTH_LIMIT} levels: send a flat object")
    try:
        body = json.loads(await request.body())
    except RecursionError:
        raise deep from None
    except ValueError:
        return NOT_JSON
    if _depth(body) > JSON_DEPTH_LIMIT:
        raise deep
    return body


def known_id(submission_id: int) -> int:
    """The id, where a submission may have it; 404 where none can (beyond the database's integers)."""
    if not storable_id(submission_id):
        raise HTTPException(404, f"no submission {str(submission_id)[:40]}: ids are 1 to {LARGEST_ID}")
    return submission_id


def _visible(server: Server, user: User, submission_id: int) -> Submission:
    try:
        return server.visible(user, submission_id)
    except NotYours as error:
        raise HTTPException(404, str(error)) from None


def create_app(settings: ServerSettings, catalog: Catalog) -> FastAPI:
    server = Server(settings, catalog)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        server.start()
        yield
        server.stop()

    app = FastAPI(title="GPU lab course server", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.server = server
    upload_rules = tuple(BodyRule("POST", path, settings.body_limit, "an upload") for path in ("/api/submissions",
                                                                                             "/upload"))
    app.add_middleware(BodyLimit, rules=(*upload_rules, BodyRule("POST", "/api/worker/[^/]+/result",
                                                                 WORKER_BODY_LIMIT, "a worker's report")),
                       default=FORM_BODY_LIMIT, timeout_s=settings.body_timeout_s)
    app.add_middleware(NoStore)

    @app.exception_handler(RequestValidationError)
    async def one_line(request: Request, error: RequestValidationError) -> JSONResponse:
        """A path or query value of the wrong kind (an id that is not a number): 422, one line."""
        first = error.errors()[0] if error.errors() else {}
        where = " ".join(str(part) for part in first.get("loc", ())[1:]) or "the request"
        return JSONResponse({"detail": f"{where}: {first.get('msg', 'not valid')}"}, status_code=422)

    @app.get("/api/whoami")
    def whoami(user: User = Depends(token_owner)) -> dict:
        return {"login": user.login, "name": user.name, "role": str(user.role), "leaderboard": user.leaderboard,
                "grader_version": GRADER_VERSION}

    @app.post("/api/submissions")
    async def submit(request: Request, user: User = Depends(submitter)) -> JSONResponse:
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

    @app.get("/api/submissions")
    def history(stage: str | None = None, student: str | None = None, user: User = Depends(token_user)) -> list:
        if student is not None and not user.instructor and student != user.login:
            raise HTTPException(403, "a student sees only their own submissions")
        if user.instructor:
            found = server.store.submissions(None, stage)
            found = [s for s in found if student is None or s.login == student]
        else:
            found = server.store.submissions(user, stage)
        return [server.summary(s) for s in found]

    @app.get("/api/submissions/{submission_id}")
    def one(submission_id: int, user: User = Depends(submitter)) -> dict:
        submission = _visible(server, user, submission_id)
        body = server.summary(submission, server.position(submission))
        report = server.store.report_json(submission_id) if submission.state == State.DONE else None
        body["report"] = json.loads(report) if report else None
        return body

    @app.get("/api/submissions/{submission_id}/feedback")
    def feedback(submission_id: int, user: User = Depends(token_user)) -> HTMLResponse:
        _visible(server, user, submission_id)
        page = server.store.feedback_html(submission_id)
        if page is None:
            raise HTTPException(409, f"submission {submission_id} is not graded yet")
        return HTMLResponse(page, headers={"Content-Security-Policy": FEEDBACK_POLICY})

    @app.post("/api/submissions/{submission_id}/regrade")
    def regrade(submission_id: int, user: User = Depends(instructor)) -> JSONResponse:
        _visible(server, user, submission_id)
        if not server.regrade(submission_id):
            raise HTTPException(409, f"submission {submission_id} is still queued or being graded")
        return JSONResponse(server.summary(_visible(server, user, submission_id)), status_code=202)

    @app.post("/api/submissions/{submission_id}/mark")
    async def mark(submission_id: int, request: Request, user: User = Depends(instructor)) -> dict:
        body = await json_body(request)
        given = body.get("mark") if isinstance(body, dict) else "?"
        note = body.get("note", "") if isinstance(body, dict) else ""
        if given not in (None, *tuple(Mark)) or not isinstance(note, str) or len(note) > MARK_NOTE_LIMIT:
            raise HTTPException(422, f'send {{"mark": "held", "cheated" or null, "note": "at most '
                                     f'{MARK_NOTE_LIMIT} characters"}}')
        def marked() -> dict:
            _visible(server, user, submission_id)
            server.store.set_mark(submission_id, Mark(given) if given else None, note)
            return server.summary(_visible(server, user, submission_id))

        return await run_in_threadpool(marked)

    @app.get("/api/leaderboard/{stage}")
    def leaderboard(stage: str, user: User = Depends(token_user)) -> list:
        try:
            return server.leaderboard(user, stage)
        except UnknownStageError as error:
            raise HTTPException(404, str(error)) from None

    @app.post("/api/leaderboard/opt-in")
    async def opt_in(request: Request, user: User = Depends(token_user)) -> dict:
        body = await json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("shown"), bool):
            raise HTTPException(422, 'send {"shown": true} to be named on the leaderboards, false not to be')
        await run_in_threadpool(server.store.set_leaderboard, user, body["shown"])
        return {"login": user.login, "leaderboard": body["shown"]}

    @app.post("/api/worker/claim")
    async def worker_claim(request: Request, user: User = Depends(worker)) -> Response:
        body = await json_body(request) if await request.body() else None
        given = body.get("backends") if isinstance(body, dict) else None if body is None else "?"
        if given is not None and (not isinstance(given, list) or not all(isinstance(b, str) for b in given)):
            raise HTTPException(422, 'send nothing, or JSON {"backends": ["cuda", "opencl"]}: the kernel languages '
                                     "this lane takes")
        backends = frozenset(given) if given is not None else None
        claimed = await run_in_threadpool(server.store.claim_next, user.login, settings.lease_s, None, backends)
        if claimed is None:
            return Response(status_code=204)
        submission, source = claimed
        server.progress.enter(submission.id, f"taken by {user.login}")
        return JSONResponse({"id": submission.id, "attempt": submission.attempts, "stage": submission.stage,
                             "filename": submission.filename, "backend": submission.backend,
                             "source": base64.b64encode(source).decode("ascii"), "lease_s": settings.lease_s})

    async def _claim_body(request: Request) -> dict:
        body = await json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("attempt"), int):
            raise HTTPException(422, 'send JSON with the claim\'s "attempt"')
        return body

    def _lost(submission_id: int) -> HTTPException:
        return HTTPException(409, f"submission {submission_id} is no longer yours to grade (its lease ended)")

    @app.post("/api/worker/{submission_id}/renew")
    async def worker_renew(submission_id: int, request: Request, user: User = Depends(worker)) -> dict:
        known_id(submission_id)
        body = await _claim_body(request)
        if not await run_in_threadpool(server.store.renew, submission_id, body["attempt"], user.login,
                                       settings.lease_s):
            raise _lost(submission_id)
        if isinstance(body.get("phase"), str):
            server.progress.enter(submission_id, body["phase"][:200])
        return {"held": True}

    @app.post("/api/worker/{submission_id}/result")
    async def worker_result(submission_id: int, request: Request, user: User = Depends(worker)) -> dict:
        known_id(submission_id)
        from lab.server.grading_lane import outcome_of_json
        from lab.server.report_json import ReportJsonError

        body = await _claim_body(request)
        report = body.get("report")
        graded_by = report.get("grader_version") if isinstance(report, dict) else None
        if not isinstance(report, dict) or graded_by != GRADER_VERSION:
            raise HTTPException(422, f"the report comes from grader {graded_by}, this server grades with "
                                     f"{GRADER_VERSION}: run the same lab on every grading machine")
        try:
            outcome = await run_in_threadpool(outcome_of_json, report)
        except ReportJsonError as error:
            raise HTTPException(422, f"the report is {error}") from None
        if not await run_in_threadpool(server.store.finish, submission_id, outcome, body["attempt"], user.login):
            raise _lost(submission_id)
        server.progress.leave(submission_id)
        return {"stored": True}

    @app.post("/api/worker/{submission_id}/fail")
    async def worker_fail(submission_id: int, request: Request, user: User = Depends(worker)) -> dict:
        known_id(submission_id)
        body = await _claim_body(request)
        reason = str(body.get("reason") or "no reason given")[:2000]
        if not await run_in_threadpool(server.store.fail, submission_id,
                                       f"the grader could not grade it on {user.login}: {reason}",
                                       body["attempt"], user.login):
            raise _lost(submission_id)
        server.progress.leave(submission_id)
        return {"stored": True}

    @app.get("/api/queue")
    def queue(user: User = Depends(instructor)) -> list:
        order = server.store.queue_order()
        grading = [s for s in server.store.submissions() if s.state == State.GRADING]
        shown = [server.summary(s) for s in grading]
        for place, submission_id in enumerate(order, 1):
            found = server.store.get(submission_id)
            if found is not None:
                shown.append(server.summary(found, place))
        return shown

    @app.get("/api/gradebook")
    def gradebook(deadline: str | None = None, pick: list[str] = Query(default=[]),
                  user: User = Depends(instructor)) -> Response:
        from lab.server.gradebook_export import (
            ExportPlan,
            PlanError,
            export_gradebook,
            parse_deadline,
            parse_picks,
        )

        try:
            moment = parse_deadline(deadline) if deadline else None
            default, by_stage = parse_picks(pick, catalog.ids())
        except PlanError as error:
            raise HTTPException(422, str(error)) from None
        export = export_gradebook(server.store, catalog, ExportPlan(moment, default, by_stage))
        return Response(export.csv, media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": 'attachment; filename="gradebook.csv"',
            "X-Lab-Not-Graded-Yet": ",".join(str(s.id) for s in export.unfinished),
            "X-Lab-Grader-Failed": ",".join(str(s.id) for s in export.failed)})

    from lab.server import web

    web.install(app, server)
    return app
