"""The server's tables (SQLAlchemy 2 declarative): users, submissions, browser sessions, and
which submissions each autograder asked for.

The schema is made and upgraded by the Alembic revisions in lab/server/migrations; these
classes are what the code reads and writes, and the revisions must agree with them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class UserRow(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    login: Mapped[str] = mapped_column(String(200), unique=True)  # the roster's id for the student
    name: Mapped[str] = mapped_column(String(400), default="")
    role: Mapped[str] = mapped_column(String(20))  # states.Role
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)  # None: revoked
    leaderboard: Mapped[bool] = mapped_column(Boolean, default=False)  # opted in: the leaderboard shows the name


class SubmissionRow(Base):
    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    stage: Mapped[str] = mapped_column(String(200))
    filename: Mapped[str] = mapped_column(String(300))
    backend: Mapped[str] = mapped_column(String(20))
    source: Mapped[bytes] = mapped_column(LargeBinary)
    digest: Mapped[str] = mapped_column(String(64))  # sha256 of `source`
    submitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    state: Mapped[str] = mapped_column(String(20), index=True)  # states.State
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # gradings started
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    status: Mapped[str | None] = mapped_column(String(20), nullable=True)  # the report's Status
    score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    correct: Mapped[bool | None] = mapped_column(Boolean, nullable=True)  # its `correct` check passed
    report_json: Mapped[str | None] = mapped_column(Text, nullable=True)  # grader.feedback.render_json
    feedback_html: Mapped[str | None] = mapped_column(Text, nullable=True)  # grader.feedback.render_html
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # State.FAILED: why
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)  # the remote worker grading it
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # its hold ends
    server: Mapped[str | None] = mapped_column(String(300), nullable=True)  # the lab serve whose lane grades it
    # (serving_process.ServingProcess: HOST/PID/NONCE)
    mark: Mapped[str | None] = mapped_column(String(20), nullable=True)  # states.Mark, or None
    mark_note: Mapped[str | None] = mapped_column(Text, nullable=True)  # the instructor's words, shown

    __table_args__ = (Index("ix_submissions_same", "user_id", "stage", "digest"),)


class SessionRow(Base):
    __tablename__ = "web_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the cookie's value
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    csrf: Mapped[str] = mapped_column(String(100))  # the session's form token
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # the hash of the token it signed in with: the session ends when that token is no longer the
    # user's (reissued, revoked); None (a session older than this column): ended
    token_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AutograderRequestRow(Base):
    """A submission an autograder's token sent for a student (or was answered with, where the
    student had sent the same bytes): the only submissions that token may read."""

    __tablename__ = "autograder_requests"

    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
