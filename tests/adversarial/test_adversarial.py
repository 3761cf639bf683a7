"""The adversarial corpus: one small kernel per fault or attack, each with the verdict it
must get, on every device present (PoCL in CI; CUDA and NVIDIA OpenCL on a GPU machine).

Each file in kernels/ starts with its expectation, then a comment explaining the attack:

    // verdict: <check> <status> <words the check's message must contain>
                                   (several pieces, in order: `words ... more words`)
    // gpu verdict: <check> <status> <words>   (optional: where a GPU's compiler or driver
                                   differs, e.g. NVIDIA's OpenCL accepts what PoCL refuses)
    // devices: cpu | gpu          (optional: the case only makes sense on that kind)
    // stage: <stage id>           (optional: the host stage, transpose_coalesced if absent)
    // sanitize: yes               (optional: on CUDA, grade with compute-sanitizer too)

Whatever the kernel does, the grader must survive it (a report comes back), the submission
must not pass, and the message must be one line a student can act on. Files that cannot even
be kernel text (empty, binary, too big, not UTF-8) and the include tricks that need an
absolute path are made at run time in tmp_path.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from grader.backends.base import CompileError
from grader.backends.discovery import Target
from grader.backends.nvcc import compile_cubin, nvcc_path
from grader.backends.registry import by_name
from grader.course.checks.source_checks import MAX_BYTES, SubmissionError, check_source
from grader.grading import grade_file
from grader.pipeline import OUTPUT_TAIL, Limits
from grader.report import PASSED
from grader.scoring import first_error_line
from tests.conftest import SUFFIX, as_submission, catalog, target_id, targets

KERNELS = Path(__file__).resolve().parent / "kernels"
DEFAULT_STAGE = "transpose_coalesced"
HEADER = re.compile(r"^//\s*(?P<key>verdict|gpu verdict|devices|stage|sanitize):\s*(?P<value>.*?)\s*$")
VERDICT = re.compile(r"^(?P<check>\w+)\s+(?P<status>\w+)\s*(?P<words>.*)$")

# Small limits so that a hang costs seconds, not minutes: a compile may take 20 s, a
# correctness case 5 s (the first one 10 s more, for PoCL's compile at first launch).
# Only the fields this grader's Limits has.
_LIMITS = {"compile_s": 20.0, "run_s": 5.0, "jit_s": 10.0, "benchmark_s": 60.0}
LIMITS = Limits(**{k: v for k, v in _LIMITS.items() if k in Limits.__dataclass_fields__})
# For kernels that must pass: the first launch keeps the grader's own allowance for a device's
# just-in-time compile (PoCL took about 14 s for a transpose on 2 cores, over the 10 s above).
PASSING_LIMITS = replace(LIMITS, jit_s=Limits().jit_s)


@dataclass(frozen=True)
class Case:
    path: Path
    check: str
    status: str
    words: str
    devices: str | None  # "cpu", "gpu" or None (any)
    stage: str
    sanitize: bool
    on_gpu: Case | None = None  # the verdict on a GPU, where it differs

    @property
    def backend(self) -> str:
        return "cuda" if self.path.suffix == ".cu" else "opencl"

    def on(self, target: Target) -> Case:
        return self.on_gpu if self.on_gpu is not None and target.kind == "gpu" else self


def read_case(path: Path) -> Case:
    lines = path.read_text(encoding="utf-8").splitlines()
    fields: dict[str, str] = {}
    for number, line in enumerate(lines):
        match = HEADER.match(line)
        if match is None:
            break
        assert number > 0 or match.group("key") == "verdict", f"{path.name}: line 1 must be `// verdict: ...`"
        fields[match.group("key")] = match.group("value")
    assert "verdict" in fields, f"{path.name}: line 1 must be `// verdict: <check> <status> <words>`"
    devices = fields.get("devices")
    assert devices in (None, "cpu", "gpu"), f"{path.name}: `// devices: cpu` or `// devices: gpu`"
    stage, sanitize = fields.get("stage", DEFAULT_STAGE), fields.get("sanitize", "") == "yes"

    def case(key: str, on_gpu: Case | None = None) -> Case:
        verdict = VERDICT.match(fields[key])
        assert verdict, f"{path.name}: `// {key}: <check> <status> <words>`, not {fields[key]!r}"
        assert verdict.group("status") != PASSED, f"{path.name}: an adversarial kernel must not pass"
        return Case(path, verdict.group("check"), verdict.group("status"), verdict.group("words"),
                    devices, stage, sanitize, on_gpu)

    return case("verdict", case("gpu verdict") if "gpu verdict" in fields else None)


def read_timing_case(path: Path) -> Case:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("// timing:"), f"{path.name}: line 1 must be `// timing: ...`"
    return Case(path, "fast", "", "", None, DEFAULT_STAGE, False)


def corpus() -> list[Case]:
    return [read_case(p) for p in sorted(KERNELS.glob("*.c[lu]"))]


def case_params() -> list:
    params = []
    for case in corpus():
        for t in targets():
            if case.backend == t.backend and case.devices in (None, t.kind):
                params.append(pytest.param(case, t, id=f"{case.path.name}-{target_id(t)}"))
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


def log_verdict(case: Case, target: Target, report) -> None:
    """With LAB_VERDICT_LOG set, append the verdict each case got (one JSON line): the list of
    verdicts per backend that a GPU run of the corpus reports."""
    path = os.environ.get("LAB_VERDICT_LOG")
    if not path:
        return
    failing = next((c for c in report.checks if c.status != PASSED), None)
    record = {"case": case.path.name, "device": target_id(target), "status": report.status,
              "check": failing.name if failing else "", "check_status": failing.status if failing else "",
              "message": failing.message if failing else "", "expected": f"{case.check} {case.status} {case.words}",
              "sandboxed": bool(report.sandbox and report.sandbox.sandboxed)}
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def assert_words(words: str, message: str, where: str = "") -> None:
    """Each piece of `words` (split at " ... ") appears in `message`, in that order."""
    at = 0
    for piece in (w.strip().lower() for w in words.split(" ... ")):
        found = message.lower().find(piece, at)
        assert found >= 0, f"{piece!r} not in {message!r} {where}"
        at = found + len(piece)


def assert_one_line(message: str) -> None:
    assert message.strip(), "an empty message"
    assert "\n" not in message, f"the message must be one line: {message!r}"


@pytest.fixture
def sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader's default: the worker in its sandbox (where bubblewrap can set one up;
    elsewhere it grades without one and says so). The verdicts must not depend on it."""
    monkeypatch.setenv("LAB_SANDBOX", "on")


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize(("case", "target"), case_params())
def test_adversarial_kernel_gets_its_verdict(case: Case, target: Target) -> None:
    case = case.on(target)
    spec = catalog().get(case.stage)
    options = {"plugins": {"sanitizer": True}} if case.sanitize and target.backend == "cuda" else {}
    report = grade_file(catalog(), spec, case.path, target, timing=True, limits=LIMITS, **options)
    assert report is not None, "the grader did not survive"
    log_verdict(case, target, report)
    where = f"(seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"
    assert report.status != PASSED, f"{case.path.name} passed {where}"
    result = report.check(case.check)
    assert result is not None, f"no check named {case.check!r}"
    assert result.status == case.status, f"{case.check} {result.status}: {result.message} {where}"
    assert_words(case.words, result.message, where)
    assert_one_line(result.message)
    assert len(report.output_tail) <= OUTPUT_TAIL
    assert all(c.label != "forged" for c in report.cases), "a kernel's printf became a grader event"


def _cu_cases() -> list:
    files = [read_case(p) for p in sorted(KERNELS.glob("*.cu"))]
    files += [read_timing_case(p) for p in sorted((KERNELS / "timing").glob("*.cu"))]
    return [pytest.param(c, id=c.path.name) for c in files]


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("case", _cu_cases())
def test_cuda_kernel_compiles_unless_it_must_not(case: Case) -> None:
    """Every .cu of the corpus goes through nvcc (no GPU needed): those whose verdict is not a
    compile failure compile; the others fail with their stated words, before or in nvcc."""
    if "timed out" in case.words:
        pytest.skip("a compile that must time out is graded through the pipeline, on a CUDA device")
    spec = catalog().get(case.stage)
    source = case.path.read_text(encoding="utf-8")
    try:
        check_source(source, by_name("cuda"), spec.kernels, spec.allowed_headers, case.path.name,
                     dynamic_shared=spec.dynamic_shared is not None)
        cubin = compile_cubin(source, spec.defines, case.path.name)
    except SubmissionError as error:
        message = str(error)
    except CompileError as error:
        message = "compile error: " + first_error_line(error.log)
    else:
        assert case.check != "compiles", f"{case.path.name} was expected not to compile"
        for kernel in spec.kernels:
            assert kernel.name in cubin.resources, f"no entry point {kernel.name} in {case.path.name}"
        return
    assert case.check == "compiles", f"{case.path.name} does not compile: {message}"
    assert_words(case.words, message)
    assert_one_line(message)


# -- files that are no kernel text, and include tricks -------------------------------------

def _any_target(backend: str) -> Target:
    """A device of `backend` if there is one; refusals happen before any device is used."""
    found = [t for t in targets() if t.backend == backend]
    return found[0] if found else Target(by_name(backend), 0, "(none)", "cpu")


def _bad_files() -> list[tuple[str, bytes, str]]:
    """(file name, content, words the refusal must contain)."""
    ref = catalog().root / "reference" / DEFAULT_STAGE / "solution"
    decoy = {  # an entry point the source check can see, kept away from the compiler
        "cl": "#if 0\n__kernel void transpose(__global float *out, __global const float *in, "
              "int width, int height) {}\n#endif\n",
        "cu": '#if 0\nextern "C" __global__ void transpose(float *out, const float *in, '
              "int width, int height) {}\n#endif\n",
    }
    files = []
    for ext in ("cl", "cu"):
        sol = f"{ref}.{ext}"
        files += [
            (f"empty.{ext}", b"", "the file is empty"),
            (f"blank.{ext}", b" \n\t\n", "the file is empty"),
            (f"bom_only.{ext}", b"\xef\xbb\xbf\n", "the file is empty"),
            (f"binary.{ext}", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "binary file"),
            (f"oversized.{ext}", b"// " + b"x" * (MAX_BYTES + 1) + b"\n", "KiB limit"),
            (f"latin1.{ext}", "// café, écrit à Paris\n".encode("latin-1"), "not UTF-8"),
            (f"include_absolute.{ext}", f'#include "{sol}"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_digraph.{ext}", f'%:include "{sol}"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_trigraph.{ext}", f'??=include "{sol}"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_splice.{ext}", f'#\\\ninclude "{sol}"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_comment.{ext}", f'# /* */ include "{sol}"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_next.{ext}", f'#include_next "{sol}"\n{decoy[ext]}'.encode(), "#include_next is not allowed"),
            (f"import.{ext}", f'#import "{sol}"\n{decoy[ext]}'.encode(), "#import is not allowed"),
            (f"embed.{ext}", f'const char data[] = {{\n#embed "{sol}"\n}};\n{decoy[ext]}'.encode(),
             "#embed is not allowed"),
            # a comment that spans the line break: the preprocessor sees `#include "..."`
            (f"include_comment_span.{ext}", f'#/*\n*/include "/etc/passwd"\n{decoy[ext]}'.encode(),
             "#include is not allowed"),
            # a multi-character constant `'/*'` that a comment stripper takes for a comment
            (f"include_after_multichar.{ext}",
             f"int c = '/*';\n#include \"/etc/passwd\"\nint d = '*/';\n{decoy[ext]}".encode(),
             "#include is not allowed"),
            (f"has_include.{ext}", f'#if __has_include("/etc/shadow")\nint x;\n#endif\n{decoy[ext]}'.encode(),
             "__has_include asks the compiler about files"),
            (f"has_include_pasted.{ext}", ('#define CAT(a, b) a##b\n#if CAT(__has_, include)("/etc/shadow")\n'
                                            f'int x;\n#endif\n{decoy[ext]}').encode(), "asks __has_include"),
            (f"pragma_dependency.{ext}", f'_Pragma("GCC dependency \\"/etc/passwd\\"")\n{decoy[ext]}'.encode(),
             "is not allowed in a submission"),
            (f"pragma_debug_crash.{ext}", f'#pragma clang __debug crash\n{decoy[ext]}'.encode(),
             "#pragma clang __debug crash is not allowed"),
            (f"include_binary.{ext}", f'#include "/bin/bash"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_backslash_space_splice.{ext}",
             f'// a comment \\  \n#include "/etc/passwd"\n{decoy[ext]}'.encode(), "#include is not allowed"),
            (f"include_macro.{ext}", f'#define F "/etc/passwd"\n#include F\n{decoy[ext]}'.encode(),
             "#include is not allowed"),
        ]
    return files


@pytest.mark.parametrize(("name", "content", "words"),
                         [pytest.param(*f, id=f[0]) for f in _bad_files()])
def test_bad_file_is_refused_in_one_line(tmp_path: Path, name: str, content: bytes, words: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    spec = catalog().get(DEFAULT_STAGE)
    target = _any_target("cuda" if name.endswith(".cu") else "opencl")
    report = grade_file(catalog(), spec, path, target, timing=False, limits=LIMITS)
    compiles = report.check("compiles")
    assert report.status != PASSED
    assert compiles.status == "failed", compiles.message
    assert words.lower() in compiles.message.lower(), compiles.message
    assert_one_line(compiles.message)
    assert report.check("correct").status == "skipped"


def _good_variants() -> list:
    """The reference with the line ends and byte-order mark of other editors: still passes."""
    params = []
    for t in targets():
        for variant in ("bom", "crlf", "cr"):
            params.append(pytest.param(variant, t, id=f"{variant}-{target_id(t)}"))
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


@pytest.mark.parametrize(("variant", "target"), _good_variants())
def test_editor_variants_of_the_reference_pass(tmp_path: Path, variant: str, target: Target) -> None:
    suffix = SUFFIX[target.backend]
    source = as_submission(catalog().reference_file(DEFAULT_STAGE, suffix).read_text(encoding="utf-8")).encode()
    data = {"bom": b"\xef\xbb\xbf" + source, "crlf": source.replace(b"\n", b"\r\n"),
            "cr": source.replace(b"\n", b"\r")}[variant]
    path = tmp_path / f"{variant}{suffix}"
    path.write_bytes(data)
    report = grade_file(catalog(), catalog().get(DEFAULT_STAGE), path, target, timing=False,
                        limits=PASSING_LIMITS)
    assert report.nothing_failed, [(c.name, c.message) for c in report.checks]


# -- the grader goes on after a fault, and timing cannot be gamed ----------------------------

def _crash_case(target: Target) -> Case:
    for case in corpus():
        if (case.path.stem.startswith("crash_far_write") and case.backend == target.backend
                and case.devices in (None, target.kind)):
            return case
    raise AssertionError(f"no crash_far_write kernel for {target_id(target)}")


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize("target", [pytest.param(t, id=target_id(t)) for t in targets()]
                         or [pytest.param(None, marks=pytest.mark.skip(reason="no usable device"))])
def test_next_grading_after_a_crash_works(target: Target) -> None:
    """Every submission gets a fresh child process: a crash (a dead process on a CPU device, a
    poisoned context on a GPU) leaves nothing behind for the next one."""
    crash = _crash_case(target)
    spec = catalog().get(crash.stage)
    crashed = grade_file(catalog(), spec, crash.path, target, timing=False, limits=LIMITS)
    assert crashed.check("correct").status == "failed", crashed.check("correct").message
    reference = catalog().reference_file(crash.stage, SUFFIX[target.backend])
    after = grade_file(catalog(), spec, reference, target, timing=False, limits=PASSING_LIMITS)
    assert after.nothing_failed, [(c.name, c.message) for c in after.checks]


def timing_params() -> list:
    params = []
    for path in sorted((KERNELS / "timing").glob("*.c[lu]")):
        case = read_timing_case(path)
        for t in targets():
            if case.backend == t.backend:
                params.append(pytest.param(case, t, id=f"{path.name}-{target_id(t)}"))
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


@pytest.mark.parametrize(("case", "target"), timing_params())
def test_timing_cannot_be_gamed(case: Case, target: Target) -> None:
    """A correct kernel that would skip its work when the output already holds the answer is
    timed doing the work: the grader poisons the outputs before every timed launch."""
    spec = catalog().get(case.stage)
    report = grade_file(catalog(), spec, case.path, target, timing=True, limits=LIMITS, cpu_timing=True)
    assert report.check("correct").status == PASSED, report.check("correct").message
    perf = report.performance
    assert perf is not None and perf.reference_time_ms, "not timed"
    assert perf.time_ms >= 0.5 * perf.reference_time_ms, (
        f"timed at {perf.time_ms:.4f} ms against the reference's {perf.reference_time_ms:.4f} ms: "
        f"the timed launches found the previous launch's results in place")
    assert not any("implausible" in f for f in report.flags), report.flags


def test_corpus_is_well_formed() -> None:
    cases = corpus()
    assert len(cases) >= 40
    for case in cases:
        assert case.check in ("compiles", "correct", "fast"), f"{case.path.name}: unknown check"
        assert case.status in ("failed", "error"), f"{case.path.name}: status must be failed or error"
        assert case.stage in catalog().ids(), f"{case.path.name}: no stage {case.stage!r}"
