"""An ASGI middleware that refuses a request body over a limit with 413, before any parsing.

The body is read here (at most the limit plus one chunk) and handed on whole, so neither the
multipart parser nor a route ever spools an endless upload; a Content-Length over the limit is
refused without reading anything."""

from __future__ import annotations

import json
from typing import Any


class BodyLimit:
    """`limit` bytes a request body; `wider` for paths under `wider_prefix` (a worker's report)."""

    def __init__(self, app: Any, limit: int, wider: int = 0, wider_prefix: str = ""):
        self.app, self.limit, self.wider, self.wider_prefix = app, limit, wider, wider_prefix

    async def _refuse(self, send: Any, limit: int) -> None:
        body = json.dumps({"detail": f"the request is over the {limit // 1024} KiB limit for an upload"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = self.wider if self.wider_prefix and scope["path"].startswith(self.wider_prefix) else self.limit
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(send, limit)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await self._refuse(send, limit)
                return
            if not message.get("more_body", False):
                break
        body, sent = b"".join(chunks), False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
