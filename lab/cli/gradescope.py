"""`lab gradescope STAGE... --out autograder.zip`: the Gradescope autograder for an assignment
of one or more stages (lab/autograder/; docs/gradescope.md says how to set it up)."""

from __future__ import annotations

from pathlib import Path

import typer

from lab.cli.app import app, console, fail


@app.command()
def gradescope(
    stages: list[str] = typer.Argument(..., help="the assignment's stages, e.g. transpose_naive transpose_coalesced"),
    out: Path = typer.Option(Path("autograder.zip"), "--out", "-o", help="the zip to write"),
    wheel: Path = typer.Option(None, "--wheel", help="the lab as a wheel (default: built from this checkout)"),
) -> None:
    """Build the Gradescope autograder zip for STAGES: correctness there (PoCL), speed on a GPU later."""
    from lab.autograder.build import BuildError, build_zip
    from lab.cli.course import load_catalog
    from lab.sinks import for_terminal

    catalog = load_catalog()
    try:
        built = build_zip(catalog, stages, out, wheel)
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
    console.print(f"the assignment's points on Gradescope: {graded_there}" + (
        f" (compiles and correct; the {rest} points of {' and '.join(later)} are graded on the course GPU by "
        "lab batch, whose gradebook holds the final grades)" if rest else ""))
    console.print("next: upload it on the assignment's Configure Autograder page (docs/gradescope.md)")
