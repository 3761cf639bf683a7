"""Whether a browser's form post comes from this site's own pages (cross-site request forgery).

Three checks, each enough against a forged post on its own where the browser supports it:
- the form's hidden token (`csrf`) must equal the one the server gave that browser: the
  session's form token once signed in, the sign-in cookie's value on the sign-in form (a page
  of another site can read neither);
- the browser's `Sec-Fetch-Site`, where sent, must say the post comes from this origin (or
  from the user: typed, a bookmark);
- its `Origin` (else its `Referer`), where sent, must name this host: the `Host` the request
  came to (a reverse proxy must pass it on, as docs/server.md's examples do).
A post with none of the headers (an old browser, a script) still needs the token."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request

from lab.server.tokens import same_secret

ALLOWED_FETCH_SITES = ("same-origin", "none")


def foreign_origin(request: Request) -> str | None:
    """Why the request's headers show it comes from another site, or None."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ALLOWED_FETCH_SITES:
        return f"the browser says this form was sent from another site ({fetch_site[:40]})"
    host = request.headers.get("host", "").lower()
    for header in ("origin", "referer"):
        given = request.headers.get(header)
        if given is None:
            continue
        came_from = urlsplit(given).netloc.lower() if given != "null" else ""
        if not came_from or came_from != host:
            return f"this form was sent from another site ({header} {given[:100]!r}, not {host[:100]!r})"
        return None  # the Origin decides where both are sent
    return None


def token_matches(given: object, kept: str | None) -> bool:
    """Whether a form's `csrf` field is the token the server gave this browser."""
    return isinstance(given, str) and bool(given) and kept is not None and bool(kept) and same_secret(given, kept)
