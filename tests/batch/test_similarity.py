"""The similarity check (issue 12, "copied kernels found"): fingerprints, ranking on a class with
known copies, what is left out (skeleton, lecture kernel), the outputs and their escaping, the
speed on a stage of 300. No device: nothing here compiles or runs a kernel."""

from __future__ import annotations

import csv
import io
import random
import time

import pytest

from grader.backends.registry import by_name
from grader.report import PASSED, DeviceShown, Report
from lab.batch.fingerprint import K, W, fingerprint, kgram_hashes, tokenize, winnow
from lab.batch.keys import batch_options
from lab.batch.layout import scan
from lab.batch.outcome import outcome_of
from lab.batch.outputs import SIMILARITY_CSV, SIMILARITY_HTML, SUMMARY, write_class_outputs
from lab.batch.similarity import REPORT_AT, Skip, Source, compare_class, compare_stage, stage_boilerplate
from lab.batch.similarity_report import render_similarity_csv, render_similarity_html
from lab.batch.store import ResultStore
from lab.batch.stored import StoredResult
from lab.batch.summary import BatchStats
from tests.batch import similar_class
from tests.batch.similar_class import STAGE
from tests.conftest import catalog
from tests.hostile import formula_cells, parse_html, raw_characters


def texts(source: str) -> list[str]:
    return [t.text for t in tokenize(source)]


def scores(root):
    layout = scan(root, catalog().ids())
    result = compare_class(catalog(), layout.submissions, report_at=0.0, max_pairs=10_000)
    (stage,) = result.stages
    return {frozenset({p.a.source.student, p.b.source.student}): p.score for p in stage.pairs}, stage


# --- fingerprints -------------------------------------------------------------------------------

def test_comments_layout_and_names_do_not_count_but_builtins_do():
    one = "int tid = get_local_id(0); // mine\nout[tid] = a[tid] * 2.0f;"
    two = "/* other */ int   k=get_local_id(0);\n\n  res[k]=\n b[k]*2.0;"
    assert texts(one) == texts(two)
    assert "@lid0" in texts(one) and "ID" in texts(one) and "tid" not in texts(one)
    assert texts("x = get_local_id(1);") != texts(one)
    assert texts("#pragma unroll\nfor (;;) {}") == texts("for (;;) {}")


def test_cuda_and_opencl_read_alike():
    for stage in ("matmul_tiled", "reduce_sequential", "transpose_coalesced"):
        cu = catalog().reference_file(stage, ".cu").read_text(encoding="utf-8")
        cl = catalog().reference_file(stage, ".cl").read_text(encoding="utf-8")
        assert texts(cu) == texts(cl), stage
    assert texts("__syncthreads();") == texts("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
    assert texts("__shared__ float s[4];") == texts("__local float s[4];")


def test_winnowing_picks_one_fingerprint_in_every_window_and_is_stable():
    hashes = kgram_hashes(tokenize(similar_class.SDK_STEPS))
    chosen = winnow(hashes)
    assert chosen == sorted(set(chosen))
    for start in range(len(hashes) - W + 1):
        assert any(start <= c < start + W for c in chosen)
    assert len(chosen) < len(hashes) * 0.6
    assert winnow([5, 1, 1, 3], 2) == [1, 2]  # ties: the rightmost
    with pytest.raises(ValueError):
        winnow(hashes, 0)
    assert fingerprint(similar_class.SDK_STEPS).hashes == fingerprint(similar_class.SDK_STEPS).hashes
    assert fingerprint("int a;").hashes == frozenset()  # fewer than K tokens: no fingerprint


def test_hashes_do_not_depend_on_the_process():
    """A rerun (another process, another PYTHONHASHSEED) must rank the same pairs the same way."""
    import subprocess
    import sys

    code = ("from lab.batch.fingerprint import fingerprint; "
            "print(sorted(fingerprint('int a = b * c + d[e]; f(g, h);').hashes)[:3])")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, cwd=catalog().root).stdout
            for seed in ("1", "2")}
    assert len(seen) == 1


# --- ranking ---------------------------------------------------------------------------------------

def test_copied_pairs_rank_above_every_independent_pair(tmp_path):
    room = similar_class.build(tmp_path / "subs")
    found, stage = scores(room.root)
    assert stage.compared == len(similar_class.SUBMISSIONS) and not stage.skipped
    copied = {pair: found.get(pair, 0.0) for pair in room.copied}
    independent = {pair: score for pair, score in found.items() if pair not in room.copied}
    assert min(copied.values()) >= REPORT_AT, copied
    assert max(independent.values()) < REPORT_AT, max(independent.items(), key=lambda kv: kv[1])
    assert min(copied.values()) > max(independent.values()) + 0.3  # a wide margin, not a tie-break
    ranked = [frozenset({p.a.source.student, p.b.source.student}) for p in stage.pairs]
    assert set(ranked[:len(room.copied)]) == set(room.copied)


def test_a_copy_ported_from_cuda_to_opencl_is_found(tmp_path):
    room = similar_class.build(tmp_path / "subs")
    found, _ = scores(room.root)
    assert found[frozenset({"goran", "jun"})] >= REPORT_AT  # goran's .cu, jun's .cl


def test_copies_disguised_at_random_are_found(tmp_path):
    rng = random.Random(7)
    extra = {f"copy{n}": (".cl", similar_class.disguise(similar_class.GLOBAL_ID, rng)) for n in range(3)}
    room = similar_class.build(tmp_path / "subs", extra)
    found, _ = scores(room.root)
    ring = ["chidi", "copy0", "copy1", "copy2"]
    for x in range(len(ring)):
        for y in range(x + 1, len(ring)):
            assert found[frozenset({ring[x], ring[y]})] >= 0.9
    assert max(s for pair, s in found.items() if not pair <= set(ring) and pair not in room.copied) < REPORT_AT


def test_the_skeleton_and_the_lecture_kernel_are_no_ones_own(tmp_path):
    skeleton = (catalog().assignments / STAGE / "skeleton.cl").read_text(encoding="utf-8")
    skeleton_cu = (catalog().assignments / STAGE / "skeleton.cu").read_text(encoding="utf-8")
    lecture = catalog().reference_file(STAGE, ".cu").read_text(encoding="utf-8")
    room = similar_class.build(tmp_path / "subs", {
        "kept1": (".cl", skeleton), "kept2": (".cu", skeleton_cu),  # handed in untouched
        "lect1": (".cu", lecture), "lect2": (".cl", similar_class.LECTURE)})  # the lecture's kernel
    found, _ = scores(room.root)
    for pair in ({"kept1", "kept2"}, {"lect1", "lect2"}, {"lect1", "ayla"}, {"kept1", "lect1"}):
        assert found.get(frozenset(pair), 0.0) == 0.0, pair


def test_what_most_of_a_class_shares_is_left_out():
    # 12 students with one and the same kernel of their own, 20 others: that code is the class's.
    rng = random.Random(3)
    same = similar_class.disguise(similar_class.UNROLLED, rng)
    sources = [Source(f"s{n}", f"s{n}/{STAGE}.cl", by_name("opencl"), same) for n in range(12)]
    sources += [Source(f"t{n}", f"t{n}/{STAGE}.cl", by_name("opencl"), similar_class.LECTURE) for n in range(20)]
    boilerplate = stage_boilerplate(catalog(), STAGE)
    assert compare_stage(STAGE, sources, boilerplate).above == 0
    assert compare_stage(STAGE, sources[:10], boilerplate).above == 45  # 10 of 10: still theirs


def test_files_that_cannot_be_compared_are_listed_with_why(tmp_path):
    room = similar_class.build(tmp_path / "subs", {"empty": (".cl", ""), "tiny": (".cl", "int a;")})
    (room.root / "binary").mkdir()
    (room.root / "binary" / f"{STAGE}.cu").write_bytes(b"\x7fELF\x02\x01\xff\xfe" + bytes(range(256)))
    _, stage = scores(room.root)
    assert dict(stage.skipped) == {f"binary/{STAGE}.cu": Skip.NOT_TEXT, f"empty/{STAGE}.cl": Skip.TOO_SHORT,
                                   f"tiny/{STAGE}.cl": Skip.TOO_SHORT}


def test_the_side_by_side_shows_each_file_whole_with_the_common_code_marked(tmp_path):
    room = similar_class.build(tmp_path / "subs")
    _, stage = scores(room.root)
    for side in (side for pair in stage.pairs for side in (pair.a, pair.b)):
        lines = side.lines()
        assert "\n".join("".join(piece for piece, _ in line) for line in lines) == side.source.text.rstrip("\n")
        marked = [piece for line in lines for piece, matched in line if matched]
        assert marked and not any(piece[0].isspace() for piece in marked)  # indentation is no one's code
        assert not any("//" in piece or "/*" in piece for piece in marked)  # nor are comments
        assert "".join(piece for piece, _ in side.segments()) == side.source.text


# --- outputs ---------------------------------------------------------------------------------------

# Folder names may hold anything but "/" and NUL; a kernel's comments anything at all.
HOSTILE_NAME = " =1+1 \x1b[2J\x1b]0;pwned\x07 \u202egnp.exe <img src=x onerror=alert(1)> {{ 7*7 }} {% raw %}"
FORMULA_NAME = "=HYPERLINK(1)"
HOSTILE_COMMENT = "/* </pre></td><script>alert(1)</script> \x1b[31m \u202e {{ 7*7 }} =cmd|' /C calc'!A0 */\n"


def test_student_text_is_escaped_in_the_html_and_the_csv(tmp_path):
    nasty = HOSTILE_COMMENT + similar_class.UNROLLED.replace("total", "total /* <b onclick=x()> */")
    room = similar_class.build(tmp_path / "subs", {HOSTILE_NAME: (".cl", nasty), FORMULA_NAME: (".cl", nasty)})
    layout = scan(room.root, catalog().ids())
    result = compare_class(catalog(), layout.submissions)
    assert {HOSTILE_NAME, FORMULA_NAME} in [{p.a.source.student, p.b.source.student} for p in result.stages[0].pairs]
    page = render_similarity_html(result)
    parsed = parse_html(page)
    assert not {"script", "img", "b"} & set(parsed.tags) and not [k for k, _ in parsed.attributes if k.startswith("on")]
    assert not raw_characters(page.replace("\n", " ").replace("\t", " "))
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;/pre&gt;&lt;/td&gt;&lt;script&gt;" in page
    assert "{{ 7*7 }}" in page  # shown, never run as a template
    assert "<mark>" in page
    text = render_similarity_csv(result)
    rows = list(csv.reader(io.StringIO(text)))
    assert not formula_cells(rows) and not raw_characters(text.replace("\n", " "))
    cells = {cell for row in rows for cell in row}
    assert "'" + FORMULA_NAME in cells and f"'{FORMULA_NAME}/{STAGE}.cl" in cells


def test_the_batch_writes_the_files_and_the_summary_names_no_one(tmp_path):
    room = similar_class.build(tmp_path / "subs")
    layout = scan(room.root, catalog().ids())
    outcomes = [outcome_of(s, StoredResult(Report(s.stage, "t", "c", s.backend, DeviceShown("", ""), s.relative,
                                                  PASSED, 70, 100, [],
                                                  None)), True) for s in layout.submissions]
    stats = BatchStats(len(outcomes), len(outcomes), 0, 0, 60.0, 30.0, (), batch_options(timing=False))
    store = ResultStore(tmp_path / "out")
    write_class_outputs(store, catalog(), layout, outcomes, stats)
    summary = (store.root / SUMMARY).read_text(encoding="utf-8")
    assert 'href="similarity.html"' in summary and "3 pairs" in summary
    assert not any(student in summary for student in room.students)
    page = (store.root / SIMILARITY_HTML).read_text(encoding="utf-8")
    assert all(f"{student}/{STAGE}" in page for student in ("fatima", "hana", "goran", "jun", "emil", "ivo"))
    assert "this page names students" in page
    rows = list(csv.DictReader(io.StringIO((store.root / SIMILARITY_CSV).read_text(encoding="utf-8"))))
    assert [{r["student_a"], r["student_b"]} for r in rows] == [set(p) for p in sorted(
        room.copied, key=lambda p: -float(next(r["score"] for r in rows if {r["student_a"], r["student_b"]} == p)))]
    assert all(r["stage"] == STAGE and float(r["score"]) >= REPORT_AT for r in rows)


def test_a_student_folder_named_like_the_similarity_files_is_graded(tmp_path):
    (tmp_path / "subs" / SIMILARITY_HTML).mkdir(parents=True)
    (tmp_path / "subs" / SIMILARITY_HTML / f"{STAGE}.cl").write_text(similar_class.LECTURE, encoding="utf-8")
    layout = scan(tmp_path / "subs", catalog().ids())
    assert [s.student for s in layout.submissions] == [SIMILARITY_HTML] and not layout.not_graded
    assert ResultStore(tmp_path / "out").folder(layout.submissions[0]).parent.name != SIMILARITY_HTML


# --- speed -----------------------------------------------------------------------------------------

def test_a_stage_of_300_is_compared_in_seconds(tmp_path):
    rng = random.Random(12)
    bases = list(similar_class.SUBMISSIONS.values())
    sources = [Source(f"s{n:03d}", f"s{n:03d}/{STAGE}{bases[n % len(bases)][0]}", by_name("opencl"),
                      similar_class.disguise(bases[n % len(bases)][1], rng)) for n in range(300)]
    began = time.perf_counter()
    stage = compare_stage(STAGE, sources, stage_boilerplate(catalog(), STAGE))
    page = render_similarity_html(type(compare_class(catalog(), []))((stage,), REPORT_AT, K, W))
    took = time.perf_counter() - began
    assert stage.above > 1000 and len(stage.pairs) == 50 and "<mark>" in page
    assert took < 5.0, f"{took:.1f} s"  # 0.3 s on a 2-core CI machine
