"""How one `lab serve` runs: its database, its devices, its limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grader.course.checks.source_checks import MAX_BYTES
from lab.server.lane_plan import LanePlan
from lab.server.stage_windows import StageWindow


@dataclass(frozen=True)
class ServerSettings:
    database_url: str  # sqlite:///PATH or postgresql://...
    lanes: tuple[LanePlan, ...] = (LanePlan(None),)  # the grading lanes here (lane_plan.plan_lanes); ()
    # grades nothing here (remote workers only: lab work)
    upload_limit: int = MAX_BYTES  # bytes of one kernel file, as `lab grade` allows
    per_hour: int = 0  # submissions a student may send in an hour (0: no limit; instructors: none)
    schedule: Mapping[str, StageWindow] = field(default_factory=dict)  # stages open by date (--schedule)
    lease_s: float = 120.0  # a remote worker's hold on a submission, renewed while it grades
    # Read the hardware counters also for a grading with others waiting behind it or under way (each reading
    # holds the GPU alone for a while: docs/performance.md); False: such a grading reads none and
    # its report says why (lab serve --busy-counters).
    busy_counters: bool = False
    body_timeout_s: float = 60.0  # seconds a request's body may take to arrive once read (slower: 408)
    secure_cookies: bool = False  # behind TLS: the browser sends the session cookie over HTTPS only
    roster_ids: Mapping[str, str] = field(default_factory=dict)  # a roster id (alias_key of an email, SID,
    # ...) -> that student's login (--roster): how an autograder's token names a student

    @property
    def body_limit(self) -> int:
        """Bytes of one request body: the file and its form's fields and framing."""
        return self.upload_limit + 64 * 1024
