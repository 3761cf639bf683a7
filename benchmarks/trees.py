"""What the benchmark scripts share: the trees to compare, each one's environment, and a
command timed from outside in a process session of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's grader, run as a script
from grader.worker_process import wait_for_exit  # noqa: E402


def parse_trees(text: str) -> list[tuple[str, Path]]:
    trees = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, path = item.partition("=")
        if not sep:  # a bare path: named by its folder
            name, path = Path(item).resolve().name, item
        folder = Path(path).expanduser().resolve()
        if not (folder / "lab").is_dir():
            raise SystemExit(f"--trees: {name}={path}: no lab/ package in {folder}")
        if name in {n for n, _ in trees}:
            raise SystemExit(f"--trees: the name {name!r} is given twice")
        trees.append((name, folder))
    if not trees:
        raise SystemExit("--trees: no tree given")
    return trees


def batch_run_words(tree: Path) -> list[str]:
    """The words after `lab` that grade a class in `tree`: `batch run` (since `lab batch` has
    the commands run, slurm and status), or `batch` in a checkout from before them."""
    source = tree / "lab" / "cli" / "batch.py"
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    return ["batch", "run"] if "@batch_app.command(RUN)" in text else ["batch"]


def child_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.pop("LAB_COURSE_ROOT", None)  # it would point every tree at one course
    env.setdefault("COLUMNS", "200")  # rich wraps its lines at 80 columns when writing to a file
    return env


def run_timed(command: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path) -> tuple[int | None, float]:
    """Run `command` in a session of its own, output into `log`; (exit code or None on timeout, wall s)."""
    with open(log, "wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = wait_for_exit(process, timeout)  # Popen.wait(timeout) looks every 50 ms
        except subprocess.TimeoutExpired:
            code = None
        wall = time.perf_counter() - started
        if code is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its children too
            except ProcessLookupError:
                pass
            process.wait()
    return code, wall
