"""An ASGI middleware that marks every answer of the server `Cache-Control: no-store`.

Every answer is someone's own: a student's submissions and feedback, an instructor's gradebook,
a page with a session's form token, even a refusal. No browser or proxy keeps a copy."""

from __future__ import annotations

from typing import Any

NO_STORE = (b"cache-control", b"no-store")


class NoStore:
    """Sets `Cache-Control: no-store` on every HTTP answer (in place of any other Cache-Control)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marked(message: Any) -> None:
            if message["type"] == "http.response.start":
                kept = [(name, value) for name, value in message.get("headers", [])
                        if name.lower() != b"cache-control"]
                message = {**message, "headers": [*kept, NO_STORE]}
            await send(message)

        await self.app(scope, receive, marked)
