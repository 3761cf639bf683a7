"""How long mlp's fast oracle takes at the benchmark size, this checkout against an older one.

Times, at the GPU benchmark size of mlp_train (assignments/mlp_train/assignment.toml), on the
inputs of `mlp.inputs(setup, default_rng(SEED))`:

- `expect` (the float32 run with its bounds), the median of --repeat calls, old and new
  alternating so that a drift in the machine hits both alike;
- `expect` cold: the first call in a fresh process (--repeat processes each), as a grading
  makes it; its arrays are fresh memory, whose page faults cost more than warm calls show;
- two `expect` calls at once in two threads, as grader/steps/host_inputs.py runs the two
  size-check rounds' on a machine of 8 cores or more;
- `_screen` of outputs that pass (every output scanned, as for a right kernel);
- for scale, the run's 12 float32 matrix products alone (BLAS, on every core): the part of
  `expect` no element-wise saving touches.

The old module is grader/course/problems/mlp.py as of --old (a git revision), written to a temporary
file and imported from there. On the same inputs it then checks that the new run's expected
values equal the old ones to the bit, its losses too, and that every new bound is at least
the old one times (1 - 1e-6), element by element (float32 rounding of the norms); each
screen must pass outputs equal to the expected values and fail them with one weight off.
--exact also compares the float64 runs (`train(fast=False)`, what `check` falls back to) to
the bit: that takes a while.

    python3 benchmarks/mlp_oracle_speed.py [--old REV] [--repeat 5] [--exact]

Progress goes to stderr; the table comes last, on stdout. Exit status 1 where a check fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import grader.correctness  # noqa: E402
import grader.course.catalog  # noqa: E402
import grader.steps.benchmark  # noqa: E402
from grader.course.problems import mlp  # noqa: E402

SEED = 1
OLD = "2c64e30"  # the last revision before the fast oracle's element-wise work was cut down
RELATIVE = 1e-6  # how far below the old bound a new one may be: float32 rounding


def old_source(rev: str, scratch: Path) -> Path:
    source = subprocess.run(["git", "show", f"{rev}:grader/course/problems/mlp.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = scratch / "mlp_old.py"
    path.write_text(source)
    return path


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def benchmark_setup():
    spec = grader.course.catalog.default_catalog().get("mlp_train")
    return grader.correctness.make_setup(spec, grader.steps.benchmark.benchmark_case(spec, "gpu"))


def cold(path: Path) -> float:
    """Seconds of the first `expect` in a fresh process (this script with --child)."""
    done = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                          capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def child(path: Path) -> None:
    module = load(path, "mlp_timed")
    setup = benchmark_setup()
    inputs = module.inputs(setup, np.random.default_rng(SEED))
    print(timed(module.expect, setup, inputs))


def timed(f, *args) -> float:
    start = time.perf_counter()
    f(*args)
    return time.perf_counter() - start


def in_two_threads(module: ModuleType, setup, inputs) -> float:
    with ThreadPoolExecutor(max_workers=2) as pool:
        start = time.perf_counter()
        runs = [pool.submit(module.expect, setup, inputs) for _ in range(2)]
        for run in runs:
            run.result()
        return time.perf_counter() - start


def products_alone(setup, inputs, run) -> float:
    """Seconds of the 12 products of one run (steps 2, 2 layers), on arrays of the run's shapes."""
    x, w1, w2 = inputs["X"], inputs["W1_init"], inputs["W2_init"]
    a1, d1, d2 = run.expected["A1_step1"], run.expected["D1_step1"], run.expected["D2_step1"]
    start = time.perf_counter()
    for _ in range(int(setup["steps"]) + 1):
        x @ w1, a1 @ w2
    for _ in range(int(setup["steps"])):
        d2 @ w2.T, x.T @ d1, a1.T @ d2
    return time.perf_counter() - start


def compare_runs(old, new, failures: list[str], exact_bits: bool) -> float:
    """Checks new against old; returns the least ratio new bound / old bound."""
    least = np.inf
    if set(old.expected) != set(new.expected):
        failures.append("the runs have different outputs")
        return least
    for name in old.expected:
        if not np.array_equal(old.expected[name], new.expected[name]):
            failures.append(f"{name}: expected values differ")
        if exact_bits:
            if not np.array_equal(old.bound[name], new.bound[name]):
                failures.append(f"{name}: float64 run's bounds differ")
            continue
        low = new.bound[name] < old.bound[name] * (1 - RELATIVE)
        if low.any():
            failures.append(f"{name}: {int(low.sum())} bounds below the old ones")
        least = min(least, float(np.min(new.bound[name] / old.bound[name])))
    if old.losses != new.losses:
        failures.append(f"losses differ: {old.losses} against {new.losses}")
    if exact_bits and old.loss_bound != new.loss_bound:
        failures.append("loss bounds differ")
    if new.loss_bound < old.loss_bound * (1 - RELATIVE):
        failures.append(f"loss bound below the old one: {new.loss_bound} < {old.loss_bound}")
    return least


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default=OLD, help=f"git revision to compare with (default {OLD})")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--exact", action="store_true", help="also compare the float64 runs")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # time one cold expect
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0

    setup = benchmark_setup()
    inputs = mlp.inputs(setup, np.random.default_rng(SEED))
    steps, last = int(setup["steps"]), mlp.layers(setup)
    failures: list[str] = []
    scratch = tempfile.TemporaryDirectory()
    paths = {"old": old_source(args.old, Path(scratch.name)), "new": Path(mlp.__file__)}
    modules = {"old": load(paths["old"], "mlp_old"), "new": mlp}
    print(f"size {dict((k, setup[k]) for k in ('batch', 'n_in', 'n_hidden', 'n_out', 'steps'))}, "
          f"old = {args.old}", file=sys.stderr)

    runs = {key: module.expect(setup, inputs) for key, module in modules.items()}  # warm up
    least = compare_runs(runs["old"], runs["new"], failures, exact_bits=False)
    times: dict[str, dict[str, list[float]]] = {key: {"expect": [], "cold": [], "two": [], "screen": []}
                                                for key in modules}
    for i in range(args.repeat):
        for key, module in modules.items():
            times[key]["expect"].append(timed(module.expect, setup, inputs))
            times[key]["cold"].append(cold(paths[key]))
        print(f"expect {i + 1}/{args.repeat}: " + ", ".join(
            f"{k} {t['expect'][-1]:.3f} s (cold {t['cold'][-1]:.3f} s)" for k, t in times.items()), file=sys.stderr)
    for _ in range(max(1, args.repeat // 2)):
        for key, module in modules.items():
            times[key]["two"].append(in_two_threads(module, setup, inputs))
    products = statistics.median(products_alone(setup, inputs, runs["new"]) for _ in range(args.repeat))

    # Outputs that pass: copies of the (equal) expected values; and one weight clearly off.
    right = {name: value.copy() for name, value in runs["old"].expected.items()}
    wrong = dict(right)
    wrong["W1"] = right["W1"].copy()
    wrong["W1"][3, 5] += np.float32(1e-2)
    for key, module in modules.items():
        run = runs[key]
        for _ in range(args.repeat):
            times[key]["screen"].append(timed(module._screen, run, inputs, right, steps, last))
        if not module._screen(run, inputs, right, steps, last):
            failures.append(f"{key} screen fails outputs equal to its expected values")
        if module._screen(run, inputs, wrong, steps, last):
            failures.append(f"{key} screen passes a weight off by 1e-2")

    if args.exact:
        print("float64 runs ...", file=sys.stderr)
        exact = {key: module.train(setup, inputs) for key, module in modules.items()}
        compare_runs(exact["old"], exact["new"], failures, exact_bits=True)
    scratch.cleanup()

    for failure in failures:
        print("FAIL:", failure)
    print(f"\nmlp_train oracle at the benchmark size, {os.cpu_count()} cores, median of {args.repeat} "
          f"(two threads: of {max(1, args.repeat // 2)}), seconds:")
    print(f"{'':28s}{'old':>9s}{'new':>9s}{'old/new':>9s}")
    for what, label in (("expect", "expect (fast run), warm"), ("cold", "expect, cold (new process)"),
                        ("two", "2 x expect in 2 threads"),
                        ("screen", "_screen (outputs pass)")):
        o, n = (statistics.median(times[k][what]) for k in ("old", "new"))
        print(f"{label:28s}{o:9.3f}{n:9.3f}{o / n:8.1f}x")
    print(f"{'(its 12 products alone)':28s}{products:9.3f}{products:9.3f}")
    print(f"least new/old bound ratio: {least:.9f}; expected values equal: "
          f"{'yes' if not any('expected values' in f for f in failures) else 'NO'}"
          + ("; float64 runs equal to the bit" if args.exact and not failures else ""))
    print("checks:", "all passed" if not failures else f"{len(failures)} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
