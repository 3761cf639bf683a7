"""`lab release`: the instructor writes the students' copy of the course (lab.release)."""

from __future__ import annotations

from pathlib import Path

import typer

from grader.course.catalog import Catalog
from grader.course.release_config import CONFIG_NAME, ReleaseConfigError, load_release_config
from grader.course.sinks import for_terminal
from lab.cli.course import load_catalog
from lab.cli.typer_app import EXIT_GRADER_ERROR, INSTRUCTORS, app, console, fail


@app.command("release", rich_help_panel=INSTRUCTORS)
def release(
    out: Path = typer.Option(Path("release-out"), "--out", "-o", help="the folder the copy and its zip go into"),
    config: Path = typer.Option(None, "--config", help=f"the course's release file (default: {CONFIG_NAME} "
                                "at the course checkout's root)"),
    name: str = typer.Option("course", "--name", help="the copy's folder name (and NAME.zip)"),
    replace: bool = typer.Option(False, "--replace", help="replace a copy of that name already in --out"),
    wheel: bool = typer.Option(False, "--wheel", help="also build the copy as a wheel in --out (with pip)"),
) -> None:
    """Instructor: write the students' copy of the course, without the unreleased solutions.

    From course.toml: the open stages, the released solutions, and in place of every other
    reference its PTX (a GPU times against it) and digest (a copy of it is refused); as a
    folder, a zip and, with --wheel, a wheel. docs/release.md says more."""
    from lab.release import ReleaseError, make_release

    catalog: Catalog = load_catalog()
    if catalog.release is not None:
        fail(f"{catalog.root} is itself a students' copy: run lab release from the instructor's checkout")
    path = config if config is not None else catalog.root / CONFIG_NAME
    try:
        settings = load_release_config(path, catalog)
    except ReleaseConfigError as error:
        fail(str(error))
    if not name or "/" in name or name.startswith("."):
        fail(f"--name {name!r} is not a plain folder name")
    for existing in (out / name, out / f"{name}.zip"):
        if existing.exists() and not replace:
            fail(f"{existing} exists: remove it, or pass --replace")
    try:
        made = make_release(catalog, settings, out, name=name, replace=replace, wheel=wheel,
                            progress=lambda line: console.print(f"  {for_terminal(line)}", style="dim"))
    except ReleaseError as error:
        fail(str(error), EXIT_GRADER_ERROR)
    except OSError as error:
        fail(f"cannot write the copy under {out}: {error}", EXIT_GRADER_ERROR)
    manifest = made.manifest
    console.print(f"wrote {for_terminal(str(made.folder))}/ ({made.files} files) and {for_terminal(str(made.zip))}"
                  + (f" and {for_terminal(str(made.wheel))}" if made.wheel else ""))
    console.print(f"open stages: {', '.join(manifest.open)}")
    console.print(f"solutions released as source: {', '.join(manifest.solutions) or 'none'}")
    held = sorted(manifest.digests)
    console.print(f"references held back (PTX and digest only): {', '.join(held) or 'none'}")
    console.print(f"trusted kernels compiled: {len(manifest.binaries)} PTX files")
    for note in made.notes:
        console.print(f"[yellow]note:[/yellow] {for_terminal(note)}")
