"""What the JSON API's routes are given through FastAPI's dependencies: the running server
(`create_app` keeps it in `app.state.server`), its store, settings and catalog; the user of the
request's bearer token, by role; and the readers of a request's JSON body and a submission id.

Every dependency that answers a request itself raises HTTPException (401 without a valid token,
403 for a token of the wrong role, 404, 400, 422), one line each. None reads the request's body:
a route reads it once its user is known (lab.server.body_limit), through `json_body` or the form.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from grader.course.catalog import Catalog
from lab.server.database import LARGEST_ID, Store, Submission, User, storable_id
from lab.server.server import NotYours, Server
from lab.server.settings import ServerSettings
from lab.server.states import Role

JSON_DEPTH_LIMIT = 64  # levels of nesting a JSON body may have (a report has fewer than 10)


async def the_server(request: Request) -> Server:
    """The app's Server (lanes, progress, store), set by create_app."""
    server: Server = request.app.state.server
    return server


async def the_store(server: Annotated[Server, Depends(the_server)]) -> Store:
    """The server's store (every call of it may wait on the database: call it from a thread)."""
    return server.store


async def the_settings(server: Annotated[Server, Depends(the_server)]) -> ServerSettings:
    """How this `lab serve` runs."""
    return server.settings


async def the_catalog(server: Annotated[Server, Depends(the_server)]) -> Catalog:
    """The course's stages."""
    return server.catalog


TheServer = Annotated[Server, Depends(the_server)]
TheStore = Annotated[Store, Depends(the_store)]
TheSettings = Annotated[ServerSettings, Depends(the_settings)]
TheCatalog = Annotated[Catalog, Depends(the_catalog)]


def token_owner(request: Request, store: TheStore) -> User:
    """The user of the request's bearer token, whatever their role; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(401, "sign in: send your token as 'Authorization: Bearer TOKEN' (lab login)",
                            headers={"WWW-Authenticate": "Bearer"})
    user = store.user_by_token(token.strip())
    if user is None:
        raise HTTPException(401, "this token is not valid (revoked, or mistyped): ask your instructor for one",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


def submitter(user: Annotated[User, Depends(token_owner)]) -> User:
    """A person's token or an autograder's; 403 for a grading worker's."""
    if user.role == Role.WORKER:
        raise HTTPException(403, "a worker's token only takes submissions to grade (lab work)")
    return user


def token_user(user: Annotated[User, Depends(submitter)]) -> User:
    """A person's token (a student's or an instructor's); 403 for a worker's or an autograder's."""
    if user.role == Role.GRADER:
        raise HTTPException(403, "an autograder's token only submits for a student and reads that result")
    return user


def worker(user: Annotated[User, Depends(token_owner)]) -> User:
    """A grading worker's token (lab work); 403 for any other."""
    if user.role != Role.WORKER:
        raise HTTPException(403, "only a grading worker's token takes submissions to grade (lab tokens --worker)")
    return user


def instructor(user: Annotated[User, Depends(token_user)]) -> User:
    """An instructor's token; 403 for any other."""
    if not user.instructor:
        raise HTTPException(403, "only an instructor may do this")
    return user


AnyToken = Annotated[User, Depends(token_owner)]
Submitter = Annotated[User, Depends(submitter)]
Person = Annotated[User, Depends(token_user)]
Worker = Annotated[User, Depends(worker)]
Instructor = Annotated[User, Depends(instructor)]


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
    UTF-8). Raises HTTPException 400 where it nests deeper than JSON_DEPTH_LIMIT levels.
    Called by a route once it knows its user, never as a dependency of its own."""
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


def visible(server: Server, user: User, submission_id: int) -> Submission:
    """The submission, where `user` may see it (Server.visible); 404 otherwise, as for one that
    does not exist."""
    try:
        return server.visible(user, submission_id)
    except NotYours as error:
        raise HTTPException(404, str(error)) from None
