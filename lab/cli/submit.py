"""`lab login`, `lab submit` and `lab history`: a student's side of the course GPU server."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.table import Table

from grader.course.sinks import for_terminal
from grader.outputs import FEEDBACK_SUFFIXES
from lab.cli.typer_app import EXIT_GRADER_ERROR, EXIT_USAGE, STUDENTS, app, console, errors, fail

POLL_S = 1.0  # between looks at a server that answers at once
LONG_POLL_S = 20.0  # the server answers once the submission moves, or after this long
MARKS = {"held": "held for review", "cheated": "not counted: marked as not your own work"}


def _client(url: str | None = None, token: str | None = None):
    from lab.server import ServerExtraMissing, require

    try:
        require()
    except ServerExtraMissing as error:
        fail(str(error))
    from lab.server.client import ClientError, LabClient
    from lab.server.credentials import CredentialsError, load

    try:
        if url is None or token is None:
            saved = load()
            url, token = saved.url, saved.token
        return LabClient(url, token)
    except (CredentialsError, ClientError) as error:
        fail(str(error))


@app.command(rich_help_panel=STUDENTS)
def login(
    url: str = typer.Argument(..., help="the course server's address, e.g. https://gpu.course.example"),
    token: str = typer.Option(..., "--token", help="your token, from your instructor"),
) -> None:
    """Save the course server and your token, after checking them with the server."""
    from lab.server.client import ClientError
    from lab.server.credentials import Credentials, save

    client = _client(url, token.strip())
    try:
        me = client.whoami()
    except ClientError as error:
        fail(str(error))
    finally:
        client.close()
    path = save(Credentials(client.url, token.strip()))
    console.print(f"signed in to {for_terminal(client.url)} as {for_terminal(me['login'])} "
                  f"(saved in {for_terminal(str(path))})")


def _state_line(shown: dict) -> str:
    if shown["state"] == "queued":
        if not shown.get("position"):
            return "queued"
        from lab.server.pace import in_words

        wait = shown.get("wait_s")
        words = in_words(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else ""
        soon = f", graded in {words} at the server's recent pace" if words else ""
        return f"queued: number {shown['position']} in line{soon}"
    if shown["state"] == "grading":
        return f"grading: {shown['phase']}" if shown.get("phase") else "grading"
    return str(shown["state"])


@app.command(rich_help_panel=STUDENTS)
def submit(
    stage: str = typer.Argument(..., help="stage id, e.g. transpose_coalesced"),
    file: Path = typer.Argument(..., help="your kernel: a .cu (CUDA) or .cl (OpenCL) file"),
    wait: float = typer.Option(3600.0, "--wait", help="seconds to wait for the grading (it goes on after; "
                               "lab history shows it)"),
    report_file: Path | None = typer.Option(None, "--report", help="write feedback to FILE (.html or .md), as lab grade does"),
    json_file: Path | None = typer.Option(None, "--json", help="write the result as JSON to FILE, as lab grade does "
                                   "(-: to standard output, the report then goes to standard error)"),
) -> None:
    """Submit FILE for STAGE to the course GPU server; print its report and exit as `lab grade` does."""

    from grader.course.checks.source_checks import SubmissionError, read_submission_bytes
    from grader.terminal import render
    from lab.cli.written import check_outputs, finish
    from lab.server.client import ClientError
    from lab.server.report_json import ReportJsonError, report_from_json

    if report_file is not None and report_file.suffix.lower() not in FEEDBACK_SUFFIXES:
        fail(f"--report {report_file}: the file must end in .html or .md")
    json_to_stdout = json_file is not None and str(json_file) == "-"
    if json_to_stdout:
        json_file = None
    check_outputs((("--json", json_file), ("--report", report_file)))  # before anything is sent
    try:
        data = read_submission_bytes(file)
    except SubmissionError as error:
        fail(str(error))
    client = _client()
    try:
        shown = client.submit(stage, file, data)
        if shown.get("reused"):
            errors.print(f"the same file as your submission {shown['id']}: its result")
        else:
            errors.print(f"submission {shown['id']} stored")
        deadline, last = time.monotonic() + wait, ""
        while shown["state"] in ("queued", "grading"):
            line = _state_line(shown)
            if line != last:
                errors.print(for_terminal(line), highlight=False)
                last = line
            if time.monotonic() > deadline:
                fail(f"submission {shown['id']} is still {shown['state']} after {wait:g} s; "
                     "lab history shows it once graded", EXIT_GRADER_ERROR)
            asked = time.monotonic()
            before = shown
            shown = client.submission(shown["id"], wait_s=min(LONG_POLL_S, max(0.0, deadline - asked)))
            if _state_line(shown) == _state_line(before) and time.monotonic() - asked < POLL_S / 2:
                time.sleep(POLL_S)  # a server that does not wait (one from before long polls)
        if "report" not in shown:  # the upload's answer (a reused submission) carries no report
            shown = client.submission(shown["id"])
    except ClientError as error:
        fail(str(error), EXIT_USAGE if error.status in (401, 403, 404, 413, 422, 429) else EXIT_GRADER_ERROR)
    except KeyboardInterrupt:
        errors.print("stopped following it: the submission stays queued on the server (lab history)")
        raise typer.Exit(130) from None
    finally:
        client.close()
    if shown["state"] == "failed":
        fail(f"submission {shown['id']}: {shown.get('error') or 'the grader could not grade it'}", EXIT_GRADER_ERROR)
    try:
        report = report_from_json(shown["report"])
    except ReportJsonError as error:
        fail(f"submission {shown['id']}: the server's report is {error}", EXIT_GRADER_ERROR)
    render(report, errors if json_to_stdout else console)
    finish(report, report_file, json_file, json_to_stdout)


@app.command(rich_help_panel=STUDENTS)
def history(stage: str = typer.Argument(None, help="only this stage's submissions")) -> None:
    """List your submissions to the course server, newest first, with scores and speedups."""
    from grader.report import Status
    from lab.server.client import ClientError

    client = _client()
    try:
        found = client.history(stage)
    except ClientError as error:
        fail(str(error))
    finally:
        client.close()
    if not found:
        console.print("no submissions" + (f" for {for_terminal(stage)}" if stage else ""))
        return
    table = Table(box=None, header_style="bold")
    columns = ["#", "file", "submitted (UTC)", "result", "score", "speedup"]
    if stage is None:
        columns.insert(1, "stage")
    for column in columns:
        table.add_column(column, justify="right" if column in ("#", "score", "speedup") else "left",
                         no_wrap=column in ("#", "submitted (UTC)", "score", "speedup"), overflow="fold")
    for s in found:
        result = Status(s["status"]).words if s["state"] == "done" else _state_line(s)  # a queued one: its place
        if s.get("mark"):
            result += f" ({MARKS.get(s['mark'], s['mark'])}{': ' + s['mark_note'] if s.get('mark_note') else ''})"
        score = f"{s['score']} / {s['max_score']}" if s.get("score") is not None else ""
        speedup = f"{s['speedup']:.2f}x" if s.get("speedup") else ""
        cells = [str(s["id"]), for_terminal(s["filename"]), s["submitted_at"][:16].replace("T", " "),
                 for_terminal(str(result)), score, speedup]
        if stage is None:
            cells.insert(1, for_terminal(s["stage"]))
        table.add_row(*cells)
    console.print(table)
