"""The student's side of the server's API (lab.server.service), over httpx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

TIMEOUT_S = 30.0


class ClientError(RuntimeError):
    """The server could not be reached or refused the request; the message says why in one line.
    `status`: the HTTP status where the server answered."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def base_url(url: str) -> str:
    """The server's URL as given to `lab login`, checked: http(s)://host[:port][/path]."""
    url = url.strip().rstrip("/")
    parsed = httpx.URL(url) if url else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ClientError(f"{url or 'the URL'}: a server's address is http(s)://HOST[:PORT]")
    return url


class LabClient:
    def __init__(self, url: str, token: str):
        self.url = base_url(url)
        self._http = httpx.Client(base_url=self.url, timeout=TIMEOUT_S,
                                  headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self._http.request(method, path, **options)
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach the course server at {self.url} ({error})") from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = None
            raise ClientError(str(detail or f"the server answered {response.status_code}"), response.status_code)
        return response.json()

    def whoami(self) -> dict[str, Any]:
        return self._call("GET", "/api/whoami")

    def submit(self, stage: str, path: Path, data: bytes) -> dict[str, Any]:
        return self._call("POST", "/api/submissions", data={"stage": stage},
                          files={"file": (path.name, data, "text/plain")})

    def submission(self, submission_id: int, wait_s: float = 0.0) -> dict[str, Any]:
        """The submission as the server shows it; `wait_s`: while it is queued or grading, the
        server answers once it moves or `wait_s` has passed (a long poll)."""
        if not wait_s:
            return self._call("GET", f"/api/submissions/{submission_id}")
        return self._call("GET", f"/api/submissions/{submission_id}", params={"wait": f"{wait_s:g}"},
                          timeout=TIMEOUT_S + wait_s)

    def history(self, stage: str | None = None) -> list[dict[str, Any]]:
        return self._call("GET", "/api/submissions", params={"stage": stage} if stage else None)
