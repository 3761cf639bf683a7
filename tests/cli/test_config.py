"""`lab config`: every environment variable the lab reads, with its value now; as JSON; and the
table docs/configuration.md holds, which must be the one the command renders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from grader.settings import SETTINGS
from lab.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
BEGIN, END = "<!-- BEGIN settings (lab config --markdown) -->\n", "<!-- END settings -->"
runner = CliRunner()


def test_config_names_every_variable_with_its_value_now(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path))
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    for setting in SETTINGS:
        assert f"{setting.name} = " in result.output
    assert f"LAB_KERNEL_CACHE = {tmp_path}  (set; " in result.output


def test_config_as_json_is_one_object_per_variable(monkeypatch):
    monkeypatch.setenv("LAB_DEVICE_QUEUE", "off")
    monkeypatch.delenv("LAB_SANDBOX_USER", raising=False)
    result = runner.invoke(app, ["config", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert list(rows) == [s.name for s in SETTINGS]
    assert rows["LAB_DEVICE_QUEUE"]["value"] == "off" and rows["LAB_DEVICE_QUEUE"]["set_to"] == "off"
    assert rows["LAB_SANDBOX_USER"] == {**rows["LAB_SANDBOX_USER"], "value": "nobody", "set_to": None,
                                        "default": "nobody", "problem": None}
    assert rows["POCL_CACHE_DIR"]["owner"] == "PoCL" and "developer" in rows["POCL_CACHE_DIR"]["audience"]


def test_a_value_that_cannot_be_used_is_a_line_and_exit_2_never_a_traceback():
    env = {**os.environ, "LAB_SANDBOX": "requried"}
    done = subprocess.run([sys.executable, "-m", "lab", "config"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "LAB_SANDBOX = cannot be used" in done.stdout
    assert done.stderr.strip() == "error: LAB_SANDBOX='requried': it must be on, off or require"


def test_a_backend_module_that_cannot_be_imported_is_a_line_and_exit_2():
    env = {**os.environ, "LAB_BACKENDS": "no_such_backend_module"}
    done = subprocess.run([sys.executable, "-m", "lab", "grade", "transpose_coalesced",
                           str(ROOT / "examples" / "transpose_coalesced.cl")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "LAB_BACKENDS: backend module 'no_such_backend_module' cannot be imported" in done.stderr


def test_the_documented_table_is_the_one_lab_config_renders():
    """docs/configuration.md holds `lab config --markdown` between its markers: every declared
    variable is documented, with what the declaration says."""
    text = DOC.read_text(encoding="utf-8")
    documented = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    result = runner.invoke(app, ["config", "--markdown"])
    assert result.exit_code == 0
    assert documented == result.output, "docs/configuration.md is stale: paste `lab config --markdown` there"
    for setting in SETTINGS:
        assert f"| `{setting.name}` |" in documented


def test_json_and_markdown_together_are_a_usage_error():
    result = runner.invoke(app, ["config", "--json", "--markdown"])
    assert result.exit_code == 2 and "choose one" in result.output
