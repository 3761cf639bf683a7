"""Running the probe backend (tests/sandbox/probe.py) in a real grading worker, in its sandbox
or not: the fixture `run_probe` (offered to every test by tests/conftest.py) registers it
(LAB_BACKENDS) from a folder of its own outside the checkout, and returns a function that grades
with it and hands back what the probe found."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.backends import registry
from grader.course.catalog import default_catalog
from grader.pipeline import Limits, run_worker
from grader.results import Grading
from grader.steps import Request
from grader.worker_process import WorkerProcess

PROBE = Path(__file__).with_name("probe.py")
MODULE = "lab_test_probe_backend"  # its name there: a top-level module, this file alone
ARGS, NAME, FINDINGS = "probe_args.json", "probe", "ProbeFindings: "

RunProbe = Callable[[dict[str, Any]], tuple[dict[str, Any] | None, Grading]]


@pytest.fixture(scope="session")
def probe_folder() -> Iterator[Path]:
    """A folder outside the checkout holding the probe backend's module alone, readable by the
    sandbox's unprivileged user."""
    folder = Path(tempfile.mkdtemp(prefix="lab-probe-backend-"))
    folder.chmod(0o755)
    shutil.copyfile(PROBE, folder / f"{MODULE}.py")
    (folder / f"{MODULE}.py").chmod(0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def findings(grading: Grading) -> dict[str, Any] | None:
    """What the probe found (the text of the ProbeFindings its open() raised), or None."""
    for error in grading.errors:
        if error.message.startswith(FINDINGS):
            return json.loads(error.message[len(FINDINGS):])
    return None


@pytest.fixture
def run_probe(probe_folder: Path, monkeypatch: pytest.MonkeyPatch) -> RunProbe:
    """A function that runs one worker on the probe backend with the probe's `args` (written to
    its ARGS file), under the LAB_SANDBOX set then: (its findings or None, the Grading)."""
    monkeypatch.setenv("LAB_BACKENDS", MODULE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(probe_folder), os.environ.get("PYTHONPATH"))
                                                     if p))
    monkeypatch.syspath_prepend(str(probe_folder))

    def run(args: dict[str, Any]) -> tuple[dict[str, Any] | None, Grading]:
        (probe_folder / ARGS).write_text(json.dumps(args), encoding="utf-8")
        (probe_folder / ARGS).chmod(0o644)
        request = Request(course_root=str(default_catalog().root), stage="transpose_coalesced", source="",
                          filename="probe.probe", backend=registry.by_name(NAME), device=-1,
                          seed=1)
        grading = Grading()
        run_worker(request, Limits(compile_s=60), grading, worker=WorkerProcess(registry.by_name(NAME)))
        return findings(grading), grading

    return run
