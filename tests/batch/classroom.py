"""A synthetic class for the batch tests: student folders with correct, wrong, slow, crashing,
hanging, empty, binary and misnamed submissions, built from the course's own reference
kernels, and what the grader must conclude about each one.

The stages are the reduce track's first three: PoCL compiles their kernels in about two
seconds each from a cold cache (the transpose kernels take 20 to 40 s each on a 2-core CPU),
which keeps the test within a few minutes in CI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.course.catalog import Catalog
from tests.conftest import as_submission

STAGES = ("reduce_interleaved", "reduce_sequential", "reduce_first_add")
PASSED, FAILED, ERROR, PENDING = "passed", "failed", "error", "pending"
CORRECT = "correct"  # put() turns it into the status a correct submission of that stage gets


def correct_status(catalog: Catalog, stage: str) -> str:
    """The class is graded without timing (--no-timing): a correct submission of a stage that
    grades speed is PENDING (its speed still to be graded), on every device; else PASSED."""
    return PENDING if "fast" in catalog.get(stage).points else PASSED


@dataclass
class Classroom:
    root: Path
    expected: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, stage) -> status
    kinds: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, stage) -> what it is
    not_graded: dict[str, str] = field(default_factory=dict)  # path -> words its reason must contain
    students: list[str] = field(default_factory=list)

    @property
    def submissions(self) -> int:
        return len(self.expected)


def solution(catalog: Catalog, stage: str, suffix: str = ".cl") -> str:
    return as_submission(catalog.reference_file(stage, suffix).read_text(encoding="utf-8"))


def wrong_kernels(catalog: Catalog, stage: str) -> list[str]:
    """The stage's known-wrong OpenCL kernels that fail on any device (not the 'too slow' ones)."""
    found = []
    for path in catalog.wrong_files(stage):
        if path.suffix != ".cl":
            continue
        text = path.read_text(encoding="utf-8")
        first = text.splitlines()[0] if text else ""
        if first.startswith("// expect: correct") or first.startswith("// expect: compiles"):
            found.append(text)
    assert found, f"{stage} has no wrong .cl kernel to use"
    return found


def _before_final_store(source: str, line: str) -> str:
    """Insert `line` before the kernel's last `if (t == 0)` (the store of the block's sum)."""
    at = source.rfind("if (t == 0)")
    assert at > 0, "the reference kernel changed shape: update tests/batch/classroom.py"
    return source[:at] + line + "\n    " + source[at:]


def crashing(source: str) -> str:
    # One write 1.6 GB before `out`: unmapped, so the grading child dies of SIGSEGV. (A far
    # write inside the main loop makes PoCL's compile of the kernel take 20 s and more.)
    return _before_final_store(source, "if (t == 0) out[(int)get_group_id(0) - 400000000] = 1.0f;")


def hanging(source: str) -> str:
    # Endless from the second test case on (n > 256): the first case's limit also allows for
    # PoCL compiling the kernel at its first launch (30 s), the later ones only --time-limit.
    return _before_final_store(source, "volatile int spin = 1;\n    while (n > 256 && spin) { }")


def slow(source: str) -> str:
    # Correct, and many times slower than the reference on any device; each correctness case
    # still takes well under a second on PoCL, so the class's 5 s limit holds on 2 loaded cores
    # (20000 iterations took 6 s of correctness on PoCL under load, a case past 5 s at times).
    return _before_final_store(
        source, "volatile float waste = 0.0f;\n    for (int k = 0; k < 2000; k++) waste += 1.0f;")


def compile_error(source: str) -> str:
    return _before_final_store(source, "partialSum[t] += TILE_SIZE;")


def build(root: Path, catalog: Catalog) -> Classroom:
    """Write the class under `root` (which must not exist yet)."""
    room = Classroom(root)
    a, b, c = STAGES
    sol = {s: solution(catalog, s) for s in STAGES}
    wrong = {s: wrong_kernels(catalog, s) for s in STAGES}

    def put(student: str, stage: str, text: str | bytes, expected: str, kind: str, suffix: str = ".cl") -> None:
        path = root / student / f"{stage}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        room.expected[(student, stage)] = correct_status(catalog, stage) if expected == CORRECT else expected
        room.kinds[(student, stage)] = kind

    def w(stage: str, n: int) -> str:
        return wrong[stage][n % len(wrong[stage])]

    # Names chosen so that no kernel message or device name contains them by chance.
    for name in ("amara", "bjorn"):
        put(name, a, sol[a], CORRECT, "correct")
        put(name, b, sol[b], CORRECT, "correct")
    put("amara", c, sol[c], CORRECT, "correct")
    put("bjorn", c, w(c, 0), FAILED, "wrong")
    for n, name in enumerate(("chiara", "dmitri", "esperanza")):
        put(name, a, w(a, n), FAILED, "wrong")
        put(name, c, w(c, n + 1), FAILED, "wrong")
    put("chiara", b, w(b, 0), FAILED, "wrong")
    put("dmitri", b, w(b, 1), FAILED, "wrong")
    put("esperanza", b, slow(sol[b]), CORRECT, "slow")
    put("farouk", a, crashing(sol[a]), FAILED, "crash")
    put("farouk", b, sol[b], CORRECT, "correct")
    put("farouk", c, sol[c], CORRECT, "correct")
    put("gunnhild", a, hanging(sol[a]), FAILED, "hang")
    put("gunnhild", b, sol[b], CORRECT, "correct")
    put("hiroko", a, "", FAILED, "empty")
    put("hiroko", b, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00" + bytes(range(256)), FAILED, "binary")
    put("hiroko", c, sol[c], CORRECT, "correct")
    put("ignatius", a, sol[a], CORRECT, "correct")
    put("ignatius", b, compile_error(sol[b]), FAILED, "compile error")
    put("ignatius", c, slow(sol[c]), CORRECT, "slow")
    # misnamed files beside one good submission
    put("jolanta", b, sol[b], CORRECT, "correct")
    (root / "jolanta" / "reduce_sequental.cl").write_text(sol[b], encoding="utf-8")
    room.not_graded["jolanta/reduce_sequental.cl"] = "not a stage"
    (root / "jolanta" / f"{a}.cl").write_text(sol[a], encoding="utf-8")
    (root / "jolanta" / f"{a}.cu").write_text(solution(catalog, a, ".cu"), encoding="utf-8")
    room.not_graded[f"jolanta/{a}.cl"] = "more than one file"
    room.not_graded[f"jolanta/{a}.cu"] = "more than one file"
    (root / "jolanta" / "README.txt").write_text("my notes\n", encoding="utf-8")
    room.not_graded["jolanta/README.txt"] = "not a .cu or .cl file"
    (root / "jolanta" / "old").mkdir()
    (root / "jolanta" / "old" / f"{c}.cl").write_text(sol[c], encoding="utf-8")
    room.not_graded["jolanta/old/"] = "a folder inside"
    # a CUDA file: graded where CUDA is, an error result ("no CUDA device") elsewhere
    put("kwabena", a, solution(catalog, a, ".cu"), "cuda", "cuda", suffix=".cu")
    put("kwabena", b, sol[b], CORRECT, "correct")
    put("kwabena", c, sol[c], CORRECT, "correct")
    for name in ("lucrezia", "mateus"):
        put(name, a, sol[a], CORRECT, "correct")
        put(name, c, sol[c], CORRECT, "correct")
    put("lucrezia", b, sol[b], CORRECT, "correct")
    put("mateus", b, w(b, 2), FAILED, "wrong")
    put("nadia", a, sol[a], CORRECT, "correct")
    put("nadia", c, w(c, 2), FAILED, "wrong")
    (root / "oskar").mkdir()
    room.not_graded["oskar/"] = "no files"
    (root / f"{b}.cl").write_text(sol[b], encoding="utf-8")
    room.not_graded[f"{b}.cl"] = "at the top level"
    room.students = sorted({s for s, _ in room.expected} | {"jolanta", "oskar"})
    return room
