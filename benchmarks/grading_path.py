"""One submission's path through the project's modules: `lab grade` and a one-student `lab batch`.

Each command runs as a subprocess of the checkout given (cwd=<checkout>, PYTHONPATH=<checkout>
in front) with a call tracer in every Python process it starts: the command itself (the
parent) and the grading workers (`python -m grader.worker`). The tracer is a sitecustomize
module this script writes into a temporary folder on PYTHONPATH; it records, per process, each
function of the checkout's lab/ and grader/ the first time it is called, in the order of those
first calls, from every thread. Imports are left out: a module's own code, and every call made
while a module other than __main__ is being imported (a table built at import time is where the
import graph goes, not where the submission goes). A function called again is not recorded
again, so a loop over test cases counts once: the path is the order in which the grading
reaches its code.

A module's room is the folder its file is in (lab, lab/cli, grader/backends, grader, grader/steps,
...); its layer is the one tests/layers.py gives it (front doors, waist, engine, course and
backends). The path is counted twice: by module (each module once, where the grading first
reaches it) and by function (each function once). From each process's sequence of rooms (one
room repeated counts once):
  - crossings: steps between top-level packages (lab/ and grader/: the first folder of
    the room changes);
  - returns: steps into a room the path had already been in and left;
and over layers, layer changes and returns to a layer (those depend on the calls alone, not on
where the files are). --proposed counts the same path again with each module in its room of
another layout (LAYOUTS below: the course and the backends as top-level packages).

What it leaves out or fixes, so that two checkouts are compared alike: LAB_SANDBOX=off (the
tracer's file must be writable from the worker); a kernel cache of this run's own
(LAB_KERNEL_CACHE), warmed by one untraced `lab grade` first, so the traced gradings read the
trusted kernels from it as a student's second grading does; `--seed 1` for `lab grade` (`lab
batch` has no seed option). A worker that never got a submission (the one `lab batch` starts
ahead for the next) is listed as idle and not counted: a worker graded if it called a function
of a problem module (grader/course/problems/<name>, base.py aside).

    python3 benchmarks/grading_path.py                       # this checkout
    python3 benchmarks/grading_path.py --checkout /tmp/old --json old.json --show-path
    python3 benchmarks/grading_path.py --checkout . --compare old.json
    python3 benchmarks/grading_path.py --compare benchmarks/grading_path_2e27815.json --proposed

benchmarks/grading_path_2e27815.json holds the counts, room and layer paths and modules in
order of the checkout at 2e27815.

The defaults grade examples/transpose_coalesced.cl for transpose_coalesced (OpenCL: PoCL where
there is no GPU). Use the Python that has the project's dependencies. Only the standard library
is used here; the layer table is this checkout's tests/layers.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from tests.layers import LAYERS, PACKAGES, layer_index  # noqa: E402 - this checkout's layer table

TRACER = '''\
"""Written by benchmarks/grading_path.py: record each project function's first call."""
import os
import sys
import threading


def _install(folder, root):
    out = open(os.path.join(folder, f"{os.getpid()}.trace"), "a", buffering=1, encoding="utf-8")
    out.write(f"# ppid {os.getppid()}\\n")
    seen = set()
    prefixes = tuple(os.path.join(root, package) + os.sep for package in PACKAGES)

    def importing(frame):
        """Whether a module's code below the __main__ module's is running: an import."""
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
                return True
            frame = frame.f_back
        return False

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code in seen:
            return
        if code.co_name == "<module>" or not code.co_filename.startswith(prefixes):
            seen.add(code)
        elif not importing(frame.f_back):
            seen.add(code)
            out.write(f"{code.co_filename[len(root) + 1:]}\\t{code.co_qualname}\\n")

    sys.setprofile(profile)
    threading.setprofile(profile)


PACKAGES = {packages!r}
if os.environ.get("LAB_PATH_TRACE"):
    _install(os.environ["LAB_PATH_TRACE"], os.environ["LAB_PATH_TRACE_ROOT"])
'''


@dataclass(frozen=True)
class Counts:
    steps: int  # modules (or functions) reached
    rooms: int  # steps of the room path (a room repeated counts once)
    crossings: int  # steps between top-level packages (lab/, grader/)
    returns: int  # steps into a room already left
    layer_changes: int
    layer_returns: int

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(asdict(self).values(), asdict(other).values(), strict=True)))


GRAINS = ("module", "function")  # a module counts once, at its first function called; or each function


@dataclass(frozen=True)
class ProcessPath:
    role: str  # parent, worker, idle worker
    pid: int
    functions: tuple[tuple[str, str], ...]  # (module file, qualified name), in first-call order

    def files(self, grain: str) -> list[str]:
        """The module file of each step: each module once (grain "module") or each function."""
        files = [path for path, _ in self.functions]
        return list(dict.fromkeys(files)) if grain == "module" else files

    def rooms(self, grain: str, layout: dict[str, str] | None = None) -> list[str]:
        """The room path: each step's folder, or with `layout` the room it gives the module."""
        if layout is not None:
            return collapse([proposed_room(path, layout) for path in self.files(grain)])
        return collapse([Path(path).parent.as_posix() for path in self.files(grain)])

    def layers(self, grain: str) -> list[str]:
        return collapse([LAYERS[layer_index(module_name(path))].name for path in self.files(grain)])

    def counts(self, grain: str, layout: dict[str, str] | None = None) -> Counts:
        rooms, layers = self.rooms(grain, layout), self.layers(grain)
        return Counts(len(self.files(grain)), len(rooms), crossings(rooms), returns(rooms),
                      max(len(layers) - 1, 0), returns(layers))


# Another layout for the same modules, to count the path in: module or package -> its room there
# (the longest name that matches wins; a module no name matches stays in its own room). "four
# packages": the bottom out of grader/ into top-level course/ and backends/ packages of their own.
LAYOUTS: dict[str, dict[str, str]] = {
    "four packages": {"grader.course": "course", "grader.course.problems": "course/problems",
                      "grader.course.checks": "course/checks", "grader.backends": "backends"},
}


def proposed_room(path: str, layout: dict[str, str]) -> str:
    """The room `layout` gives the module file at `path` (relative to the checkout)."""
    module = module_name(path)
    matches = [name for name in layout if module == name or module.startswith(name + ".")]
    return layout[max(matches, key=len)] if matches else Path(path).parent.as_posix()


def module_name(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def collapse(sequence: list[str]) -> list[str]:
    """`sequence` with each run of one value kept once."""
    return [item for index, item in enumerate(sequence) if index == 0 or sequence[index - 1] != item]


def crossings(rooms: list[str]) -> int:
    """Steps of a room path between top-level packages (lab/cli -> grader/steps, not lab/cli -> lab)."""
    return sum(1 for a, b in zip(rooms, rooms[1:]) if a.split("/")[0] != b.split("/")[0])


def returns(path: list[str]) -> int:
    """Steps into a place the path had been in and left (each step of a collapsed path leaves one)."""
    return len(path) - len(set(path))


def read_traces(folder: Path, parent_pid: int) -> list[ProcessPath]:
    paths = []
    for trace in sorted(folder.glob("*.trace")):
        lines = trace.read_text(encoding="utf-8").splitlines()
        ppid = int(lines[0].split()[-1]) if lines and lines[0].startswith("# ppid") else -1
        pid = int(trace.stem)
        functions = tuple((file, name) for file, _, name in (line.partition("\t") for line in lines[1:]) if name)
        if pid == parent_pid:
            role = "parent"
        elif ppid == parent_pid:
            graded = any(("problems" in Path(f).parts[:-1] and Path(f).stem not in ("base", "__init__"))
                         for f, _ in functions)
            role = "worker" if graded else "idle worker"
        else:
            continue  # not of this command
        paths.append(ProcessPath(role, pid, functions))
    return sorted(paths, key=lambda p: (["parent", "worker", "idle worker"].index(p.role), p.pid))


def traced_env(checkout: Path, site: Path, traces: Path | None, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(site), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("LAB_COURSE_ROOT", None)
    env["LAB_SANDBOX"] = "off"
    env["LAB_KERNEL_CACHE"] = str(cache)
    env.setdefault("COLUMNS", "200")
    if traces is not None:
        env["LAB_PATH_TRACE"] = str(traces)
        env["LAB_PATH_TRACE_ROOT"] = str(checkout)
    else:
        env.pop("LAB_PATH_TRACE", None)
    return env


def run(command: list[str], checkout: Path, env: dict[str, str], timeout: float, log: Path) -> int:
    """Run `python -m lab COMMAND...` in `checkout`; its pid (its exit status is not a failure:
    a grading may fail), or SystemExit where it could not run to its end."""
    with open(log, "wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "lab", *command], cwd=checkout, env=env,
                                   stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise SystemExit(f"lab {' '.join(command)}: no end after {timeout:g} s; its output:\n"
                             f"{log.read_text(errors='replace')[-2000:]}") from None
    if code not in (0, 1, 5):  # passed, failed, pending (speed on a CPU device)
        raise SystemExit(f"lab {' '.join(command)} exited {code}:\n{log.read_text(errors='replace')[-2000:]}")
    return process.pid


def follow(name: str, command: list[str], checkout: Path, site: Path, cache: Path, scratch: Path,
           timeout: float) -> list[ProcessPath]:
    traces = scratch / f"{name}-traces"
    traces.mkdir()
    pid = run(command, checkout, traced_env(checkout, site, traces, cache), timeout, scratch / f"{name}.log")
    return read_traces(traces, pid)


def summary(paths: list[ProcessPath], layout: dict[str, str] | None = None) -> dict:
    """For each grain: the counts of each process and their total (idle workers not counted),
    and each process's room and layer paths (rooms by `layout` where one is given)."""
    result: dict = {}
    for grain in GRAINS:
        total = Counts(0, 0, 0, 0, 0, 0)
        for path in paths:
            if path.role != "idle worker":
                total = total + path.counts(grain, layout)
        result[grain] = {"total": asdict(total),
                         "processes": [{"role": p.role, **asdict(p.counts(grain, layout)),
                                        "room_path": p.rooms(grain, layout), "layer_path": p.layers(grain),
                                        **({"modules": [module_name(f) for f in p.files(grain)]}
                                           if grain == "module" else {})}
                                       for p in paths]}
    return result


def git_commit(checkout: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


COLUMNS = ("steps", "rooms", "crossings", "returns", "layer_changes", "layer_returns")


def table(results: dict, compare: dict | None) -> str:
    header = ["command", "path by", "process", *COLUMNS]
    rows = []
    for command, result in results.items():
        for grain in GRAINS:
            for process in result[grain]["processes"]:
                rows.append([command, grain, process["role"], *(str(process[c]) for c in COLUMNS)])
            rows.append([command, grain, "total", *(str(result[grain]["total"][c]) for c in COLUMNS)])
            if compare is not None and command in compare.get("commands", {}):
                before = compare["commands"][command][grain]["total"]
                rows.append([command, grain, f"total, {compare.get('commit') or 'compared'}",
                             *(str(before[c]) for c in COLUMNS)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in [header, ["-" * w for w in widths], *rows]]
    return "\n".join(line.rstrip() for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=HERE, help="the checkout to follow (default: this one)")
    parser.add_argument("--stage", default="transpose_coalesced")
    parser.add_argument("--file", default="examples/transpose_coalesced.cl",
                        help="the submission, relative to the checkout or absolute")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each command may run")
    parser.add_argument("--json", type=Path, help="write the paths and their counts to FILE")
    parser.add_argument("--compare", type=Path, help="a JSON this script wrote earlier: its totals beside these")
    parser.add_argument("--label", help="what to call the checkout in the JSON (default: its git commit)")
    parser.add_argument("--proposed", action="store_true",
                        help="also count the same path with each module in its room of each layout of LAYOUTS")
    parser.add_argument("--show-path", action="store_true", help="also print each process's modules in the order they are first reached")
    args = parser.parse_args()
    checkout = args.checkout.expanduser().resolve()
    if not all((checkout / package).is_dir() for package in PACKAGES):
        raise SystemExit(f"--checkout {checkout}: no lab/ and grader/ there")
    submission = (checkout / args.file).resolve()
    if not submission.is_file():
        raise SystemExit(f"--file {args.file}: no such file in {checkout}")
    compare = json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else None

    with tempfile.TemporaryDirectory(prefix="grading-path-") as folder:
        scratch = Path(folder)
        site, cache = scratch / "site", scratch / "kernel-cache"
        site.mkdir()
        (site / "sitecustomize.py").write_text(TRACER.replace("{packages!r}", repr(PACKAGES)), encoding="utf-8")
        grade = ["grade", args.stage, str(submission), "--seed", "1"]
        print(f"warming the kernel cache: lab {' '.join(grade)}", file=sys.stderr)
        run(grade, checkout, traced_env(checkout, site, None, cache), args.timeout, scratch / "warm.log")
        print("lab grade, traced", file=sys.stderr)
        graded = follow("grade", grade, checkout, site, cache, scratch, args.timeout)
        klass = scratch / "class" / "student"
        klass.mkdir(parents=True)
        shutil.copyfile(submission, klass / f"{args.stage}{submission.suffix}")
        from trees import batch_run_words  # benchmarks/ is on sys.path when this runs as a script

        batch = [*batch_run_words(checkout), str(scratch / "class"), "--out", str(scratch / "results"), "--jobs", "1"]
        print("lab batch (one student, one submission), traced", file=sys.stderr)
        batched = follow("batch", batch, checkout, site, cache, scratch, args.timeout)

    results = {"lab grade": summary(graded), "lab batch": summary(batched)}
    for command, result in results.items():  # the path by module: rooms, layers, and with --show-path the modules
        for process in result["module"]["processes"]:
            print(f"{command}, {process['role']}, rooms: " + " > ".join(process["room_path"]))
            print(f"{command}, {process['role']}, layers: " + " > ".join(process["layer_path"]))
            if args.show_path:
                print(f"{command}, {process['role']}, modules: " + " > ".join(process["modules"]))
        print()
    print(table(results, compare))
    if args.proposed:
        for name, layout in LAYOUTS.items():
            proposed = {"lab grade": summary(graded, layout), "lab batch": summary(batched, layout)}
            print(f"\nThe same path, each module in its room of the layout {name!r}:")
            print(table(proposed, None))
    if args.json:
        args.json.write_text(json.dumps({"commit": args.label or git_commit(checkout),
                                         "stage": args.stage, "file": args.file, "commands": results},
                                        indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
