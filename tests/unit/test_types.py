"""mypy over lab/ and grader/ with the project's settings (pyproject.toml's [tool.mypy]): the
packages' annotations hold, so the test command checks types as it checks behaviour."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[dev]' installs it)")
def test_lab_and_grader_type_check(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache"), "--no-color-output", "lab", "grader"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, f"mypy lab grader found errors:\n{done.stdout}{done.stderr}"
