"""`lab list`, `lab show STAGE`, `lab init STAGE`: the course as students see it."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from rich.table import Table

from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog, UnknownStageError, default_catalog
from grader.course.sinks import for_terminal
from grader.course.spec import Spec, SpecError
from lab.cli.backend_option import backend_choice
from lab.cli.typer_app import STUDENTS, app, console, fail


def load_catalog() -> Catalog:
    catalog = default_catalog()
    if not catalog.assignments.is_dir():
        fail(f"no assignments/ folder under {catalog.root} (set LAB_COURSE_ROOT to the course folder)")
    try:
        catalog.stages  # noqa: B018 - load now, so a broken spec is reported here
    except SpecError as error:
        fail(f"a stage spec is broken: {error}", 3)
    try:
        catalog.release  # noqa: B018 - a students' copy's manifest (grader.course.release_manifest), read now
    except ValueError as error:
        fail(f"this copy of the course is broken: {error}", 3)
    return catalog


def load_stage(catalog: Catalog, stage: str) -> Spec:
    try:
        return catalog.get(stage)
    except UnknownStageError as error:
        fail(str(error))


TITLE_AT_LEAST = 12  # characters of a stage's title `lab list` shows, however narrow the terminal


@app.command("list", rich_help_panel=STUDENTS)
def list_stages(
    long: bool = typer.Option(False, "--long", "-l", help="whole titles, wrapped, and each stage's baseline"),
) -> None:
    """List the stages in course order: one line each (--long: whole titles and baselines)."""
    catalog = load_catalog()
    rows = [(spec.id, f"{spec.track} {spec.stage}", str(spec.max_score), *([spec.baseline or "-"] if long else []),
             spec.title) for spec in catalog.stages]
    names = ("stage", "track", "points", *(("baseline",) if long else ()), "title")
    widths = [max(len(name), *(len(row[n]) for row in rows)) for n, name in enumerate(names[:-1])]
    table = Table(header_style="bold", box=None, pad_edge=False)
    for name, width in zip(names, widths):  # whole, however narrow the terminal: only the title gives way
        table.add_column(name, no_wrap=True, justify="right" if name == "points" else "left", min_width=width)
    if long:
        table.add_column("title")
    else:  # one line a stage: the title cut to what the line has left (`lab show STAGE` has it whole)
        left = max(TITLE_AT_LEAST, console.width - sum(widths) - 2 * len(widths))
        table.add_column("title", no_wrap=True, overflow="ellipsis", max_width=left)
        rows = [(*row[:-1], row[-1] if len(row[-1]) <= left else row[-1][:left - 1].rstrip() + "…") for row in rows]
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command(rich_help_panel=STUDENTS)
def show(stage: str = typer.Argument(..., help="stage id, e.g. transpose_coalesced")) -> None:
    """Show a stage's README: the idea, the task, how it is graded (stated from the stage's spec)."""
    spec = load_stage(load_catalog(), stage)
    readme = spec.readme()
    if not readme.exists():
        fail(f"stage {stage} has no README.md", 3)
    from rich.markdown import Markdown  # here: its parser costs every other command 0.1 s

    from grader.course.stage_readme import MissingBlockError, with_block

    text = readme.read_text(encoding="utf-8")
    try:
        text = with_block(text, spec)  # what the spec decides, stated from the spec itself
    except MissingBlockError as error:
        fail(f"stage {stage}: README.md is broken: {error}", 3)
    console.print(Markdown(text))


@app.command(rich_help_panel=STUDENTS)
def init(
    stage: str = typer.Argument(..., help="stage id"),
    backend: str = typer.Option("auto", "--backend", "-b",
                                help="auto, cuda or opencl: which skeleton (auto: what `lab grade` would run here)"),
    output: Path = typer.Option(None, "--output", "-o", help="file to write (default: STAGE.cu/.cl)"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing file"),
) -> None:
    """Copy a stage's skeleton to a working file you then edit and grade."""
    asked = backend_choice(backend)
    spec = load_stage(load_catalog(), stage)
    kind, warning = _skeleton_backend(asked)
    suffix = kind.suffix
    target = output or Path(f"{spec.id}{suffix}")
    if target.suffix != suffix:
        fail(f"{target}: a {kind.name} file ends in {suffix}")
    if target.exists() and not force:
        fail(f"{target} already exists: not overwriting your work (use --force, or -o another file)")
    skeleton = spec.skeleton(suffix)
    if not skeleton.exists():
        fail(f"stage {stage} has no {skeleton.name}", 3)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(skeleton, target)
    shown = for_terminal(str(target))
    console.print(f"wrote {shown}: fill in the TODOs, then `lab grade {spec.id} {shown}`")
    if warning:
        console.print(f"[yellow]note:[/yellow] {for_terminal(warning)}")


def _skeleton_backend(asked: BackendKind | None) -> tuple[BackendKind, str | None]:
    """The backend whose skeleton `lab init` writes, and a note where this machine cannot grade
    it. None (auto): the backend of the device `lab grade` would choose here; with none,
    registry.without_a_device()."""
    from grader.backends.discovery import NoDeviceError, choose, discover

    found = discover()
    if asked is None:
        try:
            return choose(found).row, None
        except NoDeviceError:
            asked = registry.without_a_device()
    if found.of(asked):
        return asked, None
    why = found.problems.get(asked.name, "no device")
    return asked, f"this machine cannot grade a {asked.suffix} file ({why}); see `lab devices`"
