from pathlib import Path

import pytest

from grader.course.catalog import Catalog, UnknownStageError
from grader.course.spec import SpecError, load_spec, parse_params
from tests.conftest import catalog

GOOD = """
[assignment]
id = "{id}"
title = "t"
track = "transpose"
stage = 1
problem = "transpose"
kernel = "transpose"
signature = "float *out, const float *in, int width, int height"
defines = {{ TILE_DIM = 32, BLOCK_ROWS = 8 }}
[launch]
block = ["TILE_DIM", "BLOCK_ROWS"]
grid = ["width / TILE_DIM", "height / TILE_DIM"]
[tests]
cases = [ {{ width = 32, height = 64 }} ]
[benchmark]
bytes = "2 * 4 * width * height"
[grading]
points = {{ compiles = 10, correct = 90 }}
"""


def write(tmp_path: Path, stage: str, text: str) -> Path:
    folder = tmp_path / "assignments" / stage
    folder.mkdir(parents=True)
    (folder / "assignment.toml").write_text(text)
    return folder


def test_every_shipped_spec_loads_and_names_real_stages():
    stages = catalog().stages
    assert stages, "the course has no stages"
    ids = {s.id for s in stages}
    for spec in stages:
        if spec.baseline:
            stage_id, _, name = spec.baseline.partition(":")
            assert stage_id in ids, f"{spec.id}: unknown baseline"
            for suffix in (".cu", ".cl"):
                assert catalog().reference_file(stage_id, suffix, name or "solution").exists()
        assert spec.readme().exists(), f"{spec.id}: no README.md"
        for suffix in (".cu", ".cl"):
            assert spec.skeleton(suffix).exists(), f"{spec.id}: no skeleton{suffix}"
            assert catalog().reference_file(spec.id, suffix).exists(), f"{spec.id}: no solution{suffix}"
        assert len(spec.test_cases) >= 3, f"{spec.id}: fewer than three test shapes"


def test_good_spec(tmp_path):
    spec = load_spec(write(tmp_path, "s1", GOOD.format(id="s1")))
    assert spec.launch_shape({"width": 64, "height": 96}) == ((2, 3), (32, 8))
    assert spec.work({"width": 32, "height": 32}) == (8192.0, None)
    assert [p.name for p in spec.kernel.params] == ["out", "in", "width", "height"]
    assert spec.kernel.declared("__global") == "__global float *out, __global const float *in, int width, int height"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace('id = "s2"', 'id = "other"'), "differs from its folder"),
        (lambda t: t.replace("[tests]\ncases = [ { width = 32, height = 64 } ]", "[tests]"), "cases is empty"),
        (lambda t: t.replace('"width / TILE_DIM"', '"widht / TILE_DIM"'), "widht"),
        (lambda t: t.replace("correct = 90", "correct = 60, fast = 30"), "baseline"),
        (lambda t: t.replace('problem = "transpose"\n', ""), "missing key 'problem'"),
        (lambda t: t + "\n[[", "assignment.toml"),
    ],
)
def test_broken_specs_say_why(tmp_path, change, message):
    with pytest.raises(SpecError, match=message):
        load_spec(write(tmp_path, "s2", change(GOOD.format(id="s2"))))


def test_dynamic_shared_memory_is_an_expression_of_the_defines_and_the_case(tmp_path):
    text = GOOD.format(id="s3").replace('grid = ["width / TILE_DIM", "height / TILE_DIM"]',
                                        'grid = ["width / TILE_DIM", "height / TILE_DIM"]\n'
                                        'dynamic_shared = "TILE_DIM * (TILE_DIM + 1) * 4"')
    spec = load_spec(write(tmp_path, "s3", text))
    assert spec.dynamic_shared_bytes({"width": 32, "height": 64}) == 32 * 33 * 4
    assert load_spec(write(tmp_path, "s4", GOOD.format(id="s4"))).dynamic_shared_bytes({"width": 32}) == 0


@pytest.mark.parametrize(("value", "message"), [('"TILE * 4"', "TILE"), ("true", "number of bytes"),
                                                ('"-4 * TILE_DIM"', "negative")])
def test_a_bad_dynamic_shared_declaration_says_why(tmp_path, value, message):
    text = GOOD.format(id="s5").replace('grid = ["width / TILE_DIM", "height / TILE_DIM"]',
                                        f'grid = ["width / TILE_DIM", "height / TILE_DIM"]\ndynamic_shared = {value}')
    with pytest.raises(SpecError, match=message):
        load_spec(write(tmp_path, "s5", text))


def test_unknown_stage_suggests(tmp_path):
    write(tmp_path, "transpose_x", GOOD.format(id="transpose_x"))
    with pytest.raises(UnknownStageError, match="did you mean transpose_x"):
        Catalog(tmp_path).get("transpose_y")


def test_parse_params():
    params = parse_params("const int M, const float * __restrict__ A, __global float *C")
    assert [(p.name, p.base_type, p.is_pointer) for p in params] == [
        ("M", "int", False), ("A", "float", True), ("C", "float", True)]


def test_a_plain_install_carries_the_course():
    """grader/course links to assignments/ and reference/ in a checkout; a wheel copies them (package
    data), and course_root() finds that copy where there is no checkout around the package."""
    import tomllib

    from grader.course import catalog as catalog_module

    package = Path(catalog_module.__file__).resolve().parent
    for part in ("assignments", "reference"):
        assert (package / part).resolve() == (package.parents[1] / part).resolve()
    data = tomllib.loads((package.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "assignments/**/*" in data["grader.course"] and "reference/**/*" in data["grader.course"]
