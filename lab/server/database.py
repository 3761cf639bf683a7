"""The store: every user, submission and result, in SQLite (one file) or PostgreSQL (a URL).

Every change is committed before the call returns: a submission `submit` returned is on disk
(SQLite runs with synchronous=FULL), so a kill -9 right after loses nothing.

A claim takes a submission with one conditional UPDATE (`... WHERE id = ? AND state =
'queued'`): of several lanes, workers or `lab serve` processes on one database that reach for
the same submission, exactly one changes the row and the others go on to the next in order.
Every grading is held under a lease: a remote worker renews its own, a server renews its lanes'
(renew_server); one not renewed in time is queued again (expire_leases), so a dead server's or
worker's grading is handed on, and a result sent under an old claim is refused (its attempt
number is no longer the row's).

A submission is stored under a lock on its student (SQLite: the database's write lock, taken by
BEGIN IMMEDIATE; PostgreSQL: the student's row, SELECT ... FOR UPDATE): the look for an
identical earlier submission, the count against the hourly limit and the insert are one step,
so parallel uploads store one of identical bytes and no more than the limit allows.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeGuard, overload

from sqlalchemy import Select, create_engine, delete, event, func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from grader.report import Status
from lab.server import scheduling
from lab.server.serving_process import ServingProcess
from lab.server.states import Mark, Role, State
from lab.server.tables import AutograderRequestRow, SessionRow, SubmissionRow, UserRow
from lab.server.tokens import new_token, token_hash

MIGRATIONS = Path(__file__).parent / "migrations"
SESSION_LIFETIME = timedelta(days=14)  # a browser session ends this long after sign-in
LARGEST_ID = (1 << 63) - 1  # the largest integer SQLite and PostgreSQL (bigint) hold


class StoreError(ValueError):
    """The database cannot be opened or used as asked; the message says why in one line."""


class RateLimited(ValueError):
    """The student sent as many submissions as the limit allows in its window; the message
    says when the next one is accepted."""


@dataclass(frozen=True)
class User:
    id: int
    login: str
    name: str
    role: Role
    leaderboard: bool = False  # opted in to be named on the leaderboard

    @property
    def instructor(self) -> bool:
        return self.role == Role.INSTRUCTOR


@dataclass(frozen=True)
class Submission:
    """A stored submission and, once graded, its result (without the source and the report)."""

    id: int
    user_id: int
    login: str
    stage: str
    filename: str
    backend: str
    digest: str
    size: int
    submitted_at: datetime
    state: State
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    status: str | None
    score: int | None
    max_score: int | None
    speedup: float | None
    error: str | None
    mark: Mark | None = None
    mark_note: str | None = None
    worker: str | None = None  # the remote worker grading it (None: a server's own lanes)
    server: str | None = None  # the lab serve process whose lane grades it (serving_process)


@dataclass(frozen=True)
class GradingRecord:
    """What one grading leaves in the database: the report's summary and renderings."""

    status: Status  # the report's
    score: int | None
    max_score: int
    speedup: float | None
    report_json: str
    feedback_html: str
    correct: bool = False  # its `correct` check passed


@overload
def _utc(moment: datetime) -> datetime: ...
@overload
def _utc(moment: None) -> None: ...
@overload
def _utc(moment: datetime | None) -> datetime | None: ...
def _utc(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)  # SQLite keeps no zone: every moment stored is UTC


def now() -> datetime:
    return datetime.now(UTC)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def open_engine(url: str) -> Engine:
    """An engine for `url` (sqlite:///PATH or postgresql://...), its schema upgraded to the latest."""
    try:
        engine = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {})
    except Exception as error:  # noqa: BLE001 - a malformed URL, a driver not installed
        raise StoreError(f"database {url!r}: {error}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    migrate(engine)
    return engine


def migrate(engine: Engine) -> None:
    """Bring the schema to the latest Alembic revision (creating it in an empty database)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except Exception as error:  # noqa: BLE001 - unreachable server, no permission, a locked file
        raise StoreError(f"database {engine.url.render_as_string(hide_password=True)}: cannot open or "
                         f"upgrade it ({str(error).splitlines()[0]})") from None


def storable_id(submission_id: int) -> bool:
    """Whether a submission could have this id (1 to LARGEST_ID): any other is none, unasked."""
    return 0 < submission_id <= LARGEST_ID


def _user(row: UserRow) -> User:
    return User(row.id, row.login, row.name, Role(row.role), bool(row.leaderboard))


def _submission(row: SubmissionRow, login: str) -> Submission:
    return Submission(row.id, row.user_id, login, row.stage, row.filename, row.backend, row.digest, len(row.source),
                      _utc(row.submitted_at), State(row.state), row.attempts, _utc(row.started_at),
                      _utc(row.finished_at), row.status, row.score, row.max_score, row.speedup, row.error,
                      Mark(row.mark) if row.mark else None, row.mark_note, row.worker, row.server)


class Store:
    """The server's database. Safe to share between threads."""

    def __init__(self, url: str):
        self.engine = open_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._claim = threading.Lock()

    def close(self) -> None:
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # Users and tokens

    def issue_token(self, login: str, name: str = "", role: Role = Role.STUDENT) -> str:
        """A fresh token for `login` (made a user where new); any earlier token stops working, and
        every browser session signed in with it ends. Raises StoreError where `login` is a user of
        another role (a role is never changed)."""
        token = new_token()
        with self._session() as db, db.begin():
            row = db.scalar(select(UserRow).where(UserRow.login == login))
            if row is None:
                row = UserRow(login=login, name=name, role=str(role))
                db.add(row)
            elif row.role != str(role):
                raise StoreError(f"{login} is already a user of the server, as a {row.role}, not a {role}: "
                                 "give another name")
            else:
                row.name = name or row.name
                db.execute(delete(SessionRow).where(SessionRow.user_id == row.id))
            row.token_hash = token_hash(token)
        return token

    def revoke(self, login: str) -> bool:
        """Stop `login`'s token and browser sessions working; False where no such user."""
        with self._session() as db, db.begin():
            row = db.scalar(select(UserRow).where(UserRow.login == login))
            if row is None:
                return False
            row.token_hash = None
            db.execute(delete(SessionRow).where(SessionRow.user_id == row.id))
        return True

    def has_token(self, login: str) -> bool:
        with self._session() as db:
            return db.scalar(select(UserRow.token_hash).where(UserRow.login == login)) is not None

    def user_by_token(self, token: str) -> User | None:
        with self._session() as db:
            row = db.scalar(select(UserRow).where(UserRow.token_hash == token_hash(token)))
            return None if row is None else _user(row)

    def user_by_login(self, login: str) -> User | None:
        with self._session() as db:
            row = db.scalar(select(UserRow).where(UserRow.login == login))
            return None if row is None else _user(row)

    def users(self) -> list[User]:
        with self._session() as db:
            return [_user(row) for row in db.scalars(select(UserRow).order_by(UserRow.login))]

    # Browser sessions

    def open_session(self, user: User, token: str) -> tuple[str, str] | None:
        """A new browser session for `user`, signed in with `token`: (the cookie's value, the
        session's form token); None where `token` is no longer `user`'s (reissued or revoked
        meanwhile). The session lasts while that token is the user's (session_user)."""
        import secrets

        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self._session() as db, db.begin():
            held = db.scalar(select(UserRow.token_hash).where(UserRow.id == user.id))
            if held is None or held != token_hash(token):
                return None
            db.add(SessionRow(id_hash=token_hash(cookie), user_id=user.id, csrf=csrf, created_at=now(),
                              token_hash=held))
        return cookie, csrf

    def session_user(self, cookie: str) -> tuple[User, str] | None:
        """The user and form token of the session whose cookie is `cookie`, or None: no such
        session, one older than SESSION_LIFETIME, or one signed in with a token that is no longer
        its user's (reissued or revoked). Asked on every request a session makes."""
        with self._session() as db:
            row = db.get(SessionRow, token_hash(cookie))
            if row is None or _utc(row.created_at) < now() - SESSION_LIFETIME:
                return None
            user = db.get(UserRow, row.user_id)
            if user is None or user.token_hash is None or row.token_hash != user.token_hash:
                return None
            return _user(user), row.csrf

    def close_session(self, cookie: str) -> None:
        with self._session() as db, db.begin():
            row = db.get(SessionRow, token_hash(cookie))
            if row is not None:
                db.delete(row)

    # Submissions

    def submit(self, user: User, stage: str, filename: str, backend: str, source: bytes,
               per_hour: int = 0, requested_by: User | None = None) -> tuple[Submission, bool]:
        """Store a submission, queued; committed before this returns. Where the same student sent
        the same bytes for the same stage before (and its grading did not fail), that earlier
        submission is returned instead, with True: nothing new is stored or graded.

        `per_hour` (0: no limit): a student (not an instructor) with that many submissions
        stored in the last hour is refused with RateLimited (an identical resubmission is not).
        `requested_by`: the autograder whose token sent it for `user`; the submission returned
        (new or earlier) becomes one that autograder may read (may_read), in the same commit.

        Atomic for the student: parallel calls with the same bytes store one submission, and
        parallel calls over the limit store no more than it allows (the lock: the module's text)."""
        digest = hashlib.sha256(source).hexdigest()
        with self._session() as db, db.begin():
            self._lock_student(db, user)
            earlier = db.scalar(select(SubmissionRow).where(
                SubmissionRow.user_id == user.id, SubmissionRow.stage == stage, SubmissionRow.digest == digest,
                SubmissionRow.state != str(State.FAILED)).order_by(SubmissionRow.id.desc()).limit(1))
            if earlier is not None:
                self._grant(db, earlier.id, requested_by)
                return _submission(earlier, user.login), True
            if per_hour > 0 and not user.instructor:
                self._check_rate(db, user, per_hour)
            row = SubmissionRow(user_id=user.id, stage=stage, filename=filename, backend=backend, source=source,
                                digest=digest, submitted_at=now(), state=str(State.QUEUED), attempts=0)
            db.add(row)
            db.flush()
            self._grant(db, row.id, requested_by)
            return _submission(row, user.login), False

    def _lock_student(self, db: Session, user: User) -> None:
        """Hold, until `db`'s transaction ends, the lock under which `user`'s submissions are
        stored: SQLite's write lock (the transaction begins IMMEDIATE: its first statement), the
        student's row on PostgreSQL."""
        if self.engine.dialect.name == "sqlite":
            db.connection().exec_driver_sql("BEGIN IMMEDIATE")
        else:
            db.execute(select(UserRow.id).where(UserRow.id == user.id).with_for_update())

    @staticmethod
    def _grant(db: Session, submission_id: int, grader: User | None) -> None:
        if grader is not None and db.get(AutograderRequestRow, (submission_id, grader.id)) is None:
            db.add(AutograderRequestRow(submission_id=submission_id, grader_id=grader.id))

    def may_read(self, grader: User, submission_id: int) -> bool:
        """Whether the autograder `grader` sent (or was answered with) this submission."""
        if not storable_id(submission_id):
            return False
        with self._session() as db:
            return db.get(AutograderRequestRow, (submission_id, grader.id)) is not None

    @staticmethod
    def _check_rate(db: Session, user: User, per_hour: int) -> None:
        since = now() - timedelta(hours=1)
        recent = [_utc(at) for at in db.scalars(
            select(SubmissionRow.submitted_at).where(SubmissionRow.user_id == user.id,
                                                     SubmissionRow.submitted_at > since)
            .order_by(SubmissionRow.submitted_at.desc()).limit(per_hour))]
        if len(recent) >= per_hour:
            wait = max(0, int((recent[-1] + timedelta(hours=1) - now()).total_seconds()) + 1)
            noun = "submission" if per_hour == 1 else "submissions"
            raise RateLimited(f"at most {per_hour} {noun} an hour: the next one is accepted in "
                              f"{wait // 60} min {wait % 60} s")

    def requeue_interrupted(self, this: ServingProcess) -> int:
        """Put back in the queue what a server's own lanes were grading when it stopped, where
        `this` process (a server starting) knows that server is gone: one of this host whose pid
        no longer runs, or a claim of a server too old to record its process. How many. Another
        host's server's claims end with their lease (expire_leases); what a remote worker holds
        stays its own until its lease ends."""
        with self._session() as db:
            held = list(db.execute(select(SubmissionRow.id, SubmissionRow.server).where(
                SubmissionRow.state == str(State.GRADING), SubmissionRow.worker.is_(None))))
        gone = []
        for submission_id, server in held:
            holder = ServingProcess.parse(server) if server else None
            if server is None or (holder is not None and this.knows_gone(holder)):
                gone.append((submission_id, server))
        again = 0
        for submission_id, server in gone:
            with self._session() as db, db.begin():
                done = db.connection().execute(
                    update(SubmissionRow).where(SubmissionRow.id == submission_id,
                                                SubmissionRow.state == str(State.GRADING),
                                                SubmissionRow.server.is_(None) if server is None
                                                else SubmissionRow.server == server)
                    .values(state=str(State.QUEUED), server=None, lease_until=None))
                again += done.rowcount or 0
        return again

    def release(self, this: ServingProcess) -> int:
        """Queue again every grading `this` server's lanes hold (it is stopping); how many. A
        lane that finishes one after this stores nothing (its claim is no longer the row's)."""
        with self._session() as db, db.begin():
            done = db.connection().execute(
                update(SubmissionRow).where(SubmissionRow.state == str(State.GRADING),
                                            SubmissionRow.server == str(this))
                .values(state=str(State.QUEUED), server=None, lease_until=None))
            return done.rowcount or 0

    def renew_server(self, this: ServingProcess, lease_s: float) -> int:
        """Extend the leases of every grading `this` server's lanes hold; how many."""
        with self._session() as db, db.begin():
            done = db.connection().execute(
                update(SubmissionRow).where(SubmissionRow.state == str(State.GRADING),
                                            SubmissionRow.server == str(this))
                .values(lease_until=now() + timedelta(seconds=lease_s)))
            return done.rowcount or 0

    def expire_leases(self) -> list[int]:
        """Queue again what a remote worker or another server stopped renewing (it died, or lost
        the network); the ids. Each row changes only while still lapsed, so two servers' sweeps
        never put back a grading that a third claimed meanwhile."""
        with self._session() as db:
            lapsed = list(db.scalars(select(SubmissionRow.id).where(
                SubmissionRow.state == str(State.GRADING), SubmissionRow.lease_until.is_not(None),
                SubmissionRow.lease_until < now())))
        again = []
        for submission_id in lapsed:
            with self._session() as db, db.begin():
                done = db.connection().execute(
                    update(SubmissionRow).where(SubmissionRow.id == submission_id,
                                                SubmissionRow.state == str(State.GRADING),
                                                SubmissionRow.lease_until < now())
                    .values(state=str(State.QUEUED), worker=None, server=None, lease_until=None))
                if done.rowcount:
                    again.append(submission_id)
        return again

    def renew(self, submission_id: int, attempt: int, worker: str, lease_s: float) -> bool:
        """Extend a remote worker's hold on a submission it grades; False where it no longer holds it."""
        if not storable_id(submission_id):
            return False
        with self._session() as db, db.begin():
            row = db.get(SubmissionRow, submission_id)
            if not self._held(row, attempt, worker):
                return False
            row.lease_until = now() + timedelta(seconds=lease_s)
            return True

    @staticmethod
    def _held(row: SubmissionRow | None, attempt: int | None, worker: str | None) -> TypeGuard[SubmissionRow]:
        """Whether the claim (attempt, worker) is still the one being graded."""
        return (row is not None and row.state == str(State.GRADING) and (attempt is None or row.attempts == attempt)
                and row.worker == worker)

    @staticmethod
    def _queued(query: Select, backends: frozenset[str] | None) -> Select:
        """`query` of the queued submissions of `backends` (None: any)."""
        query = query.where(SubmissionRow.state == str(State.QUEUED))
        return query if backends is None else query.where(SubmissionRow.backend.in_(sorted(backends)))

    def _order(self, db: Session, backends: frozenset[str] | None = None) -> list[int]:
        queued = self._queued(select(SubmissionRow.id, SubmissionRow.user_id), backends)
        waiting = [scheduling.Waiting(sid, uid) for sid, uid in db.execute(queued)]
        served = {uid: _utc(at) for uid, at in db.execute(
            select(SubmissionRow.user_id, func.max(SubmissionRow.started_at)).group_by(SubmissionRow.user_id))
            if at is not None}
        return scheduling.grading_order(waiting, served)

    def endings_since(self, moment: datetime) -> list[datetime]:
        """When each grading that ended (graded or failed) at `moment` or later ended."""
        with self._session() as db:
            ended = select(SubmissionRow.finished_at).where(SubmissionRow.finished_at >= moment,
                                                            SubmissionRow.state.in_((str(State.DONE),
                                                                                     str(State.FAILED))))
            return [_utc(at) for (at,) in db.execute(ended) if at is not None]

    def waiting(self, backends: frozenset[str] | None = None) -> int:
        """How many submissions of `backends` (None: any) are queued, not yet claimed."""
        with self._session() as db:
            return int(db.execute(self._queued(select(func.count()).select_from(SubmissionRow), backends)).scalar_one())

    def grading_now(self) -> int:
        """How many submissions (any kernel language) are being graded now: claimed, not yet done."""
        with self._session() as db:
            grading = select(func.count()).select_from(SubmissionRow).where(SubmissionRow.state == str(State.GRADING))
            return int(db.execute(grading).scalar_one())

    def queue_order(self) -> list[int]:
        """The queued submissions' ids, in the order they will be graded."""
        with self._session() as db:
            return self._order(db)

    def claim_next(self, worker: str | None = None, lease_s: float | None = None, server: ServingProcess | None = None,
                   backends: frozenset[str] | None = None) -> tuple[Submission, bytes] | None:
        """Take the next submission in round-robin order: marked grading (committed), with its bytes.
        `worker`: a remote worker's login; else `server`: the lab serve process whose lane takes
        it (None: a store used alone, as the tests do). The hold lasts `lease_s` unless renewed
        (None or 0: no lease). `backends`: only submissions of these (None: any).

        Safe across processes: the row is taken only if still queued (one conditional UPDATE);
        one another process took first is passed over for the next in order."""
        with self._claim:
            with self._session() as db:
                order = self._order(db, backends)
            for submission_id in order:
                started = now()
                with self._session() as db, db.begin():
                    taken = db.connection().execute(
                        update(SubmissionRow).where(SubmissionRow.id == submission_id,
                                                    SubmissionRow.state == str(State.QUEUED))
                        .values(state=str(State.GRADING), attempts=SubmissionRow.attempts + 1, started_at=started,
                                worker=worker, server=None if worker is not None or server is None else str(server),
                                lease_until=started + timedelta(seconds=lease_s) if lease_s else None))
                    if not taken.rowcount:
                        continue  # another lane, worker or server took it first
                    row, login = db.execute(select(SubmissionRow, UserRow.login)
                                            .join(UserRow, UserRow.id == SubmissionRow.user_id)
                                            .where(SubmissionRow.id == submission_id)).one()
                    return _submission(row, login), bytes(row.source)
            return None

    def finish(self, submission_id: int, outcome: GradingRecord, attempt: int | None = None,
               worker: str | None = None) -> bool:
        """Store a grading's result; False (nothing stored) where the submission is not being
        graded by this claim: `attempt` (its gradings started when claimed) and `worker`."""
        if not storable_id(submission_id):
            return False
        with self._session() as db, db.begin():
            row = db.get(SubmissionRow, submission_id)
            if not self._held(row, attempt, worker):
                return False
            row.state, row.finished_at, row.error = str(State.DONE), now(), None
            row.lease_until = None
            row.status, row.score, row.max_score, row.speedup = (str(outcome.status), outcome.score, outcome.max_score,
                                                                 outcome.speedup)
            row.report_json, row.feedback_html = outcome.report_json, outcome.feedback_html
            row.correct = outcome.correct
            return True

    def fail(self, submission_id: int, reason: str, attempt: int | None = None, worker: str | None = None) -> bool:
        """The grader could not grade it: kept, with the reason, out of the queue (as finish, for
        the claim)."""
        if not storable_id(submission_id):
            return False
        with self._session() as db, db.begin():
            row = db.get(SubmissionRow, submission_id)
            if not self._held(row, attempt, worker):
                return False
            row.state, row.finished_at, row.error, row.lease_until = str(State.FAILED), now(), reason, None
            return True

    def regrade(self, submission_id: int) -> bool:
        """Queue a finished submission again (its result is dropped); False where none or unfinished."""
        if not storable_id(submission_id):
            return False
        with self._session() as db, db.begin():
            row = db.get(SubmissionRow, submission_id)
            if row is None or not State(row.state).finished:
                return False
            row.state, row.worker, row.server, row.lease_until = str(State.QUEUED), None, None, None
            row.status = row.score = row.max_score = row.speedup = row.correct = None
            row.report_json = row.feedback_html = row.error = row.finished_at = None
            return True

    def set_leaderboard(self, user: User, shown: bool) -> None:
        """Opt `user` in to (or out of) being named on the leaderboard. Raises StoreError where
        `user` is not in the store."""
        with self._session() as db, db.begin():
            row = db.get(UserRow, user.id)
            if row is None:
                raise StoreError(f"{user.login} is no longer a user of the server")
            row.leaderboard = shown

    def fastest(self, stage: str) -> list[tuple[User, Submission]]:
        """Each student's fastest correct, timed submission for `stage` (the highest speedup; the
        earlier of equals), fastest first. Submissions an instructor marked are left out."""
        query = (select(SubmissionRow, UserRow).join(UserRow, UserRow.id == SubmissionRow.user_id)
                 .where(SubmissionRow.stage == stage, SubmissionRow.state == str(State.DONE),
                        SubmissionRow.correct.is_(True), SubmissionRow.speedup.is_not(None),
                        SubmissionRow.mark.is_(None), UserRow.role == str(Role.STUDENT)))
        best: dict[int, tuple[User, Submission]] = {}
        with self._session() as db:
            for row, user in db.execute(query.order_by(SubmissionRow.speedup.desc(), SubmissionRow.id)):
                best.setdefault(user.id, (_user(user), _submission(row, user.login)))
        return list(best.values())

    def set_mark(self, submission_id: int, mark: Mark | None, note: str = "") -> bool:
        """Mark a submission (held for review, cheated), or lift its mark (None); False where none."""
        if not storable_id(submission_id):
            return False
        with self._session() as db, db.begin():
            row = db.get(SubmissionRow, submission_id)
            if row is None:
                return False
            row.mark = str(mark) if mark is not None else None
            row.mark_note = note if mark is not None and note else None
            return True

    def get(self, submission_id: int) -> Submission | None:
        if not storable_id(submission_id):
            return None
        with self._session() as db:
            found = db.execute(select(SubmissionRow, UserRow.login).join(UserRow, UserRow.id == SubmissionRow.user_id)
                               .where(SubmissionRow.id == submission_id)).first()
            return None if found is None else _submission(*found)

    def report_json(self, submission_id: int) -> str | None:
        if not storable_id(submission_id):
            return None
        with self._session() as db:
            return db.scalar(select(SubmissionRow.report_json).where(SubmissionRow.id == submission_id))

    def feedback_html(self, submission_id: int) -> str | None:
        if not storable_id(submission_id):
            return None
        with self._session() as db:
            return db.scalar(select(SubmissionRow.feedback_html).where(SubmissionRow.id == submission_id))

    def submissions(self, user: User | None = None, stage: str | None = None) -> list[Submission]:
        """Submissions, newest first: `user`'s only where given, one stage's where given."""
        query = select(SubmissionRow, UserRow.login).join(UserRow, UserRow.id == SubmissionRow.user_id)
        if user is not None:
            query = query.where(SubmissionRow.user_id == user.id)
        if stage is not None:
            query = query.where(SubmissionRow.stage == stage)
        with self._session() as db:
            return [_submission(row, login) for row, login in db.execute(query.order_by(SubmissionRow.id.desc()))]
