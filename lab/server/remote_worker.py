"""`lab work`: a grading machine that takes the server's submissions over HTTP.

Its lanes are lab.engine's slots (the engine `lab batch` and `lab serve` grade with). Each
lane's loop: claim the next submission (POST /api/worker/claim), grade it here through `lab
grade`'s path (grading_lane.grade_source), renewing the claim's lease while it grades (and
telling the server the grading's phase), then send the report (or, where the grader or this
machine failed, the reason). A worker that dies stops renewing: the server queues the
submission again when the lease ends, and a result sent after that is refused, so no
submission is graded into the store twice.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from grader.course.catalog import Catalog
from lab.engine import Engine
from lab.server.client import ClientError, base_url
from lab.server.grading_lane import start_first_workers
from lab.server.lane_plan import LanePlan

log = logging.getLogger("lab.server.worker")

IDLE_POLL_S = 2.0  # with nothing to grade, ask again after this long
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Claim:
    id: int
    attempt: int
    stage: str
    filename: str
    backend: str
    source: bytes
    lease_s: float
    busy: bool = False  # others wait behind it: graded without hardware counters (grading_lane.busy_now)


class RemoteWorker:
    """`lab work`'s lanes: lab.engine's slots (one per LanePlan), each claiming the server's next
    submission of its kernel languages over HTTP and grading it on its device."""

    def __init__(self, url: str, token: str, catalog: Catalog, plans: Sequence[LanePlan], once: bool = False):
        """`once`: each lane grades one submission (or none, where the queue is empty), then stops."""
        self.url, self.catalog, self.once = base_url(url), catalog, once
        self._http = httpx.Client(base_url=self.url, timeout=TIMEOUT_S, headers={"Authorization": f"Bearer {token}"})
        self._phases: dict[int, str] = {}  # submission id -> its grading's phase, for the renewals
        self._lock = threading.Lock()
        self._took: set[int] = set()  # with `once`: the threads that have claimed (or found none)
        self.graded = 0
        self.engine: Engine[LanePlan, Claim] = Engine(
            plans, self, self._grade_one, idle_wait_s=IDLE_POLL_S, on_error=self._error,
            label=lambda plan: plan.device or "auto", name="lab-work", on_start=start_first_workers)

    def close(self) -> None:
        self._http.close()

    def _post(self, path: str, body: Any = None) -> httpx.Response:
        try:
            return self._http.post(path, json=body)
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach the course server at {self.url} ({error})") from None

    def check(self) -> str:
        """The worker's login; raises ClientError where the token is not a worker's."""
        try:
            answer = self._http.get("/api/whoami")
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach the course server at {self.url} ({error})") from None
        if answer.status_code != 200:
            raise ClientError(answer.json().get("detail", f"the server answered {answer.status_code}"),
                              answer.status_code)
        me = answer.json()
        if me.get("role") != "worker":
            raise ClientError(f"{me.get('login')} is no grading worker: issue a worker token (lab tokens --worker)")
        from grader import GRADER_VERSION

        if me.get("grader_version") != GRADER_VERSION:
            raise ClientError(f"the server grades with grader {me.get('grader_version')}, this machine has "
                              f"{GRADER_VERSION}: install the server's lab here")
        return me["login"]

    # lab.engine's Source
    def take(self, plan: LanePlan) -> Claim | None:
        if self.once:
            with self._lock:
                if threading.get_ident() in self._took:
                    return None
                self._took.add(threading.get_ident())
        return self.claim(plan.backends)

    def exhausted(self) -> bool:
        return self.once  # with `once`, a lane that found nothing (or graded its one) is done

    def claim(self, backends: frozenset[str] | None) -> Claim | None:
        """The server's next submission of `backends` (None: any), now this worker's; None where
        none is queued. Raises ClientError."""
        answer = self._post("/api/worker/claim", None if backends is None else {"backends": sorted(backends)})
        if answer.status_code == 204:
            return None
        if answer.status_code != 200:
            raise ClientError(answer.json().get("detail", f"the server answered {answer.status_code}"),
                              answer.status_code)
        data = answer.json()
        return Claim(data["id"], data["attempt"], data["stage"], data["filename"], data["backend"],
                     base64.b64decode(data["source"]), float(data["lease_s"]), data.get("busy") is True)

    @staticmethod
    def _error(error: BaseException, claim: Claim | None) -> None:
        log.warning("%s", error if claim is None else f"submission {claim.id}: {error}")

    def _renew_until(self, claim: Claim, done: threading.Event) -> None:
        while not done.wait(max(0.5, claim.lease_s / 3)):
            try:
                answer = self._post(f"/api/worker/{claim.id}/renew",
                                    {"attempt": claim.attempt, "phase": self._phases.get(claim.id, "starting")})
            except ClientError as error:
                log.warning("%s", error)  # the next renewal may get through before the lease ends
                continue
            if answer.status_code == 409:
                log.warning("submission %d: the server gave it to another worker", claim.id)
                return

    def _grade_one(self, claim: Claim, plan: LanePlan) -> None:
        log.info("grading submission %d (%s)", claim.id, claim.stage)
        stored = self.grade(claim, plan.device)
        with self._lock:
            self.graded += stored

    def grade(self, claim: Claim, device: str | None) -> bool:
        """Grade one claim on `device` (lab grade --device's selector; None: the best) and send
        what came of it; True where the server stored it."""
        from grader.feedback import render_json
        from lab.server.grading_lane import grade_source

        done = threading.Event()
        renewing = threading.Thread(target=self._renew_until, args=(claim, done), daemon=True)
        renewing.start()
        try:
            report = grade_source(self.catalog, claim.stage, claim.backend, claim.filename, claim.source,
                                  device, on_phase=lambda phase: self._phases.__setitem__(claim.id, phase),
                                  busy=claim.busy)
        except Exception as error:  # noqa: BLE001 - a fault of the grader or this machine, never a grade
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            path, body = f"/api/worker/{claim.id}/fail", {"attempt": claim.attempt, "reason": reason}
        else:
            import json

            path, body = f"/api/worker/{claim.id}/result", {"attempt": claim.attempt,
                                                            "report": json.loads(render_json(report))}
        finally:
            done.set()
            renewing.join()
            self._phases.pop(claim.id, None)
        for _ in range(10):  # the server may be restarting: try again for a while
            try:
                answer = self._post(path, body)
            except ClientError as error:
                log.warning("%s", error)
                time.sleep(3)
                continue
            if answer.status_code == 409:
                log.warning("submission %d: %s", claim.id, answer.json().get("detail"))
            return answer.status_code == 200
        return False
