"""The instructors' JSON API: grade a submission again, mark it, see the queue, export the
gradebook. Every route takes an instructor's token (403 for any other).

  POST /api/submissions/{id}/regrade    queue a finished submission again (409: still queued or grading)
  POST /api/submissions/{id}/mark       {"mark": "held"|"cheated"|null, "note": ...}
  GET  /api/queue                       what is being graded, then the queue in grading order
  GET  /api/gradebook[?deadline=&pick=]  gradebook.csv, as `lab export-grades` writes it
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from lab.server.gradebook_export import ExportPlan, PlanError, export_gradebook, parse_deadline, parse_picks
from lab.server.routes.dependencies import Instructor, TheCatalog, TheServer, json_body, visible
from lab.server.states import MARK_NOTE_LIMIT, Mark, State

router = APIRouter()


@router.post("/api/submissions/{submission_id}/regrade")
def regrade(submission_id: int, user: Instructor, server: TheServer) -> JSONResponse:
    """Queue a finished submission again: 202 with its summary."""
    visible(server, user, submission_id)
    if not server.regrade(submission_id):
        raise HTTPException(409, f"submission {submission_id} is still queued or being graded")
    return JSONResponse(server.summary(visible(server, user, submission_id)), status_code=202)


@router.post("/api/submissions/{submission_id}/mark")
async def mark(submission_id: int, request: Request, user: Instructor, server: TheServer) -> dict[str, Any]:
    """Mark a submission held or cheated, with a note the student reads, or lift its mark (null)."""
    body = await json_body(request)
    given = body.get("mark") if isinstance(body, dict) else "?"
    note = body.get("note", "") if isinstance(body, dict) else ""
    if given not in (None, *tuple(Mark)) or not isinstance(note, str) or len(note) > MARK_NOTE_LIMIT:
        raise HTTPException(422, f'send {{"mark": "held", "cheated" or null, "note": "at most '
                                 f'{MARK_NOTE_LIMIT} characters"}}')

    def marked() -> dict[str, Any]:
        visible(server, user, submission_id)
        server.store.set_mark(submission_id, Mark(given) if given else None, note)
        return server.summary(visible(server, user, submission_id))

    return await run_in_threadpool(marked)


@router.get("/api/queue")
def queue(user: Instructor, server: TheServer) -> list[dict[str, Any]]:
    """What is being graded (with its phase), then the queued submissions with their places."""
    order = server.store.queue_order()
    grading = [s for s in server.store.submissions() if s.state == State.GRADING]
    shown = [server.summary(s) for s in grading]
    pace = server.pace()
    for place, submission_id in enumerate(order, 1):
        found = server.store.get(submission_id)
        if found is not None:
            shown.append(server.summary(found, place, pace))
    return shown


@router.get("/api/gradebook")
def gradebook(user: Instructor, server: TheServer, catalog: TheCatalog, deadline: str | None = None,
              pick: list[str] = Query(default=[])) -> Response:
    """gradebook.csv by `deadline` with the `pick` rules (lab export-grades); its headers name the
    submissions not graded yet and those the grader failed on."""
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
