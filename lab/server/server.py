"""The server's state and what both its JSON API and its web pages do with it: accept an
upload (checked, stored, a lane woken), show a submission to whom may see it, regrade."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from grader.course.catalog import Catalog
from lab.server.change_signal import ChangeSignal
from lab.server.database import RateLimited, Store, Submission, User, now
from lab.server.grading_lane import Lanes, Progress
from lab.server.intake import Upload, UploadRefused, check_upload
from lab.server.pace import WINDOW_S, Pace, pace_of
from lab.server.roster_logins import alias_key
from lab.server.serving_process import ServingProcess
from lab.server.settings import ServerSettings
from lab.server.states import Role, State

log = logging.getLogger("lab.server")


class NotYours(LookupError):
    """No such submission among those the user may see (another student's is not told apart
    from one that does not exist)."""


@dataclass(frozen=True)
class Accepted:
    submission: Submission
    reused: bool  # an identical earlier submission, answered from its stored result


PACE_TTL_S = 2.0  # the recent pace is read again after this long


class Server:
    def __init__(self, settings: ServerSettings, catalog: Catalog):
        self.settings, self.catalog = settings, catalog
        self.store = Store(settings.database_url)
        self.changes = ChangeSignal()  # wakes the API's long polls (GET /api/submissions/{id}?wait=S)
        self.progress = Progress(on_change=self.changes.changed)
        self.identity = ServingProcess.this_one()
        self.lanes = Lanes(self.store, catalog, self.progress, settings.lanes, self.identity, settings.lease_s,
                           settings.busy_counters)
        self._pace: tuple[float, Pace | None] = (0.0, None)
        self._pace_lock = threading.Lock()
        self._stopping = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep, name="lab-lease-sweeper", daemon=True)

    def start(self) -> None:
        """Queue again what a stopped server of this host was grading, then start the lanes and
        the watch on leases (this server's own renewed, lapsed ones of others queued again)."""
        again = self.store.requeue_interrupted(self.identity)
        if again:
            log.info("%d submission(s) interrupted mid-grading are queued again", again)
        self.lanes.start()
        self._sweeper.start()

    def stop(self) -> None:
        """Stop the lanes and queue again what they were grading (another server, or this one
        started again, grades it)."""
        self._stopping.set()
        self.lanes.stop()
        self._sweeper.join(5)
        try:
            self.store.release(self.identity)
        except Exception:  # noqa: BLE001 - the database is away: the leases end by themselves
            log.exception("cannot hand back the gradings under way")
        self.store.close()

    def _sweep(self) -> None:
        """Every few seconds: renew this server's own leases, then queue again what a remote
        worker or another server stopped renewing."""
        every = max(0.5, min(5.0, self.settings.lease_s / 4))
        while not self._stopping.wait(every):
            try:
                self.store.renew_server(self.identity, self.settings.lease_s)
                lapsed = self.store.expire_leases()
            except Exception:  # noqa: BLE001 - the database is away for a moment: try again
                log.exception("cannot look at the gradings' leases")
                continue
            if lapsed:
                log.info("queued again, their worker or server stopped renewing: %s", ", ".join(map(str, lapsed)))
                self.wake()

    def wake(self) -> None:
        self.lanes.wake()

    def accept(self, user: User, stage: str, filename: str | None, data: bytes,
               requested_by: User | None = None) -> Accepted:
        """Check and store an upload (committed), then wake the lanes. Raises UploadRefused (429:
        over the student's rate limit; 403: the stage is not open to students now).
        `requested_by`: the autograder that sends it for the student `user` (it may then read it)."""
        upload: Upload = check_upload(self.catalog, stage, filename, data, self.settings.upload_limit)
        window = self.settings.schedule.get(upload.stage)
        closed = window.refusal(upload.stage, now()) if window is not None and not user.instructor else None
        if closed:
            raise UploadRefused(closed, 403)
        try:
            submission, reused = self.store.submit(user, upload.stage, upload.filename, upload.backend, upload.source,
                                                   self.settings.per_hour, requested_by)
        except RateLimited as error:
            raise UploadRefused(str(error), 429) from None
        if not reused:
            self.wake()
        return Accepted(submission, reused)

    def open_stages(self, user: User) -> list[str]:
        """The stages `user` may submit to now, in course order (an instructor: all)."""
        moment = now()
        return [stage for stage in self.catalog.ids() if user.instructor or stage not in self.settings.schedule
                or self.settings.schedule[stage].refusal(stage, moment) is None]

    def student_named(self, names: list[str]) -> User | None:
        """The student an autograder names (Gradescope's email or SID of them): the first of
        `names` that is a student's login, or leads to one through the roster (--roster)."""
        for name in names:
            for login in (name.strip(), self.settings.roster_ids.get(alias_key(name))):
                found = self.store.user_by_login(login) if login else None
                if found is not None and found.role == Role.STUDENT:
                    return found
        return None

    def visible(self, user: User, submission_id: int) -> Submission:
        """The submission, where `user` may see it (their own; an instructor: any; an
        autograder's token: only those it sent, or was answered with). Raises NotYours."""
        found = self.store.get(submission_id)
        if found is not None and user.role == Role.GRADER:
            if self.store.may_read(user, submission_id):
                return found
            found = None
        if found is None or (found.user_id != user.id and not user.instructor):
            raise NotYours(f"no submission {submission_id} of yours")
        return found

    def position(self, submission: Submission) -> int | None:
        """Its place in the grading order (1: next), while queued."""
        if submission.state != State.QUEUED:
            return None
        order = self.store.queue_order()
        return order.index(submission.id) + 1 if submission.id in order else None

    def pace(self) -> Pace:
        """How fast gradings have been ending lately (lab.server.pace): read at most once every
        PACE_TTL_S, however many students' polls ask (at a deadline each grading's start wakes
        every queued submission's follower)."""
        with self._pace_lock:
            at, kept = self._pace
            if kept is None or time.monotonic() - at > PACE_TTL_S:
                kept = pace_of(self.store.endings_since(now() - timedelta(seconds=WINDOW_S)))
                self._pace = (time.monotonic(), kept)
            return kept

    def summary(self, submission: Submission, position: int | None = None, pace: Pace | None = None) -> dict[str, Any]:
        """A submission as the API shows it (no source, no report); a queued one with its place,
        `wait_s`: about how long until it has been graded at the recent pace (None: unknown).
        `pace`: self.pace(), where the caller shows many."""
        data = asdict(submission)
        for key in ("submitted_at", "started_at", "finished_at"):
            data[key] = data[key].isoformat() if data[key] is not None else None
        data["state"] = str(submission.state)
        data["mark"] = str(submission.mark) if submission.mark else None
        data["position"] = position
        if position is not None:
            data["wait_s"] = (pace or self.pace()).wait_s(position + 1)  # (+1: its own grading)
        else:
            data["wait_s"] = None
        data["phase"] = self.progress.phase(submission.id) if submission.state == State.GRADING else None
        return data

    def leaderboard(self, user: User, stage: str) -> list[dict[str, Any]]:
        """The stage's fastest correct kernels, one per student, fastest first: a student who did
        not opt in is `anonymous` (to others; `user` sees their own row as theirs). Raises
        UnknownStageError."""
        self.catalog.get(stage)
        rows = []
        for rank, (who, submission) in enumerate(self.store.fastest(stage), 1):
            named = who.leaderboard or user.instructor or who.id == user.id
            rows.append({"rank": rank, "name": (who.name or who.login) if named else "anonymous",
                         "speedup": submission.speedup, "submitted_at": submission.submitted_at.isoformat(),
                         "you": who.id == user.id})
        return rows

    def regrade(self, submission_id: int) -> bool:
        if not self.store.regrade(submission_id):
            return False
        self.wake()
        return True
