"""Who is signed in to the web pages, given to their routes through FastAPI's dependencies.

A browser session is a random cookie (COOKIE: HttpOnly, SameSite=Lax; Secure behind TLS) whose
hash the store keeps with the session's form token; every form that changes something carries
that token and is refused without it (`checked_form`: cross-site requests). The sign-in form
carries the value of a sign-in cookie (SIGNIN_COOKIE, SameSite=Strict) set with the page, so
another site cannot sign a browser in to an account of its choosing; every form post is also
refused where the browser says it comes from another site (lab.server.form_guard).

A dependency that answers the request itself (no session: to the sign-in page; a forged form:
403) raises PageAnswer with that answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from lab.server.database import User
from lab.server.form_guard import foreign_origin, token_matches
from lab.server.routes.dependencies import TheStore
from lab.server.routes.html import NO_FORM_TOKEN, PageAnswer, forged, redirect

COOKIE = "lab_session"
SIGNIN_COOKIE = "lab_signin"  # the sign-in form's token, until signed in
SIGNIN_COOKIE_S = 24 * 3600


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its user and the session's form token (`csrf`)."""

    user: User
    csrf: str


@dataclass(frozen=True)
class CheckedForm:
    """A form post of a signed-in browser that carries the session's form token."""

    user: User
    form: FormData
    csrf: str


def session_of(request: Request, store: TheStore) -> Session | None:
    """The request's session (its cookie's), or None: no cookie, or one no longer valid."""
    cookie = request.cookies.get(COOKIE)
    found = store.session_user(cookie) if cookie else None
    return Session(*found) if found is not None else None


def signed_in(session: Annotated[Session | None, Depends(session_of)]) -> Session:
    """The request's session; without one, the answer is a redirect to the sign-in page."""
    if session is None:
        raise PageAnswer(redirect("/"))
    return session


def signed_in_at(submission_id: int, session: Annotated[Session | None, Depends(session_of)]) -> Session:
    """signed_in, for a page of the submission `submission_id`: an id that is not a number is
    answered 422 first (FastAPI checks a dependency's own parameters before it calls it)."""
    return signed_in(session)


async def checked_form(request: Request, store: TheStore) -> CheckedForm:
    """The signed-in user, the form and the session's form token, where the form carries it.
    Answers in the route's place (PageAnswer): a post from another site (403, before anything
    else), no session (a redirect to sign in, before the form is read), a form without the
    session's token (403). (Here and in every async page, the store is called from a thread:
    it may wait on a lock.)"""
    foreign = foreign_origin(request)
    if foreign:
        raise PageAnswer(forged(foreign))
    cookie = request.cookies.get(COOKIE)
    found = await run_in_threadpool(store.session_user, cookie) if cookie else None
    if found is None:
        raise PageAnswer(redirect("/"))
    user, csrf = found
    form = await request.form(max_files=1, max_fields=4)
    if not token_matches(form.get("csrf"), csrf):
        raise PageAnswer(forged(NO_FORM_TOKEN))
    return CheckedForm(user, form, csrf)


async def checked_form_at(submission_id: int, request: Request, store: TheStore) -> CheckedForm:
    """checked_form, for a form posted to the submission `submission_id`: an id that is not a
    number is answered 422 first, before the form's origin, session or body."""
    return await checked_form(request, store)


MaybeSignedIn = Annotated[Session | None, Depends(session_of)]
SignedIn = Annotated[Session, Depends(signed_in)]
SignedInAt = Annotated[Session, Depends(signed_in_at)]
FormPost = Annotated[CheckedForm, Depends(checked_form)]
FormPostAt = Annotated[CheckedForm, Depends(checked_form_at)]
