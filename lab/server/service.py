"""The FastAPI app: the JSON API under /api (a bearer token per user) and the web pages, as
routers by concern (lab.server.routes): students (uploads, one's own submissions, the
leaderboards), instructors (regrade, marks, the queue, the gradebook), workers (/api/worker/*),
pages (the browser's pages and sign-in). `create_app` makes the app, its middleware and its
error answers, and includes them; the Server it keeps in `app.state.server` (the routes' one
dependency: lab.server.routes.dependencies) opens the store, and on start queues again what a
stopped server was grading and starts one grading lane per device.

Every answer of the API is JSON; an error is {"detail": one line}. A submission that is not the
token's user's is answered 404, as one that does not exist. Every answer says Cache-Control:
no-store (private_answers); every request body is bounded by its route, in size and in time, and
read only once the route has checked the token (body_limit).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from grader.course.catalog import Catalog
from lab.server.body_limit import BodyLimit, BodyRule
from lab.server.private_answers import NoStore
from lab.server.routes import instructors, pages, students, workers
from lab.server.routes.html import PageAnswer, answer_page
from lab.server.server import Server
from lab.server.settings import ServerSettings

FORM_BODY_LIMIT = 64 * 1024  # bytes of any other request's body: a JSON object, a form without a file
UPLOAD_PATHS = ("/api/submissions", "/upload")  # the API's upload and the web form's


async def one_line(request: Request, error: Exception) -> JSONResponse:
    """A path or query value of the wrong kind (an id that is not a number): 422, one line."""
    assert isinstance(error, RequestValidationError)
    first = error.errors()[0] if error.errors() else {}
    where = " ".join(str(part) for part in first.get("loc", ())[1:]) or "the request"
    return JSONResponse({"detail": f"{where}: {first.get('msg', 'not valid')}"}, status_code=422)


def create_app(settings: ServerSettings, catalog: Catalog) -> FastAPI:
    """The server's app; its lifespan starts the Server's lanes and stops them."""
    server = Server(settings, catalog)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        server.start()
        yield
        server.stop()

    app = FastAPI(title="GPU lab course server", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.server = server
    uploads = tuple(BodyRule("POST", path, settings.body_limit, "an upload") for path in UPLOAD_PATHS)
    reports = BodyRule("POST", workers.RESULT_PATH, workers.RESULT_BODY_LIMIT, "a worker's report")
    app.add_middleware(BodyLimit, rules=(*uploads, reports), default=FORM_BODY_LIMIT,
                       timeout_s=settings.body_timeout_s)
    app.add_middleware(NoStore)
    app.add_exception_handler(RequestValidationError, one_line)
    app.add_exception_handler(PageAnswer, answer_page)
    for routes in (students, instructors, workers, pages):
        app.include_router(routes.router)
    return app
