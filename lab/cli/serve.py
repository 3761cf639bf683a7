"""`lab serve` (the course GPU server) and `lab tokens` (its users' access tokens)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import typer

from grader.course.sinks import for_csv_cell, for_terminal
from lab.cli.typer_app import COURSE_SERVER, EXIT_USAGE, INSTRUCTORS, app, console, errors, fail
from lab.engine import PER_GPU

DEFAULT_DATABASE = "lab-server.db"


def _require_extra() -> None:
    from lab.server import ServerExtraMissing, require

    try:
        require()
    except ServerExtraMissing as error:
        fail(str(error))


def database_url(given: str) -> str:
    """A database URL (sqlite:///..., postgresql://...) as it is; anything else is a SQLite file's path."""
    from lab.server.database import sqlite_url

    return given if "://" in given else sqlite_url(Path(given))


def _open_store(database: str):
    from lab.server.database import Store, StoreError

    try:
        return Store(database_url(database))
    except StoreError as error:
        fail(str(error))


def _plan_lanes(device: list[str] | None, gpus: str | None, cpu_lanes: int, per_gpu: int = PER_GPU):
    """The grading lanes of `lab serve` or `lab work` (lab.server.lane_plan): the named devices,
    else those this machine has."""
    from lab.server.lane_plan import PoolError, plan_lanes

    discovery = None
    if not device:
        from grader.backends.discovery import discover

        discovery = discover()
    try:
        return plan_lanes(discovery, device or (), gpus, cpu_lanes, per_gpu)
    except PoolError as error:
        fail(str(error))


@app.command(rich_help_panel=COURSE_SERVER)
def serve(
    database: str = typer.Option(DEFAULT_DATABASE, "--database", help="a SQLite file, or a database URL "
                                 "(postgresql://USER@HOST/NAME)"),
    host: str = typer.Option("127.0.0.1", "--host", help="the address to listen on (behind a TLS proxy: "
                             "keep 127.0.0.1; docs/server.md)"),
    port: int = typer.Option(8000, "--port", help="the port to listen on"),
    device: list[str] | None = typer.Option(None, "--device", "-d", help="a device to grade on (index or part of its "
                                     "name), one grading lane each, any kernel language; repeat for several "
                                     "(default: --per-gpu lanes per GPU present, as lab batch plans them)"),
    gpus: str | None = typer.Option(None, "--gpus", help="GPUs to grade on: a count (2) or indices (0,2) (default: all)"),
    per_gpu: int = typer.Option(PER_GPU, "--per-gpu", min=1, help="lanes on each GPU per kernel language (their "
                                "timed phases take turns)"),
    cpu_lanes: int = typer.Option(1, "--cpu-lanes", help="lanes on a CPU device (PoCL), where there is no GPU"),
    busy_counters: bool = typer.Option(False, "--busy-counters/--no-busy-counters", help="read the hardware "
                                       "counters also for a grading with others waiting behind it or under way (each "
                                       "reading holds a GPU alone a while); by default such a grading reads none and its "
                                       "report says why, so that a busy queue drains as fast as lab batch"),
    per_hour: int = typer.Option(0, "--per-hour", help="submissions a student may send in an hour (0: no limit; "
                                 "an identical resubmission does not count)"),
    schedule: Path | None = typer.Option(None, "--schedule", help="a TOML file of when each stage takes students' "
                                  "submissions (docs/server.md)"),
    local: bool = typer.Option(True, "--local/--no-local", help="grade on this machine; --no-local: only "
                               "remote workers (lab work) grade"),
    lease: float = typer.Option(120.0, "--lease", help="seconds a remote worker holds a submission without "
                                "renewing it; after that it is queued again"),
    body_timeout: float = typer.Option(60.0, "--body-timeout", help="seconds a request's body may take to arrive; "
                                       "a slower one is cut off (408)"),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", help="browsers send the session cookie over "
                                        "HTTPS only (set it behind a TLS proxy)"),
    roster: Path | None = typer.Option(None, "--roster", help="the roster the tokens came from: an autograder "
                                       "(lab gradescope --server) names a student by its email or SID in it"),
) -> None:
    """Run the course GPU server: it stores, queues and grades students' submissions (docs/server.md)."""
    _require_extra()
    if not 0 < port < 65536:
        fail(f"--port {port}: a port is 1 to 65535")
    if per_hour < 0:
        fail(f"--per-hour {per_hour}: give 0 (no limit) or more")
    import logging

    import uvicorn

    from lab.cli.course import load_catalog
    from lab.server.database import StoreError
    from lab.server.service import create_app
    from lab.server.settings import ServerSettings
    from lab.server.stage_windows import ScheduleError, load_schedule

    catalog = load_catalog()
    try:
        windows = load_schedule(schedule, catalog.ids()) if schedule is not None else {}
    except ScheduleError as error:
        fail(str(error))
    if lease <= 0:
        fail(f"--lease {lease:g}: give a positive number of seconds")
    if not 0 < body_timeout < float("inf"):
        fail(f"--body-timeout {body_timeout:g}: give a positive number of seconds")
    roster_ids: dict[str, str] = {}
    if roster is not None:
        from lab.batch.roster import RosterError, load_roster
        from lab.server.roster_logins import roster_aliases

        try:
            roster_ids = roster_aliases(load_roster(roster).entries)
        except RosterError as error:
            fail(str(error))
    lanes = _plan_lanes(device, gpus, cpu_lanes, per_gpu) if local else ()
    settings = ServerSettings(database_url(database), lanes, per_hour=per_hour, schedule=windows, lease_s=lease,
                              body_timeout_s=body_timeout, secure_cookies=secure_cookies, roster_ids=roster_ids,
                              busy_counters=busy_counters)
    try:
        application = create_app(settings, catalog)
    except StoreError as error:
        fail(str(error))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    where = application.state.server.store.engine.url.render_as_string(hide_password=True)
    named = ", ".join(plan.label for plan in settings.lanes)
    grading = (f"grading here, {len(settings.lanes)} lane(s): {named}" if settings.lanes
               else "grading only on remote workers (lab work)")
    counters = "always" if busy_counters else "when no other grading waits or runs (--busy-counters: always)"
    console.print(f"{grading}; hardware counters read {counters}; database {for_terminal(where)}; "
                  f"http://{for_terminal(host)}:{port}")
    uvicorn.run(application, host=host, port=port, log_level="info", access_log=False)


@app.command(rich_help_panel=INSTRUCTORS)
def tokens(
    roster: Path = typer.Argument(None, help="the class roster (a lab roster CSV or a Canvas gradebook export): "
                                  "every student in it without a token gets one"),
    database: str = typer.Option(DEFAULT_DATABASE, "--database", help="the server's SQLite file or database URL"),
    out: Path | None = typer.Option(None, "--out", help="write the new tokens to this CSV file (login,name,token), "
                             "readable by you alone; default: standard output"),
    reissue: bool = typer.Option(False, "--reissue", help="give every roster student a new token (old ones stop)"),
    instructor: str | None = typer.Option(None, "--instructor", help="issue an instructor token for this login"),
    worker: str | None = typer.Option(None, "--worker", help="issue a grading worker's token (lab work) for this name"),
    grader: str | None = typer.Option(None, "--grader", help="issue an autograder's token (lab gradescope --server) "
                                      "for this name: it submits for any student and reads those results"),
    revoke: str | None = typer.Option(None, "--revoke", help="revoke this login's token and sessions"),
) -> None:
    """Issue the course server's tokens from a roster, or an instructor's (shown once); or revoke one."""
    _require_extra()
    if roster is None and instructor is None and worker is None and grader is None and revoke is None:
        fail("give a ROSTER, --instructor LOGIN, --worker NAME, --grader NAME or --revoke LOGIN")
    from lab.server.database import StoreError

    store = _open_store(database)
    try:
        if revoke is not None:
            if not store.revoke(revoke):
                fail(f"--revoke {revoke}: no such user")
            errors.print(f"revoked: {for_terminal(revoke)}")
        issued: list[tuple[str, str, str]] = []
        if instructor is not None:
            if not instructor.strip():
                fail("--instructor: give the instructor's login")
            from lab.server.states import Role

            issued.append((instructor, "", store.issue_token(instructor.strip(), role=Role.INSTRUCTOR)))
        if worker is not None:
            if not worker.strip():
                fail("--worker: give the worker's name (e.g. its host)")
            from lab.server.states import Role

            issued.append((worker, "", store.issue_token(worker.strip(), role=Role.WORKER)))
        if grader is not None:
            if not grader.strip():
                fail("--grader: give the autograder's name (e.g. gradescope)")
            from lab.server.states import Role

            issued.append((grader, "", store.issue_token(grader.strip(), role=Role.GRADER)))
        if roster is not None:
            from lab.batch.roster import RosterError, load_roster
            from lab.server.roster_logins import roster_login

            try:
                rows = load_roster(roster).entries
            except RosterError as error:
                fail(str(error))
            for entry in rows:
                login = roster_login(entry)
                if not login:
                    errors.print(f"roster line {entry.line}: no folder or id column filled: no token")
                    continue
                if reissue or not store.has_token(login):
                    issued.append((login, entry.name, store.issue_token(login, entry.name)))
        _write_tokens(issued, out)
    except StoreError as error:  # a login of another role: what was issued before it is written
        if issued:
            _write_tokens(issued, out)
        fail(str(error))
    finally:
        store.close()


def _write_tokens(issued: list[tuple[str, str, str]], out: Path | None) -> None:
    if not issued:
        errors.print("no new tokens (every roster student has one; --reissue replaces them)")
        return
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(("login", "name", "token"))
    for login, name, token in issued:
        writer.writerow((for_csv_cell(login), for_csv_cell(name), token))
    if out is None:
        typer.echo(text.getvalue(), nl=False)
        return
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text.getvalue())
    except OSError as error:
        fail(f"--out {out}: cannot be written ({error.strerror or error}); the tokens issued are lost: "
             "run again with --reissue", EXIT_USAGE)
    errors.print(f"{len(issued)} token(s) written to {for_terminal(str(out))}")


@app.command("export-grades", rich_help_panel=INSTRUCTORS)
def export_grades(
    database: str = typer.Option(DEFAULT_DATABASE, "--database", help="the server's SQLite file or database URL"),
    deadline: str | None = typer.Option(None, "--deadline", help="only submissions stored by then count, e.g. "
                                 "2026-12-01T23:59:00+01:00 (default: all)"),
    schedule: Path | None = typer.Option(None, "--schedule", help="lab serve's schedule: each stage it closes counts "
                                  "submissions stored by its close (--deadline: the other stages)"),
    pick: list[str] | None = typer.Option(None, "--pick", help="best (the highest score, default) or last (the latest), "
                                   "for every stage; STAGE=best|last for one (repeatable)"),
    out: Path = typer.Option(Path("gradebook.csv"), "--out", help="the gradebook file to write"),
    gradebook: list[str] | None = typer.Option(None, "--gradebook", help="also the LMS's import files beside it: canvas, "
                                        "moodle (moodle:idnumber, moodle:username), as lab batch writes them"),
    roster: Path | None = typer.Option(None, "--roster", help="the roster the tokens came from: how the LMS knows each "
                                "student"),
    canvas_assignment: list[str] | None = typer.Option(None, "--canvas-assignment", help="STAGE=ID: a stage's Canvas "
                                                "assignment (repeatable)"),
) -> None:
    """Write the course server's gradebook.csv (as lab batch writes it): one submission per student and stage."""
    _require_extra()
    from grader.feedback import write_atomic
    from lab.cli.course import load_catalog
    from lab.server.gradebook_export import (
        ExportPlan,
        PlanError,
        export_gradebook,
        parse_deadline,
        parse_picks,
    )

    catalog = load_catalog()
    from lab.server.stage_windows import ScheduleError, load_schedule

    try:
        moment = parse_deadline(deadline) if deadline is not None else None
        default, by_stage = parse_picks(pick or [], catalog.ids())
        windows = load_schedule(schedule, catalog.ids()) if schedule is not None else {}
    except (PlanError, ScheduleError) as error:
        fail(str(error))
    closes = {stage: window.closes for stage, window in windows.items() if window.closes is not None}
    store = _open_store(database)
    try:
        export = export_gradebook(store, catalog, ExportPlan(moment, default, by_stage, closes))
    finally:
        store.close()
    from lab.server.gradebook_export import lms_gradebooks

    try:
        files, notes = lms_gradebooks(export, catalog, roster, gradebook or [], canvas_assignment or [])
    except PlanError as error:
        fail(str(error))
    written = {out: export.csv, **{out.parent / name: text for name, text in files.items()}}
    for path, text in written.items():
        try:
            write_atomic(path, text)
        except OSError as error:
            fail(f"{path}: cannot be written ({error.strerror or error})")
    console.print(f"{for_terminal(str(out))}: {len(export.chosen)} graded submission(s) counted")
    for path in list(written)[1:]:
        console.print(f"{for_terminal(str(path))}: written")
    for note in notes:
        errors.print(f"warning: {for_terminal(note)}")
    if export.unfinished:
        errors.print(f"warning: {len(export.unfinished)} submission(s) stored by the deadline are not graded yet "
                     f"(not counted): {', '.join(str(s.id) for s in export.unfinished)}; export again once "
                     "the queue is empty")
    if export.failed:
        errors.print(f"warning: the grader failed on {len(export.failed)} submission(s) (not counted): "
                     f"{', '.join(str(s.id) for s in export.failed)}; regrade them, then export again")


@app.command(rich_help_panel=COURSE_SERVER)
def work(
    url: str = typer.Argument(..., help="the course server's address"),
    token: str = typer.Option(..., "--token", help="a worker token (lab tokens --worker NAME on the server)"),
    device: list[str] | None = typer.Option(None, "--device", "-d", help="a device to grade on (index or part of its "
                                     "name), one lane each, any kernel language; repeat for several (default: "
                                     "--per-gpu lanes per GPU present, as lab batch plans them)"),
    gpus: str | None = typer.Option(None, "--gpus", help="GPUs to grade on: a count (2) or indices (0,2) (default: all)"),
    per_gpu: int = typer.Option(PER_GPU, "--per-gpu", min=1, help="lanes on each GPU per kernel language (their "
                                "timed phases take turns)"),
    cpu_lanes: int = typer.Option(1, "--cpu-lanes", help="lanes on a CPU device (PoCL), where there is no GPU"),
    once: bool = typer.Option(False, "--once", help="each lane grades one submission (or none, where the queue is "
                              "empty), then stops"),
) -> None:
    """Grade the course server's submissions on this machine's GPUs, taking them over HTTP."""
    _require_extra()
    import logging

    from lab.cli.course import load_catalog
    from lab.server.client import ClientError
    from lab.server.remote_worker import RemoteWorker

    catalog = load_catalog()
    plans = _plan_lanes(device, gpus, cpu_lanes, per_gpu)
    worker = RemoteWorker(url, token.strip(), catalog, plans, once=once)
    try:
        name = worker.check()
    except ClientError as error:
        worker.close()
        fail(str(error))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    console.print(f"grading for {for_terminal(worker.url)} as {for_terminal(name)}, "
                  f"{len(plans)} lane(s): {', '.join(for_terminal(plan.label) for plan in plans)}")
    try:
        worker.engine.start()
        worker.engine.join()
    finally:
        worker.engine.stop()
        worker.close()
