"""Whether two checkouts' `lab batch` write the same results for one small, fixed class.

The class (built here, the same for both checkouts, from this checkout's reference kernels):
alice hands in a correct reduce_interleaved and a wrong reduce_sequential, bob the same correct
reduce_interleaved with one name changed (a similar pair) and a correct reduce_first_add,
carol a wrong reduce_interleaved and a stray notes.txt (not graded), and dave an empty folder.
The reduce stages compile in seconds on PoCL. Each checkout grades it with `python -m lab
batch run CLASS --out OUT --jobs 1` (`lab batch CLASS` in a checkout from before `lab batch`'s
commands; cwd=<checkout>, PYTHONPATH=<checkout> in front) into an OUT of its own, on whatever
device that finds (PoCL where there is no GPU). A CPU device times nothing; on a GPU the
kernels' times and speedups differ from run to run: compare there with --no-timing.

`lab batch` has no seed option: each grading's seed comes from secrets.randbits in the batch's
process. So that two runs draw the same seeds, the batch runs with a sitecustomize (written
into a temporary folder on PYTHONPATH) that gives that function a generator seeded with
--seed; with --jobs 1 the gradings take their seeds in the batch's own order (a checkout that
draws them otherwise grades other inputs, and its wrong outputs' values differ). What still
differs from run to run is normalised in every file before comparing: times and durations
(seconds, milliseconds, minutes) and each phase's share of them, timestamps, the pace, the
temporary folders' paths, and the JSON fields that hold times (`execution_time`, `phases`,
...). A JSON file is compared as data, any other text line by line.

    python3 benchmarks/batch_outputs_compare.py . /tmp/old          # this checkout against another
    python3 benchmarks/batch_outputs_compare.py . . --diff          # against itself: every file the same

It prints one row a file: same, different (with --diff, the first lines that differ), or
only in one run. Exit status 0 when every file is the same, 1 otherwise. Only the standard
library is used; run it with the Python that has the project's dependencies.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STUDENT_EDIT = "\ntypedef int lab_student_edit;\n"  # a reference stands in for a student's own kernel

SEEDING = '''\
"""Written by benchmarks/batch_outputs_compare.py: the batch's seeds from one seeded generator."""
import os

if os.environ.get("LAB_COMPARE_SEED"):
    import random
    import secrets

    secrets.randbits = random.Random(int(os.environ["LAB_COMPARE_SEED"])).getrandbits
'''

# Keys of a JSON file whose values differ from run to run: a grading's times and its date.
VOLATILE_KEYS = {"duration_s", "phases", "phase_log", "timed_ms", "graded_at", "execution_time", "elapsed_s"}
PATTERNS = (  # (what differs, how it is written once normalised), for text files and JSON strings
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:?\d\d|Z)?"), "<timestamp>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|sec|seconds?|min|minutes?|h)\b"), "<time>"),
    (re.compile(r"\b\d+:\d\d(:\d\d)?\b"), "<clock>"),
    (re.compile(r"<time> \(\d+(\.\d+)?%\)"), "<time> (<share>)"),  # a phase's share of the batch's time
    (re.compile(r"\d+(\.\d+)?(</?\w+>)*\s*(gradings?|submissions?) (per|/|a) ?(minute|min|hour|h)\b"), "<pace>"),
)


def build_class(root: Path) -> None:
    """Write the class under `root` (see the module's docstring)."""
    reference = HERE / "reference"

    def solution(stage: str) -> str:
        return (reference / stage / "solution.cl").read_text(encoding="utf-8") + STUDENT_EDIT

    def wrong(stage: str, name: str) -> str:
        return (reference / stage / "wrong" / f"{name}.cl").read_text(encoding="utf-8")

    files = {
        "alice/reduce_interleaved.cl": solution("reduce_interleaved"),
        "alice/reduce_sequential.cl": wrong("reduce_sequential", "forgot_block_offset"),
        "bob/reduce_interleaved.cl": solution("reduce_interleaved").replace("partialSum", "partial"),
        "bob/reduce_first_add.cl": solution("reduce_first_add"),
        "carol/reduce_interleaved.cl": wrong("reduce_interleaved", "stride_stops_early"),
        "carol/notes.txt": "not a kernel\n",
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "dave").mkdir()


def batch_run_words(checkout: Path) -> list[str]:
    """The words after `lab` that grade a class in `checkout`: `batch run` (since `lab batch` has
    the commands run, slurm and status), or `batch` in a checkout from before them."""
    source = checkout / "lab" / "cli" / "batch.py"
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    return ["batch", "run"] if "@batch_app.command(RUN)" in text else ["batch"]


def run_batch(checkout: Path, klass: Path, out: Path, site: Path, seed: int, timeout: float,
              extra: list[str]) -> str:
    """Grade the class with the checkout's `lab batch`; its output (an exit status of 1, some
    submissions failed, is a batch that ran)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(site), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("LAB_COURSE_ROOT", None)
    env["LAB_COMPARE_SEED"] = str(seed)
    env.setdefault("COLUMNS", "200")
    done = subprocess.run([sys.executable, "-m", "lab", *batch_run_words(checkout), str(klass), "--out", str(out),
                           "--jobs", "1", *extra],
                          cwd=checkout, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
    output = done.stdout + done.stderr
    if done.returncode not in (0, 1) or not out.is_dir():
        raise SystemExit(f"{checkout}: lab batch exited {done.returncode}:\n{output[-3000:]}")
    return output


def normalise_text(text: str, places: dict[str, str]) -> str:
    for path, name in places.items():
        text = text.replace(path, name)
    for pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def normalise_json(value: object, places: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {key: "<volatile>" if key in VOLATILE_KEYS else normalise_json(item, places)
                for key, item in value.items()}
    if isinstance(value, list):
        return [normalise_json(item, places) for item in value]
    if isinstance(value, str):
        return normalise_text(value, places)
    return value


def normalised_lines(path: Path, places: dict[str, str]) -> list[str]:
    """The file as lines to compare: JSON as sorted, indented data with its volatile keys
    replaced; other text with its times, dates and paths replaced; bytes as one hex line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [data.hex()]
    if path.suffix == ".json":
        try:
            return json.dumps(normalise_json(json.loads(text), places), indent=1, sort_keys=True).splitlines()
        except ValueError:
            pass
    return normalise_text(text, places).splitlines()


def compare(first: Path, second: Path, places: tuple[dict[str, str], dict[str, str]]) -> list[tuple[str, str, list[str]]]:
    """(file, same | different | only in first | only in second, the first differing lines)."""
    files = sorted({p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file()}
                   | {p.relative_to(second).as_posix() for p in second.rglob("*") if p.is_file()})
    rows = []
    for relative in files:
        a, b = first / relative, second / relative
        if not a.is_file():
            rows.append((relative, "only in second", []))
        elif not b.is_file():
            rows.append((relative, "only in first", []))
        else:
            left, right = normalised_lines(a, places[0]), normalised_lines(b, places[1])
            if left == right:
                rows.append((relative, "same", []))
            else:
                diff = list(difflib.unified_diff(left, right, "first", "second", n=0, lineterm=""))
                rows.append((relative, "different", diff[2:12]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a checkout")
    parser.add_argument("second", type=Path, help="another checkout (or the same one again)")
    parser.add_argument("--seed", type=int, default=1, help="seeds the generator of the batch's seeds")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each batch may run")
    parser.add_argument("--diff", action="store_true", help="show the first lines that differ in each file")
    parser.add_argument("--no-timing", action="store_true",
                        help="pass --no-timing to lab batch (on a GPU, where kernel times differ run to run)")
    parser.add_argument("--keep", type=Path, help="copy both results folders here (first/, second/)")
    args = parser.parse_args()
    checkouts = [c.expanduser().resolve() for c in (args.first, args.second)]
    for checkout in checkouts:
        if not (checkout / "lab").is_dir() or not (checkout / "grader").is_dir():
            raise SystemExit(f"{checkout}: no lab/ and grader/ there")
    with tempfile.TemporaryDirectory(prefix="batch-compare-") as folder:
        scratch = Path(folder)
        site, klass = scratch / "site", scratch / "class"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SEEDING, encoding="utf-8")
        build_class(klass)
        outs = [scratch / "first", scratch / "second"]
        for checkout, out in zip(checkouts, outs, strict=True):
            print(f"lab batch from {checkout}", file=sys.stderr)
            last = run_batch(checkout, klass, out, site, args.seed, args.timeout,
                             ["--no-timing"] if args.no_timing else []).strip().splitlines()
            print(f"  {last[-1] if last else '(no output)'}", file=sys.stderr)
        places = tuple({str(out): "<OUT>", str(klass): "<CLASS>", str(checkout): "<CHECKOUT>", folder: "<TMP>"}
                       for out, checkout in zip(outs, checkouts, strict=True))
        rows = compare(outs[0], outs[1], (places[0], places[1]))
        if args.keep:
            import shutil

            for out in outs:
                shutil.copytree(out, args.keep / out.name, dirs_exist_ok=True)
    width = max(len(r[0]) for r in rows) if rows else 4
    print(f"{'file'.ljust(width)}  result")
    print(f"{'-' * width}  {'-' * 14}")
    for relative, verdict, diff in rows:
        print(f"{relative.ljust(width)}  {verdict}")
        if args.diff:
            for line in diff:
                print(f"{'':{width}}    {line[:240]}{' ...' if len(line) > 240 else ''}")
    counts = {verdict: sum(1 for r in rows if r[1] == verdict) for verdict in
              ("same", "different", "only in first", "only in second")}
    print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
    sys.exit(0 if counts["same"] == len(rows) else 1)


if __name__ == "__main__":
    main()
