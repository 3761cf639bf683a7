"""Grading lanes of `lab serve` and `lab work`: planned by lab batch's lane planning from the
devices present (one lane per GPU; --cpu-lanes on a CPU device), or named with --device; and the
lanes planned are the lanes that grade."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from grader.backends.discovery import Discovery, discover
from grader.backends.registry import Target, by_name
from lab.engine import PER_GPU
from lab.server.lane_plan import LanePlan, PoolError, plan_lanes
from tests.server.running import (
    EXAMPLE,
    GRADE_S,
    ROOT,
    RunningServer,
    client,
    correct,
    lab_env,
    needs_server_extra,
    submit,
    wait_graded,
)
from tests.server.test_workers import tokens

HERE = discover()


def expected_from(found: Discovery, cpu_lanes: int = 1) -> list[tuple[str, str]]:
    """(backend, device index) of each lane lab batch plans on `found`: every GPU of a backend
    PER_GPU times, else its first device, `cpu_lanes` times."""
    lanes = []
    for backend in ("cuda", "opencl"):
        targets = found.of(by_name(backend))
        gpus = [t for t in targets if t.kind == "gpu"]
        if gpus:
            lanes += [(backend, str(t.index)) for t in gpus] * PER_GPU
        elif targets:
            lanes += [(backend, str(targets[0].index))] * cpu_lanes
    return lanes


@pytest.mark.skipif(not HERE.targets, reason="no device here (PoCL, CUDA)")
@pytest.mark.parametrize("cpu_lanes", [1, 3])
def test_lanes_are_planned_from_the_devices_present(cpu_lanes):
    plans = plan_lanes(HERE, cpu_lanes=cpu_lanes)
    taken = [(backend, plan.device) for plan in plans for backend in sorted(plan.backends or ())
             if HERE.of(by_name(backend))]
    assert sorted(taken) == sorted(expected_from(HERE, cpu_lanes))
    for plan in plans:  # each lane names its device as lab batch's pool does
        assert plan.device is not None and plan.backends
    # A kernel language with no device here goes to the first lane (its grading says why), no other.
    absent = {b for b in ("cuda", "opencl") if not HERE.of(by_name(b))}
    assert absent <= (plans[0].backends or frozenset())
    assert all(not (absent & (plan.backends or frozenset())) for plan in plans[1:])


def test_named_devices_are_one_lane_each_for_any_language():
    assert plan_lanes(None, ["0", "H100"]) == (LanePlan("0", None, "0"), LanePlan("H100", None, "H100"))
    with pytest.raises(PoolError, match="not both"):
        plan_lanes(None, ["0"], gpus="2")


def test_gpus_pick_the_lanes_and_a_machine_without_one_says_so():
    h100s = Discovery([Target(by_name("cuda"), i, "NVIDIA H100 80GB HBM3", "gpu") for i in range(4)]
                      + [Target(by_name("opencl"), i, "NVIDIA H100 80GB HBM3", "gpu") for i in range(4)])
    assert [(p.backends, p.device) for p in plan_lanes(h100s, gpus="0,2", per_gpu=1)] == \
        [(frozenset({"cuda"}), "0"), (frozenset({"cuda"}), "2"), (frozenset({"opencl"}), "0"),
         (frozenset({"opencl"}), "2")]
    assert len(plan_lanes(h100s, per_gpu=1)) == 8 and len(plan_lanes(h100s, gpus="1", per_gpu=1)) == 2
    assert len(plan_lanes(h100s)) == 8 * PER_GPU and len(plan_lanes(h100s, gpus="1", per_gpu=3)) == 6
    with pytest.raises(PoolError, match="has 4 GPUs"):
        plan_lanes(h100s, gpus="5")
    cpu_only = Discovery([Target(by_name("opencl"), 0, "pthread-cpu", "cpu")], {"cuda": "no NVIDIA GPU"})
    with pytest.raises(PoolError, match="no GPU.*--cpu-lanes"):
        plan_lanes(cpu_only, gpus="1")
    with pytest.raises(PoolError, match="--cpu-lanes 0"):
        plan_lanes(cpu_only, cpu_lanes=0)


@needs_server_extra
@pytest.mark.skipif(not HERE.of(by_name("opencl")), reason="no OpenCL device here (PoCL)")
def test_lab_work_runs_the_lanes_planned_each_grading_one(tmp_path):
    """`lab work --cpu-lanes 2 --once`: two lanes, each takes one submission, so both are graded."""
    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--no-local").start()
    try:
        ids = []
        for who in ("alice", "bob"):
            with client(server, keys[who]) as http:
                ids.append(submit(http, EXAMPLE.read_bytes() + f"\n// {who}\n".encode()).json()["id"])
        worker = subprocess.run([sys.executable, "-m", "lab", "work", server.url, "--token", keys["w1"],
                                 "--cpu-lanes", "2", "--once"], cwd=ROOT, env=lab_env(), capture_output=True,
                                text=True, timeout=GRADE_S)
        assert worker.returncode == 0, worker.stdout + worker.stderr
        assert "2 lane(s): opencl:0" in " ".join(worker.stdout.split())
        with client(server, keys["teacher"]) as http:
            graded = [wait_graded(http, i, 5) for i in ids]
    finally:
        server.stop()
    assert all(correct(g) and g["worker"] == "gpu-host-1" for g in graded), graded


@needs_server_extra
@pytest.mark.skipif(not HERE.of(by_name("opencl")), reason="no OpenCL device here (PoCL)")
def test_lab_serve_runs_the_lanes_planned(tmp_path):
    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--cpu-lanes", "2").start()
    try:
        with client(server, keys["teacher"]) as http:
            shown = http.get("/api/queue")
            assert shown.status_code == 200
        deadline = time.monotonic() + 10
        while "lane(s)" not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        started = " ".join((tmp_path / "server.log").read_text().split())
        assert "grading here, 2 lane(s): opencl:0" in started, started
        assert "hardware counters read when no other grading waits or runs" in started, started
        ids = []
        for who in ("alice", "bob"):
            with client(server, keys[who]) as http:
                ids.append(submit(http, EXAMPLE.read_bytes() + f"\n// {who}\n".encode()).json()["id"])
        with client(server, keys["teacher"]) as http:
            graded = [wait_graded(http, i) for i in ids]
    finally:
        server.stop()
    assert all(correct(g) for g in graded), graded
