"""The speed of an upload, from the course GPU server (`lab serve`), where the assignment names one.

After the upload is graded here (correctness, on PoCL), each stage that is correct with its
speed pending is sent to the server as the student's submission (an autograder's token,
`lab tokens --grader`, names the student by Gradescope's email or SID of them), and the
autograder waits for the server's gradings, all stages together, at most `server_wait_s`.
Where the server's report grades the speed, its `fast` check (points, message) replaces the
pending one here; anything else (no answer in time, the server unreachable or refusing, a
report that did not grade the speed either) leaves the check pending with the reason in its
message. Nothing of the server's can fail the upload: the worst is a speed still pending.

The HTTP is the standard library's (the autograder's environment has no server extra).
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.report import FAILED, PASSED, PENDING, Check, Report
from grader.scoring import regraded

FAST = "fast"
POLL_S = 2.0  # between two looks at the server's gradings
REQUEST_TIMEOUT_S = 20.0  # one request's limit (the whole wait is server_wait_s)
MIN_REQUEST_S = 2.0  # a request made at the end of the wait still gets this long
GRADED = (PASSED, FAILED)  # a fast check the server graded (REVIEW: held for a person, so not yet)


@dataclass(frozen=True)
class ServerSpeed:
    """What the server said of one stage's speed: its graded `fast` check, or why there is none."""

    stage: str
    check: Check | None = None  # the server's fast check, where it graded the speed
    reason: str = ""  # why the speed stays pending (where check is None)
    submission: int | None = None  # the server's id for the upload, once stored
    device: str = ""  # the device the server graded on


class Unanswered(Exception):
    """A request to the server did not give what was asked; the message says why in one line."""


class TimedOut(Unanswered):
    """The server took the request but did not answer it in the time left."""


def student_names(metadata: Path) -> list[str]:
    """The submitter's email and SID from Gradescope's submission_metadata.json (the first user
    of a group submission); [] where there is none to read."""
    try:
        data = json.loads(metadata.read_text(encoding="utf-8"))
        user = data["users"][0]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return []
    if not isinstance(user, dict):
        return []
    return [str(user[key]).strip() for key in ("email", "sid") if user.get(key) not in (None, "")]


def read_token(path: Path) -> str:
    """The autograder's token from the zip's file; "" where it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return ""


def needs_server(report: Report) -> bool:
    """Correct here, with the speed still to be graded."""
    return report.status == PENDING and any(c.name == FAST and c.status == PENDING for c in report.checks)


class ServerConnection:
    """The few requests the autograder makes, with its token."""

    def __init__(self, url: str, token: str):
        self.url, self._token = url.rstrip("/"), token

    def _call(self, request: urllib.request.Request, timeout_s: float) -> dict[str, Any]:
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - http(s) only
                body = answer.read()
        except urllib.error.HTTPError as error:
            raise Unanswered(f"the server could not grade it: {_detail(error)}") from None
        except (urllib.error.URLError, OSError) as error:
            why = getattr(error, "reason", None) or error
            if isinstance(why, TimeoutError):
                raise TimedOut(f"the course GPU server took the request but did not answer in {timeout_s:g} s") \
                    from None
            raise Unanswered(f"the course GPU server is unreachable: {why}") from None
        try:
            data = json.loads(body)
        except ValueError:
            raise Unanswered("the course GPU server's answer is not JSON (is the address the server's?)") from None
        if not isinstance(data, dict):
            raise Unanswered("the course GPU server's answer is not a submission")
        return data

    def submit(self, stage: str, names: list[str], filename: str, source: bytes,
               timeout_s: float = REQUEST_TIMEOUT_S) -> dict[str, Any]:
        boundary = f"lab-{secrets.token_hex(16)}"
        parts = [(name, value) for name, value in [("stage", stage), *(("student", n) for n in names[:2])]]
        body = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
            for name, value in parts)
        safe_name = "".join(c for c in filename if c.isalnum() or c in "._-") or f"{stage}.cl"
        body += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{safe_name}"\r\n'
                 f"Content-Type: text/plain\r\n\r\n").encode() + source + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(f"{self.url}/api/submissions", data=body, method="POST",
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        return self._call(request, timeout_s)

    def submission(self, submission_id: int, timeout_s: float = REQUEST_TIMEOUT_S) -> dict[str, Any]:
        return self._call(urllib.request.Request(f"{self.url}/api/submissions/{submission_id}"), timeout_s)


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        detail = json.loads(error.read()).get("detail")
    except (ValueError, AttributeError, OSError):
        detail = None
    return str(detail)[:300] if detail else f"the server answered {error.code}"


def speed_of(shown: Mapping[str, Any], stage: str) -> ServerSpeed:
    """What a finished submission (GET /api/submissions/ID, done or failed) says of the speed."""
    from lab.server.report_json import ReportJsonError, report_from_json

    number = shown.get("id") if isinstance(shown.get("id"), int) else None
    if shown.get("state") == "failed":
        return ServerSpeed(stage, reason=f"the server could not grade it: {shown.get('error') or 'no reason given'}",
                           submission=number)
    try:
        report = report_from_json(dict(shown.get("report") or {}))
    except (ReportJsonError, TypeError, ValueError) as error:
        return ServerSpeed(stage, reason=f"the server's report cannot be read ({error})", submission=number)
    device = report.device_name
    fast = next((c for c in report.checks if c.name == FAST), None)
    if fast is None or fast.status not in GRADED:
        said = f" ({fast.message})" if fast is not None and fast.message else ""
        return ServerSpeed(stage, reason=f"the course GPU server did not grade the speed either{said}",
                           submission=number, device=device)
    return ServerSpeed(stage, check=fast, submission=number, device=device)


def ask_server(connection: ServerConnection, names: list[str], files: Mapping[str, tuple[str, bytes]],
               wait_s: float, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> dict[str, ServerSpeed]:
    """Send each stage's file ({stage: (file name, bytes)}) as the named student's submission and
    wait at most `wait_s` for them all. Never raises: every stage gets a graded check or a reason."""
    deadline = clock() + wait_s
    done: dict[str, ServerSpeed] = {}
    waiting: dict[str, int] = {}
    late = f"the course GPU server did not answer within {wait_s:g} s"

    def request_limit() -> float:  # no request outlasts the wait (a server that takes it and hangs)
        return min(REQUEST_TIMEOUT_S, max(MIN_REQUEST_S, deadline - clock()))

    if not names:
        return {stage: ServerSpeed(stage, reason="Gradescope named no student for this upload "
                                                 "(submission_metadata.json)") for stage in files}
    for stage, (filename, source) in files.items():
        if clock() >= deadline:
            done[stage] = ServerSpeed(stage, reason=f"{late} (not sent)")
            continue
        try:
            shown = connection.submit(stage, names, filename, source, request_limit())
        except TimedOut:
            done[stage] = ServerSpeed(stage, reason=late)
            continue
        except Unanswered as error:
            done[stage] = ServerSpeed(stage, reason=str(error))
            continue
        if not isinstance(shown.get("id"), int):
            done[stage] = ServerSpeed(stage, reason="the course GPU server's answer is not a submission")
        elif shown.get("state") in ("done", "failed") and "report" in shown:
            done[stage] = speed_of(shown, stage)
        else:
            waiting[stage] = shown["id"]
    while waiting:
        for stage, number in list(waiting.items()):
            try:
                shown = connection.submission(number, request_limit())
            except TimedOut:
                done[stage] = ServerSpeed(stage, reason=f"{late} (its submission {number})", submission=number)
                del waiting[stage]
                continue
            except Unanswered as error:
                done[stage] = ServerSpeed(stage, reason=str(error), submission=number)
                del waiting[stage]
                continue
            if shown.get("state") in ("done", "failed"):
                done[stage] = speed_of(shown, stage)
                del waiting[stage]
        left = deadline - clock()
        if waiting and left <= 0:
            for stage, number in waiting.items():
                done[stage] = ServerSpeed(stage, reason=f"{late} (its submission {number} is still in its queue)",
                                          submission=number)
            break
        if waiting:
            sleep(min(POLL_S, left))
    return {stage: done[stage] for stage in files}


def with_server_speed(report: Report, speed: ServerSpeed) -> Report:
    """The report with the server's verdict on its speed: the server's graded fast check (its
    points counted), or the pending check with the reason it is still pending."""
    checks = []
    for check in report.checks:
        if check.name != FAST or check.status != PENDING:
            checks.append(check)
        elif speed.check is not None:
            where = f" ({speed.device})" if speed.device else ""
            checks.append(replace(speed.check, message=f"{speed.check.message}; graded on the course GPU "
                                                       f"server{where}, its submission {speed.submission}"))
        else:
            checks.append(replace(check, message=f"{check.message}; {speed.reason}"))
    if speed.check is None:
        return replace(report, checks=checks)
    note = (f"The speed was graded on the course GPU server{f' ({speed.device})' if speed.device else ''}, "
            f"its submission {speed.submission}: the server's history shows its full report.")
    return regraded(report, checks, [note])  # status and score as the grader gives them
