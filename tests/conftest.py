"""Shared fixtures: the course catalog and the devices present, as parameters.

The same test bodies run on PoCL in CI and on CUDA and NVIDIA OpenCL on a GPU machine:
every usable device found by `grader.backends.discovery` becomes one parameter, with a stable
id like `opencl:0-cpu`. With none, the tests that need a device are skipped visibly.
"""

from __future__ import annotations

import os
from functools import lru_cache

import pytest

from grader.backends import registry
from grader.backends.discovery import Target, discover
from grader.course.catalog import Catalog, default_catalog
from tests.sandbox.probing import probe_folder, run_probe  # noqa: F401 - fixtures: the probe backend

# The grading worker's sandbox (grader.sandbox) gives each worker a PoCL cache of its own, so
# every grading pays PoCL's first-launch compile (seconds a kernel on a CPU), where the suite
# grades the same references again and again: the suite runs unsandboxed unless asked
# (LAB_SANDBOX=on python3 -m pytest ...); tests/sandbox turns it on for its own tests.
os.environ.setdefault("LAB_SANDBOX", "off")


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    return default_catalog()


@lru_cache(maxsize=1)
def targets() -> tuple[Target, ...]:
    """Usable devices; LAB_TEST_BACKENDS=cuda,opencl narrows them."""
    wanted = os.environ.get("LAB_TEST_BACKENDS", "cuda,opencl").split(",")
    return tuple(discover(tuple(kind for kind in registry.backends() if kind.name in wanted)).targets)


def target_id(target: Target) -> str:
    return f"{target.backend}:{target.index}-{target.kind}"


def target_params() -> list:
    found = targets()
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no usable device"), id="no-device")]
    return [pytest.param(t, id=target_id(t)) for t in found]


SUFFIX = {kind.name: kind.suffix for kind in registry.backends()}

# A line that makes a copy of a reference kernel a submission of its own for the grader (a copy
# of the stage's own reference, at most trivially edited, is refused: grader.course.checks.normalised_source)
# and changes nothing for the compiler. Tests that stand a reference in for a student's correct
# kernel add it; grading the course's reference file itself, in place, needs none.
STUDENT_EDIT = "\ntypedef int lab_student_edit;\n"


def as_submission(source: str) -> str:
    """A reference's source as a student's own correct kernel (STUDENT_EDIT added)."""
    return source + STUDENT_EDIT


@pytest.fixture(scope="session")
def course() -> Catalog:
    return catalog()
