"""Grading inside Gradescope's container: the upload's file for each stage of the assignment,
through grader.grading.grade on the machine's OpenCL CPU device (PoCL), with the speed
asked of the course GPU server where the assignment names one (course_server), into one
results.json; and the warm-up setup.sh runs once at build time (each stage's reference kernel
graded, which checks the install and fills the kernel caches)."""

from __future__ import annotations

import secrets
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from grader import GRADER_VERSION
from grader.backends import registry
from grader.backends.registry import BackendKind, Target
from grader.course.catalog import Catalog, UnknownStageError
from grader.course.checks.source_checks import SubmissionError
from grader.course.sinks import for_json
from grader.course.spec import Spec, SpecError
from grader.feedback import write_atomic
from grader.grading import GradeRequest, grade, not_started, refused_report
from grader.report import ERROR, PASSED, PENDING, Report, Status
from grader.results import FailureKind
from grader.scoring import not_graded
from lab.autograder.config import AutograderConfig, ConfigError, load_config
from lab.autograder.paths import AutograderPaths
from lab.autograder.results import failure_results, upload_results
from lab.autograder.uploads import StageFile, Upload, expected_names, scan_upload, take_in

NO_FILE = "(no file uploaded)"  # the report's file, for a stage the upload has no file for
# Report statuses that mean the reference kernel is right (speed is not graded on a CPU).
REFERENCE_OK = (PASSED, PENDING)


def graded_here() -> BackendKind:
    """The backend Gradescope's machines grade: they have no GPU, so the one whose kernels run on
    the CPU (registry.without_a_device: PoCL's OpenCL)."""
    return registry.without_a_device()


def no_device_message(kind: BackendKind) -> str:
    """What the student reads where no device grades `kind` here."""
    here = graded_here()
    if kind == here:
        return f"no {kind.title} device was found on the grading machine: nothing could be graded here"
    return (f"a {kind.language} ({kind.suffix}) file cannot be graded on Gradescope's machines (no GPU): "
            f"it is graded on the course GPU later; upload the {here.language} ({here.suffix}) version "
            f"to have its correctness checked here")


@dataclass
class GradedUpload:
    reports: list[Report] = field(default_factory=list)  # one per stage, in the assignment's order
    notes: list[str] = field(default_factory=list)  # files of the upload not graded, one line each
    log: list[str] = field(default_factory=list)  # for the instructor (Gradescope's stdout)

    @property
    def unsandboxed(self) -> str:
        """Why the upload's code ran without the sandbox ("" where every grading ran in it):
        from the reports themselves, each of which records how its worker ran."""
        return next((r.sandbox.reason or "no sandbox" for r in self.reports
                     if r.sandbox is not None and not r.sandbox.sandboxed), "")


def unsandboxed_note(reason: str) -> str:
    """The instructor's line for a grading without the sandbox."""
    return f"warning: graded without a sandbox: the upload's code ran as the autograder's own user ({reason})"


def load_course(paths: AutograderPaths) -> tuple[AutograderConfig, Catalog, list[Spec]]:
    """The assignment's config, the course shipped in the zip and the stages' specs. Raises
    ConfigError, SpecError or UnknownStageError with a one-line reason."""
    config = load_config(paths.config)
    catalog = Catalog(paths.course)
    if not catalog.assignments.is_dir():
        raise ConfigError(f"{catalog.assignments}: missing from the autograder (rebuild the zip with `lab gradescope`)")
    return config, catalog, [catalog.get(stage) for stage in config.stages]


def grade_stage(catalog: Catalog, spec: Spec, file: StageFile, log: list[str]) -> Report:
    """One uploaded file for its stage. Never raises for anything the file holds."""
    kind = registry.by_suffix(file.path.suffix)
    assert kind is not None  # lab.autograder.uploads makes a StageFile only of a kernel file's suffix
    backend = kind.name
    try:
        report = grade(GradeRequest(catalog, spec, file.path, kind, filename=file.shown))
    except SubmissionError as error:  # not a regular file after all (it changed under us)
        return refused_report(spec, str(error).replace(str(file.path), file.shown), file.shown,
                              Target.to_choose(kind), secrets.randbits(31))
    refused = not_started(report)
    if refused is None:
        return report
    if refused.failure == FailureKind.NO_DEVICE:
        log.append(f"{spec.id}: no device for {backend}: {refused.message}")
        message = no_device_message(kind)
    else:  # LAB_SANDBOX=require set in the container, and none there
        log.append(f"{spec.id}: {refused.message}")
        message = f"the grader could not start: {refused.message}"
    return not_graded(spec, message, refused.failure or FailureKind.GRADER_ERROR, file=file.shown, backend=backend,
                      grader_version=GRADER_VERSION)


def grade_upload(paths: AutograderPaths) -> GradedUpload:
    """Grade what the student uploaded for each stage of the assignment."""
    config, catalog, specs = load_course(paths)
    with tempfile.TemporaryDirectory(prefix="lab-upload-") as work:
        upload = take_in(scan_upload(paths.submission, config.stages), paths.submission, Path(work))
        graded = _grade_all(catalog, specs, upload)
        if config.server_url:
            try:
                _speed_from_server(paths, config, upload, graded)
            except Exception:  # noqa: BLE001 - a bug here must not cost the correctness graded above
                graded.log += ["error: asking the course GPU server failed; the speed stays pending:",
                               traceback.format_exc()]
        return graded


def _speed_from_server(paths: AutograderPaths, config: AutograderConfig, upload: Upload, graded: GradedUpload) -> None:
    """Ask the course GPU server for the speed of each stage correct here with its speed pending
    (lab.autograder.course_server), and put its answer in that stage's report."""
    from lab.autograder.course_server import (
        ServerConnection,
        ServerSpeed,
        ask_server,
        needs_server,
        read_token,
        student_names,
        with_server_speed,
    )

    asked = {report.assignment: i for i, report in enumerate(graded.reports)
             if needs_server(report) and report.assignment in upload.found}
    if not asked:
        return
    token = read_token(paths.server_token)
    if not token:
        graded.log.append(f"error: {paths.server_token}: missing or empty: rebuild the zip with --server-token")
        speeds = {stage: ServerSpeed(stage, reason="the autograder has no token for the course GPU server")
                  for stage in asked}
    else:
        files = {stage: (upload.found[stage].path.name, upload.found[stage].path.read_bytes()) for stage in asked}
        speeds = ask_server(ServerConnection(config.server_url, token), student_names(paths.metadata), files,
                            config.server_wait_s)
    for stage, index in asked.items():
        speed = speeds[stage]
        graded.reports[index] = with_server_speed(graded.reports[index], speed)
        said = (f"speed graded: {speed.check.status}, {speed.check.points} of {speed.check.max_points}"
                if speed.check is not None else f"speed pending: {speed.reason}")
        graded.log.append(f"{stage}: course GPU server (submission {speed.submission}): {said}")


def _grade_all(catalog: Catalog, specs: list[Spec], upload: Upload) -> GradedUpload:
    graded = GradedUpload(notes=list(upload.ignored))
    for spec in specs:
        file = upload.found.get(spec.id)
        if file is None:
            reason = upload.missing[spec.id]
            graded.reports.append(refused_report(spec, reason, NO_FILE, Target.to_choose(graded_here()),
                                                 secrets.randbits(31)))
            graded.log.append(f"{spec.id}: not graded: {reason}")
            continue
        report = grade_stage(catalog, spec, file, graded.log)
        graded.log.append(f"{spec.id}: {file.shown}: {report.status}, score {report.score} of {report.max_score} "
                          f"({report.duration_s:.1f} s)")
        graded.reports.append(report)
    return graded


def write_results(paths: AutograderPaths, results: dict) -> None:
    write_atomic(paths.results, for_json(results) + "\n")


def run(paths: AutograderPaths) -> list[str]:
    """Grade the upload and write results.json, whatever happens: a broken autograder writes
    results that say so (never a missing file). Returns the lines for the instructor's log."""
    try:
        graded = grade_upload(paths)
        results = upload_results(graded.reports, graded.notes)
        log = graded.log
        if graded.unsandboxed:  # for the instructor only: extra_data and the stdout log
            results.setdefault("extra_data", {})["sandbox"] = {"sandboxed": False, "reason": graded.unsandboxed}
            log.append(unsandboxed_note(graded.unsandboxed))
    except (ConfigError, SpecError, UnknownStageError) as error:
        results, log = failure_results(str(error)), [f"error: {error}"]
    except Exception as error:  # a bug: the student sees one line, the instructor the traceback
        results = failure_results(f"an internal error ({type(error).__name__})")
        log = ["error: the autograder failed:", traceback.format_exc()]
    write_results(paths, results)
    return log + [f"wrote {paths.results}"]


@dataclass(frozen=True)
class WarmUp:
    """One stage's reference kernel, graded by setup.sh: its report's status (ERROR where it could
    not be graded) and what to say of it."""

    stage: str
    status: Status
    message: str

    @property
    def ok(self) -> bool:
        return self.status in REFERENCE_OK


def warm_up(paths: AutograderPaths) -> list[WarmUp]:
    """Grade each stage's reference OpenCL kernel: setup.sh fails the build when one is not
    right here, and the kernel caches hold the trusted kernels before any student's upload."""
    _config, catalog, specs = load_course(paths)
    here = graded_here()
    suffix = here.suffix
    done = []
    for spec in specs:
        reference = catalog.reference_file(spec.id, suffix)
        if not reference.exists():
            done.append(WarmUp(spec.id, ERROR, f"{reference}: missing ({expected_names(spec.id)} uploads "
                                                 f"cannot be checked without it)"))
            continue
        try:
            report = grade(GradeRequest(catalog, spec, reference, here))
        except SubmissionError as error:
            done.append(WarmUp(spec.id, ERROR, str(error)))
            continue
        refused = not_started(report)
        if refused is not None:
            done.append(WarmUp(spec.id, ERROR, refused.message))
            continue
        failed = report.failure
        done.append(WarmUp(spec.id, report.status, failed.message if failed else f"{report.duration_s:.1f} s"))
    return done
