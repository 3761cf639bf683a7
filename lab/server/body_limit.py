"""An ASGI middleware that bounds every request body by its route, in size and in time, without
reading it ahead of the route.

Each request gets the limit of the first BodyRule its method and path match (else the default):
a Content-Length over it is refused with 413 before the route runs, and the route reads the
body through a guard that refuses it (413) once more bytes than the limit arrive, or (408) when
the whole body has not arrived `timeout_s` seconds after the route began to read it. Nothing is
read before the route asks for it, so a route that refuses a request first (no valid token, no
session) reads none of its body. An answer sent while the request's body is still unread says
`Connection: close`, and the server closes the connection after it: the rest is never read."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

CLOSE = (b"connection", b"close")


@dataclass(frozen=True)
class BodyRule:
    """Requests of `method` whose whole path matches `path` (a regular expression) take bodies of
    at most `limit` bytes; `what` names such a body in the refusal ("an upload")."""

    method: str
    path: str
    limit: int
    what: str
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pattern", re.compile(self.path))

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and self._pattern.fullmatch(path) is not None


class BodyRefused(Exception):
    """The request's body is refused as it arrives (over its limit, or too slow): the answer's
    status and its one line."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BodyLimit:
    """Bounds request bodies: `rules` (the first that matches), else `default` bytes with `what`
    "this request"; `timeout_s` seconds for a whole body once the route starts to read it."""

    def __init__(self, app: Any, rules: tuple[BodyRule, ...], default: int, timeout_s: float):
        self.app, self.rules, self.default, self.timeout_s = app, rules, default, timeout_s

    def limit_of(self, method: str, path: str) -> tuple[int, str]:
        """The body limit of a request, and what its body is called."""
        for rule in self.rules:
            if rule.matches(method, path):
                return rule.limit, rule.what
        return self.default, "this request"

    @staticmethod
    async def _refuse(send: Any, status: int, message: str) -> None:
        body = json.dumps({"detail": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                CLOSE]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        limit, what = self.limit_of(scope["method"], scope["path"])
        over = f"the request is over the {limit // 1024} KiB limit for {what}"
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(send, 413, over)
            return
        # Whether a body may still be on its way (the HTTP parser refuses a malformed Content-Length).
        unread = (declared is not None and declared.isdigit() and int(declared) > 0) or b"transfer-encoding" in headers
        size, deadline, started = 0, 0.0, False

        async def guarded() -> Any:
            nonlocal unread, size, deadline
            if not unread:
                return await receive()
            loop = asyncio.get_running_loop()
            if not deadline:
                deadline = loop.time() + self.timeout_s
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise BodyRefused(408, f"the request's body did not arrive within {self.timeout_s:g} s") from None
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    raise BodyRefused(413, over)
                unread = bool(message.get("more_body", False))
            else:
                unread = False
            return message

        async def answer(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if unread:
                    message = {**message, "headers": [*message.get("headers", []), CLOSE]}
            await send(message)

        try:
            await self.app(scope, guarded, answer)
        except BodyRefused as refused:
            if started:
                raise
            await self._refuse(send, refused.status, str(refused))
