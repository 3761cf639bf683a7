"""`lab gradescope STAGE... --out autograder.zip`: the Gradescope autograder for an assignment
of one or more stages (lab/autograder/; docs/gradescope.md says how to set it up)."""

from __future__ import annotations

from pathlib import Path

import typer

from lab.cli.typer_app import INSTRUCTORS, app, console, fail


@app.command(rich_help_panel=INSTRUCTORS)
def gradescope(
    stages: list[str] = typer.Argument(..., help="the assignment's stages, e.g. transpose_naive transpose_coalesced"),
    out: Path = typer.Option(Path("autograder.zip"), "--out", "-o", help="the zip to write"),
    wheel: Path = typer.Option(None, "--wheel", help="the lab as a wheel (default: built from this checkout)"),
    server: str | None = typer.Option(None, "--server", help="the course GPU server (lab serve) that grades each "
                                      "upload's speed, e.g. https://gpu.course.example"),
    server_token: str | None = typer.Option(None, "--server-token", help="the autograder's token for it "
                                            "(lab tokens --grader NAME on the server)"),
    server_wait: float = typer.Option(120.0, "--server-wait", help="seconds an upload waits for the server's "
                                      "grading (all its stages together); after that its speed stays pending"),
) -> None:
    """Build the Gradescope autograder zip for STAGES: correctness there (PoCL), speed on a GPU."""
    from grader.course.sinks import for_terminal
    from lab.autograder.build import BuildError, build_zip, course_server
    from lab.cli.course import load_catalog

    if (server is None) != (server_token is None):
        fail("--server and --server-token go together: the server's address and the autograder's token for it")
    catalog = load_catalog()
    try:
        remote = course_server(server, server_token, server_wait) if server is not None and server_token else None
        built = build_zip(catalog, stages, out, wheel, remote)
    except BuildError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{out}: cannot be written ({error.strerror or error})")
    console.print(f"wrote {for_terminal(str(built.path))} ({built.files} files, {built.size / 1e6:.1f} MB): "
                  f"stages {for_terminal(', '.join(built.stages))}; students upload "
                  f"{for_terminal(' and '.join(f'{s}.cl' for s in built.stages))}")
    specs = [catalog.get(stage) for stage in built.stages]  # Gradescope has no GPU: compiles and correct only
    graded_there = sum(points for spec in specs for check, points in spec.points.items()
                       if check in ("compiles", "correct"))
    later = sorted({check for spec in specs for check in spec.points if check not in ("compiles", "correct")})
    rest = sum(spec.max_score for spec in specs) - graded_there
    if remote is not None:
        console.print(f"speed: each upload is sent to {for_terminal(remote.url)} and waits at most "
                      f"{remote.wait_s:g} s for it; the token is in the zip's lab-server-token (instructors only)")
    console.print(f"the assignment's points on Gradescope: {graded_there}" + (
        f" (compiles and correct; the {rest} points of {' and '.join(later)} are graded on the course GPU"
        + (", by the server where it answers in time (extra points on Gradescope), else" if remote else "")
        + " by lab batch, whose gradebook holds the final grades)" if rest else ""))
    console.print("next: upload it on the assignment's Configure Autograder page (docs/gradescope.md)")
