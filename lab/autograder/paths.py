"""Where Gradescope puts things: /autograder and the folders under it.

Gradescope's layout (gradescope-autograders.readthedocs.io, "Autograder Specifications"):
the zip's content in /autograder/source, the student's upload in /autograder/submission, the
output expected in /autograder/results/results.json, details of the submission in
/autograder/submission_metadata.json; run_autograder runs with /autograder as its working
folder. LAB_AUTOGRADER_ROOT moves the whole tree (tests point it at a temporary folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader import settings

DEFAULT_ROOT = settings.DEFAULT_AUTOGRADER_ROOT
CONFIG_NAME = "lab-autograder.json"  # in the zip, beside setup.sh: the assignment's stages
COURSE_FOLDER = "course"  # in the zip: the course's assignments/ and reference/
WHEELS_FOLDER = "wheels"  # in the zip: the lab itself, as a wheel
SERVER_TOKEN_NAME = "lab-server-token"  # in the zip, beside setup.sh: the course server's autograder token
VENV_FOLDER = "lab-venv"  # made by setup.sh under the root: the lab and its dependencies


@dataclass(frozen=True)
class AutograderPaths:
    root: Path

    @classmethod
    def from_environment(cls) -> AutograderPaths:
        """Gradescope's tree, or the one LAB_AUTOGRADER_ROOT names."""
        return cls(settings.value(settings.AUTOGRADER_ROOT))

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def results(self) -> Path:
        return self.root / "results" / "results.json"

    @property
    def metadata(self) -> Path:
        return self.root / "submission_metadata.json"

    @property
    def config(self) -> Path:
        return self.source / CONFIG_NAME

    @property
    def server_token(self) -> Path:
        return self.source / SERVER_TOKEN_NAME

    @property
    def course(self) -> Path:
        return self.source / COURSE_FOLDER

    @property
    def venv(self) -> Path:
        return self.root / VENV_FOLDER
