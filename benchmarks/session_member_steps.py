"""What each step of a timing session's member costs at the benchmark size, on each device here:
its window (buffers for every placement, the reference's buffers, the check's own, the copy
floor, the warm-up) once, then for every timed launch the fresh inputs, the poison, the L2
flush, the launch (wall and device time) and its check (grader.session_audit: the sampled
check; for one launch in four, its outputs copied, and the whole check as it runs after the
rounds), each the median of its runs.

    python3 benchmarks/session_member_steps.py --stages transpose_coalesced,matmul_tiled

The submission is the stage's reference, in this one process (no session, no sandbox): the
figures are the member's own work, not the session's messages or other processes'. Prints a
Markdown table (median milliseconds, and how many times each step ran).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.backends import open_backend, registry  # noqa: E402
from grader.backends.discovery import discover  # noqa: E402
from grader.course.catalog import Catalog, default_catalog  # noqa: E402
from grader.course.problems import load_problem  # noqa: E402
from grader.device_floor import copy_floor_ms  # noqa: E402
from grader.device_ops import DeviceOps  # noqa: E402
from grader.session_audit import SessionAudit  # noqa: E402
from grader.timing import TimingPolicy, benchmark_case, prepare_roles, release_roles  # noqa: E402


class Steps:
    """Seconds by step, in the order first seen."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        yield
        self.seconds.setdefault(name, []).append(time.perf_counter() - began)


def member_steps(backend, ops: DeviceOps, catalog: Catalog, stage: str, launches: int) -> Steps:
    spec = catalog.get(stage)
    problem = load_problem(spec.problem)
    path = catalog.reference_file(stage, registry.by_name(backend.info.backend).suffix)
    kernels = backend.compile(path.read_text(), [k.name for k in spec.kernels], spec.defines, str(path))
    case = benchmark_case(spec, backend.info.kind)
    policy = TimingPolicy.for_kind(backend.info.kind)
    steps = Steps()
    with steps.step("window: buffers, every placement"):
        roles = prepare_roles(backend, problem, {"submission": (spec, kernels)}, case, None, ops, 1,
                              placements=policy.placements)
    try:
        with steps.step("window: the reference's buffers"):
            roles.update(prepare_roles(backend, problem, {"reference": (spec, kernels)}, case, None, ops, 2,
                                       inputs_of=spec))
        submission, reference = roles["submission"], roles["reference"]
        with steps.step("window: the check's own buffers"):
            audit = SessionAudit(backend, problem, ops, submission, reference.placements[0], reference, stage)
        try:
            with steps.step("window: copy floor"):
                copy_floor_ms(ops, submission.placements[0], reference.placements[0], spec.work(case)[0] or 0.0)
            with steps.step(f"window: warm-up x{policy.warmup}"):
                submission.warm_up(backend, policy.warmup)
            count = len(submission.placements)
            for number in range(launches):
                placement, seed = number % count, 100 + number
                with steps.step("fresh inputs"):
                    audit.before(placement, seed)
                with steps.step("poison"):
                    submission.placements[placement].reset_outputs()
                with steps.step("L2 flush"):
                    backend.flush_l2()
                with steps.step("launch (wall)"):
                    device = submission.run(backend, timed=True, placement=placement)
                steps.seconds.setdefault("launch (device)", []).append(float(device or 0.0))
                with steps.step("check, sampled"):
                    audit.after(placement, seed, 7 + number)
            for number in range(max(1, launches // 4)):
                placement, seed = number % count, 500 + number
                audit.before(placement, seed)
                submission.timed_launch(backend, placement)
                with steps.step("check, sampled, its outputs copied for the whole check"):
                    audit.after(placement, seed, 7 + number, whole=True)
                with steps.step("whole check, after the rounds (the reference's run, the comparison)"):
                    audit.check_kept()
        finally:
            audit.release()
    finally:
        release_roles(roles)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="transpose_coalesced,reduce_unrolled,matmul_tiled,gemm_tiled")
    parser.add_argument("--launches", type=int, default=24, help="timed launches per stage")
    args = parser.parse_args()
    catalog = default_catalog()
    print("| device | stage | step | median ms | times |")
    print("|---|---|---|---:|---:|")
    for target in discover().targets:
        backend = open_backend(target.backend, target.index)
        try:
            ops = DeviceOps(backend)
            for stage in (s for s in args.stages.split(",") if s):
                steps = member_steps(backend, ops, catalog, stage, args.launches)
                for name, seconds in steps.seconds.items():
                    print(f"| {target.backend}:{target.index} | {stage} | {name} | {1e3 * statistics.median(seconds):.3f} | "
                          f"{len(seconds)} |")
        finally:
            backend.close()


if __name__ == "__main__":
    main()
