"""The grading workers' JSON API (`lab work` on another GPU machine). Every route takes a
worker's token (403 for any other); a claim holds its submission for a lease the worker renews.

  POST /api/worker/claim                JSON {"backends": [...]} (optional: only those kernel
                                        languages): the next submission to grade (204: none), with
                                        its attempt number and lease
  POST /api/worker/{id}/renew           JSON {"attempt", "phase"}: renew the lease, tell the phase
  POST /api/worker/{id}/result          JSON {"attempt", "report"}: the report (Report.to_json),
                                        of this server's grader version only
  POST /api/worker/{id}/fail            JSON {"attempt", "reason"}: the grader could not grade it
Once the lease has ended (the submission queued again) renew, result and fail answer 409: the
result of a grading that lost its claim is never stored.
"""

from __future__ import annotations

import base64
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from grader import GRADER_VERSION
from lab.server.grading_lane import busy_now, outcome_of_json
from lab.server.report_json import ReportJsonError
from lab.server.routes.dependencies import TheServer, TheSettings, Worker, json_body, known_id

RESULT_PATH = "/api/worker/[^/]+/result"  # the report's route, as lab.server.body_limit matches it
RESULT_BODY_LIMIT = 32 << 20  # bytes of a worker's report (compiler logs, pictures of wrong outputs)

router = APIRouter()


async def claim_body(request: Request) -> dict[str, Any]:
    """The JSON body of a claimed submission's route: an object with the claim's `attempt`; 422
    otherwise. Called once the worker's token is checked."""
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("attempt"), int):
        raise HTTPException(422, 'send JSON with the claim\'s "attempt"')
    return body


def lost(submission_id: int) -> HTTPException:
    """409: the worker's claim on the submission ended (its lease lapsed, it was queued again)."""
    return HTTPException(409, f"submission {submission_id} is no longer yours to grade (its lease ended)")


@router.post("/api/worker/claim")
async def claim(request: Request, user: Worker, server: TheServer, settings: TheSettings) -> Response:
    """The next submission in grading order (of the asked kernel languages), held for the lease."""
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
    busy = await run_in_threadpool(busy_now, server.store, backends, settings.busy_counters)
    return JSONResponse({"id": submission.id, "attempt": submission.attempts, "stage": submission.stage,
                         "filename": submission.filename, "backend": submission.backend,
                         "source": base64.b64encode(source).decode("ascii"), "lease_s": settings.lease_s,
                         "busy": busy})


@router.post("/api/worker/{submission_id}/renew")
async def renew(submission_id: int, request: Request, user: Worker, server: TheServer,
                settings: TheSettings) -> dict[str, Any]:
    """Renew the claim's lease, and show the grading's phase where the worker tells it."""
    known_id(submission_id)
    body = await claim_body(request)
    if not await run_in_threadpool(server.store.renew, submission_id, body["attempt"], user.login,
                                   settings.lease_s):
        raise lost(submission_id)
    if isinstance(body.get("phase"), str):
        server.progress.enter(submission_id, body["phase"][:200])
    return {"held": True}


@router.post("/api/worker/{submission_id}/result")
async def result(submission_id: int, request: Request, user: Worker, server: TheServer) -> dict[str, Any]:
    """Store the claim's report (graded by this server's grader version) as the submission's result."""
    known_id(submission_id)
    body = await claim_body(request)
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
        raise lost(submission_id)
    server.progress.leave(submission_id)
    return {"stored": True}


@router.post("/api/worker/{submission_id}/fail")
async def fail(submission_id: int, request: Request, user: Worker, server: TheServer) -> dict[str, Any]:
    """Store that the grader could not grade the claimed submission, and why (no grade)."""
    known_id(submission_id)
    body = await claim_body(request)
    reason = str(body.get("reason") or "no reason given")[:2000]
    if not await run_in_threadpool(server.store.fail, submission_id,
                                   f"the grader could not grade it on {user.login}: {reason}",
                                   body["attempt"], user.login):
        raise lost(submission_id)
    server.progress.leave(submission_id)
    return {"stored": True}
