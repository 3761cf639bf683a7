"""Gradings that time on one device take turns (grader.device_queue through grader.device_turn):
real `lab grade --cpu-timing` runs on PoCL, on a stage that compiles in seconds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import device_queue
from grader.device_queue import turns
from tests.conftest import as_submission, catalog, targets

ROOT = Path(__file__).resolve().parents[2]
STAGE = "reduce_interleaved"
SOLUTION = ROOT / "reference" / STAGE / "solution.cl"

pytestmark = pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")


def start(out: Path, name: str, queue: Path, log: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lab", "grade", STAGE, str(SOLUTION), "--backend", "opencl", "--cpu-timing",
         "--seed", "7", "--json", str(out / f"{name}.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
        env={**os.environ, "LAB_DEVICE_QUEUE": str(queue), "LAB_DEVICE_QUEUE_LOG": str(log), **env})


def verdict(report: dict) -> tuple:
    return report["status"], report["score"], tuple((c["name"], c["status"]) for c in report["checks"])


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One grading on its own: its verdict, and the device's id as the queue names it."""
    out = tmp_path_factory.mktemp("alone")
    proc = start(out, "alone", out / "queue", out / "log")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    report = json.loads((out / "alone.json").read_text())
    (turn,) = turns(out / "log")
    return {"report": report, "device": turn[0]}


def test_concurrent_gradings_time_one_at_a_time_with_the_same_verdicts(tmp_path: Path, alone: dict) -> None:
    queue, log = tmp_path / "queue", tmp_path / "log"
    procs = [start(tmp_path, f"g{n}", queue, log) for n in range(3)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errs
    reports = [json.loads((tmp_path / f"g{n}.json").read_text()) for n in range(3)]
    assert {verdict(r) for r in reports} == {verdict(alone["report"])}
    done = turns(log)
    assert len(done) == 3 and len({pid for _, pid, _, _ in done}) == 3
    assert {device for device, _, _, _ in done} == {alone["device"]}
    for (_, _, _, released), (_, _, taken, _) in zip(done, done[1:], strict=False):
        assert taken >= released, done  # never two timed phases at once
    checks = turns(log, shared=True)  # each grading's correctness cases and its size check: a shared turn each
    assert len(checks) == 6 and sorted(pid for _, pid, _, _ in checks) == sorted(2 * [pid for _, pid, _, _ in done])
    for _, pid, _, released in done:  # the size check's after the grading's timed phase
        assert max(began for _, p, began, _ in checks if p == pid) >= released
    for _, _, began, ended in checks:  # beside each other maybe, never beside a timed phase
        assert all(ended <= taken or began >= released for _, _, taken, released in done), (checks, done)
    for report in reports:
        assert "queued" in report["phases"] and report["performance"]["time_ms"] > 0


def test_a_grading_in_line_says_so_and_its_wait_is_apart(tmp_path: Path, alone: dict) -> None:
    """The device held by another process: the grading waits (shown on standard error, a
    typed event rendered by grader.queue_status), its time limits do not run meanwhile, and
    the wait is the report's `queued` phase, outside its duration."""
    queue, log = tmp_path / "queue", tmp_path / "log"
    held = device_queue.join(alone["device"], queue)
    assert held.try_take()
    started = time.monotonic()
    # A benchmark limit of 1 s: a wait of 5 s in line would exceed it if it counted.
    proc = start(tmp_path, "waiting", queue, log, LAB_SANDBOX="on")
    # Held for 6 s from when the grading takes its ticket: on loaded cores its start and its
    # compile alone may take longer than any fixed hold.
    ticket = re.compile(rf"ticket-\d+-{proc.pid}(-shared)?")
    joined_at = None
    try:
        while joined_at is None or time.monotonic() - joined_at < 6:
            held.beat()
            if joined_at is None and any(ticket.fullmatch(name) for name in os.listdir(held.folder)):
                joined_at = time.monotonic()
            assert joined_at is not None or time.monotonic() - started < 120, "the grading never joined the queue"
            time.sleep(0.1)
    finally:
        held.leave()
    _, err = proc.communicate(timeout=300)
    wall = time.monotonic() - started
    assert proc.returncode == 0, err
    # (a CPU device is "the device", a GPU "the GPU": grader.queue_status)
    assert re.search(r"waiting for the (device|GPU): 1 ahead", err), err
    assert re.search(r"the (device|GPU) is free: checking your kernel \(waited", err), err  # its correctness cases wait
    report = json.loads((tmp_path / "waiting.json").read_text())
    assert verdict(report) == verdict(alone["report"])
    phases = report["phases"]
    assert phases["queued"] > 2.0
    assert phases["benchmark"] < phases["queued"]
    assert report["duration_s"] + phases["queued"] <= wall
    checks, size_check = turns(log, shared=True)
    (turn,) = turns(log)
    assert checks[2] >= joined_at + 5.5 and turn[2] >= checks[3] and size_check[2] >= turn[3]


def test_a_grading_holds_the_device_no_longer_than_the_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Past HOLD_LIMIT_S in its turn the worker is killed: a timeout, and the device is free again."""
    from grader.backends.registry import by_name
    from grader.grading import GradeOptions, GradeRequest, grade

    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path / "queue"))
    monkeypatch.setattr(device_queue, "HOLD_LIMIT_S", 0.0)
    course = catalog()
    target = next(t for t in targets() if t.backend == "opencl")
    report = grade(GradeRequest(course, course.get(STAGE), as_submission(SOLUTION.read_text()), by_name("opencl"), target,
                                "solution.cl", GradeOptions(seed=7, cpu_timing=True)))
    failed = report.failure
    assert failed is not None and "held the device" in failed.message, failed
    folder = tmp_path / "queue" / os.listdir(tmp_path / "queue")[0]
    assert not [n for n in os.listdir(folder) if n.startswith("ticket-")]


def test_without_timing_nothing_waits(tmp_path: Path, alone: dict) -> None:
    """A CPU device without --cpu-timing times nothing: it never joins the queue."""
    if next(t for t in targets() if t.backend == "opencl").kind != "cpu":
        pytest.skip("the OpenCL device is a GPU: a grading there times by default")
    queue, log = tmp_path / "queue", tmp_path / "log"
    held = device_queue.join(alone["device"], queue)
    assert held.try_take()
    try:
        done = subprocess.run([sys.executable, "-m", "lab", "grade", STAGE, str(SOLUTION), "--backend", "opencl"],
                              capture_output=True, text=True, cwd=str(ROOT), timeout=300,
                              env={**os.environ, "LAB_DEVICE_QUEUE": str(queue), "LAB_DEVICE_QUEUE_LOG": str(log)})
    finally:
        held.leave()
    assert done.returncode == 0, done.stderr  # (this stage has no speed points)
    assert "waiting" not in done.stderr and not log.exists()
