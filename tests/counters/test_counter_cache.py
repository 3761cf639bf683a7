"""The trusted kernels' counters kept on disk (grader.counters.cache), with the stand-in ncu of
test_profile_run: a second grading on the same GPU profiles only the submission; anything the
values depend on, changed, profiles the trusted kernels again; a folder others may write is
not believed."""

import os
import stat
import sys
from dataclasses import replace

import pytest

from grader.backends.registry import by_name
from grader.counters import cache, ncu, runner
from grader.counters.view import build
from tests.conftest import catalog
from tests.counters.test_profile_run import FAKE

RECORD = 'open(os.environ["STAND_IN_RECORD"], "a").write(",".join(r["role"] for r in request["roles"]) + "\\n")\n'
FACTS = cache.DeviceFacts("Stand-in GPU", "pci:0000:01:00", "550.54.15", "GPU-1234")


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    folder = tmp_path / "nsight"
    folder.mkdir()
    tool = folder / "ncu"
    text = FAKE.format(python=sys.executable)
    text = text.replace("request = json.loads(sys.stdin.read())\n",
                        "request = json.loads(sys.stdin.read())\nimport os\n" + RECORD)
    tool.write_text(text)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(ncu.NCU_ENV, str(tool))
    monkeypatch.setenv("STAND_IN_RECORD", str(tmp_path / "runs.txt"))
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (tmp_path / "no-params",))
    return tmp_path


def runs(tmp_path) -> list[str]:
    path = tmp_path / "runs.txt"
    return path.read_text().split() if path.exists() else []


def grade(spec_id="transpose_coalesced", facts=FACTS, source="src"):
    spec = catalog().get(spec_id)
    return runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, source, "x.cu"), sandboxed=False,
                          facts=facts)


def shown(result):
    row = build(catalog().get("transpose_coalesced"), result).rows[0]
    return row.yours, row.reference, row.baseline


def test_the_second_grading_profiles_only_the_submission(stand_in):
    first = grade()
    assert first.ok, first.line
    assert runs(stand_in) == ["baseline,reference", "submission"]  # no submission beside the kept numbers
    assert first.roles == ("baseline", "reference", "submission") and first.cached == ()
    second = grade(source="other source")
    assert second.ok, second.line
    assert runs(stand_in) == ["baseline,reference", "submission", "submission"]
    assert second.cached == ("baseline", "reference") and second.roles == ("baseline", "reference", "submission")
    assert shown(second) == shown(first) == (32.0, 4.0, 32.0)
    entries = list((stand_in / "cache").glob("*.json"))
    assert len(entries) == 2 and all(stat.S_IMODE(e.stat().st_mode) == 0o600 for e in entries)
    assert stat.S_IMODE((stand_in / "cache").stat().st_mode) == 0o700


@pytest.mark.parametrize("change", ["driver", "device", "uuid", "metrics", "ncu", "source"])
def test_a_changed_key_profiles_the_trusted_kernels_again(stand_in, monkeypatch, change):
    assert grade().ok
    facts, spec_id = FACTS, "transpose_coalesced"
    if change == "driver":
        facts = replace(FACTS, driver="560.28.03")
    elif change == "device":
        facts = replace(FACTS, device_id="pci:0000:02:00")
    elif change == "uuid":
        facts = replace(FACTS, uuid="GPU-5678")
    elif change == "metrics":
        from grader.course.counter_spec import BUILTIN

        spec = catalog().get(spec_id)
        more = (*spec.counters.metrics, *BUILTIN["warp_instructions"].metrics)
        result = runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "s", "x.cu"), sandboxed=False,
                                facts=FACTS, metrics=more)
        assert result.ok and result.cached == ()
        assert runs(stand_in)[-2:] == ["baseline,reference", "submission"]
        return
    elif change == "ncu":
        tool = stand_in / "nsight" / "ncu"
        tool.write_text(tool.read_text() + "# another version\n")
    elif change == "source":
        original = runner.role_key

        def edited(catalog_, spec, role, metrics, facts_, tool_, *route):  # the reference's file as if edited
            return original(catalog_, spec, role, metrics, facts_, tool_, *route) + (
                "-edited" if role.role == "reference" else "")
        monkeypatch.setattr(runner, "role_key", edited)
    again = grade(spec_id, facts)
    assert again.ok, again.line
    expected = "reference" if change == "source" else "baseline,reference"
    assert runs(stand_in)[-2:] == [expected, "submission"]


def test_the_key_covers_the_kernels_source_and_the_case(stand_in, tmp_path):
    spec = catalog().get("transpose_coalesced")
    role = runner.roles_for(catalog(), spec, None, "")[1]
    tool = str(stand_in / "nsight" / "ncu")
    first = runner.role_key(catalog(), spec, role, spec.counters.metrics, FACTS, tool)
    assert first == runner.role_key(catalog(), spec, role, spec.counters.metrics, FACTS, tool)
    other_case = replace(spec, counters=replace(spec.counters, case={"width": 512, "height": 512}))
    assert runner.role_key(catalog(), other_case, role, spec.counters.metrics, FACTS, tool) != first
    copy = tmp_path / "course"
    import shutil

    shutil.copytree(catalog().root / "assignments", copy / "assignments")
    shutil.copytree(catalog().root / "reference", copy / "reference")
    from grader.course.catalog import Catalog

    moved = Catalog(copy)
    assert runner.role_key(moved, moved.get(spec.id), role, spec.counters.metrics, FACTS, tool) == first
    path = copy / role.path
    path.write_text(path.read_text() + "\n// edited\n")
    assert runner.role_key(moved, moved.get(spec.id), role, spec.counters.metrics, FACTS, tool) != first


def test_a_folder_others_may_write_is_not_believed(stand_in):
    assert grade().ok
    folder = stand_in / "cache"
    folder.chmod(0o777)
    try:
        result = grade()
        assert result.ok and result.cached == ()
        assert runs(stand_in)[-2:] == ["baseline,reference", "submission"]
    finally:
        folder.chmod(0o700)


def test_an_entry_others_may_write_or_a_link_is_not_believed(stand_in, tmp_path):
    assert grade().ok
    entries = sorted((stand_in / "cache").glob("*.json"))
    entries[0].chmod(0o666)
    target = tmp_path / "elsewhere.json"
    entries[1].rename(target)
    os.symlink(target, entries[1])
    assert cache.load(entries[0].stem, "reference") is None
    assert cache.load(entries[1].stem, "reference") is None


def test_no_facts_or_the_cache_off_reads_every_role_in_one_run(stand_in, monkeypatch):
    assert grade(facts=None).ok
    assert runs(stand_in) == ["baseline,reference,submission"]
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert grade().ok and grade().cached == ()
    assert runs(stand_in)[1:] == ["baseline,reference,submission"] * 2


def test_device_facts_need_a_pci_address_and_a_driver(monkeypatch):
    assert cache.device_facts("GPU", "opencl:Portable:cpu:0") is None
    monkeypatch.setattr(cache, "driver_version", lambda: "")
    assert cache.device_facts("GPU", "pci:0000:01:00") is None
    monkeypatch.setattr(cache, "driver_version", lambda: "550.54.15")
    assert cache.device_facts("GPU", "pci:0000:01:00") == cache.DeviceFacts("GPU", "pci:0000:01:00", "550.54.15", "")


def start(source="src", kind="gpu"):
    spec = catalog().get("transpose_coalesced")
    roles = runner.roles_for(catalog(), spec, source, "x.cu")
    return roles, runner.start_submission_run(catalog(), spec, roles, by_name("cuda"), kind, None, sandboxed=False)


def test_a_run_started_before_the_worker_profiles_the_submission_when_asked(stand_in):
    """ncu (its stand-in) starts with the grading and waits for the request on its stdin."""
    from grader import worker_process

    assert grade().ok  # the trusted roles' counters kept
    roles, started = start(source="other source")
    assert started is not None and started.proc.poll() is None and started in worker_process._live
    assert runs(stand_in) == ["baseline,reference", "submission"]  # nothing profiled before the request
    spec = catalog().get("transpose_coalesced")
    result = runner.profile(catalog(), spec, roles, sandboxed=False, facts=FACTS, started=started)
    assert result.ok and result.cached == ("baseline", "reference"), result.line
    assert runs(stand_in) == ["baseline,reference", "submission", "submission"]
    assert started.proc.returncode is not None and not started.folder.exists()
    assert started not in worker_process._live


def test_a_started_run_not_needed_is_ended(stand_in):
    """Without device facts every role is read in one run: the submission's own run is ended unused."""
    roles, started = start()
    spec = catalog().get("transpose_coalesced")
    result = runner.profile(catalog(), spec, roles, sandboxed=False, facts=None, started=started)
    assert result.ok and runs(stand_in) == ["baseline,reference,submission"]
    assert started.proc.returncode is not None and not started.folder.exists()


def test_no_run_is_started_where_none_would_be_read(stand_in, monkeypatch):
    assert start(kind="cpu")[1] is None
    monkeypatch.setenv(cache.CACHE_ENV, "off")  # the submission would be read with the trusted roles
    assert start()[1] is None
    monkeypatch.setenv(cache.CACHE_ENV, str(stand_in / "cache"))
    monkeypatch.setenv(ncu.NCU_ENV, "off")
    assert start()[1] is None


def test_a_grading_on_a_cpu_device_ends_the_run_it_started(stand_in, monkeypatch):
    """`lab grade x.cl` lets the worker pick the device (kind "unknown"), so the grading starts the
    submission's run; on PoCL's CPU device no counters are read and the run is ended unused."""
    pytest.importorskip("pyopencl")
    from grader import worker_process
    from grader.backends.discovery import choose, discover
    from grader.backends.registry import Target, by_name
    from grader.counters.model import Unavailable
    from grader.grading import GradeOptions, GradeRequest, grade
    from tests.counters.test_reasons import EXAMPLE

    found = discover((by_name("opencl"),))
    if not found.targets or choose(found, by_name("opencl")).kind != "cpu":
        pytest.skip("the default OpenCL device here is not a CPU (PoCL)")
    spec = catalog().get("transpose_coalesced")
    seen = []
    original = runner.ProfilingRun.__init__

    def remember(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(runner.ProfilingRun, "__init__", remember)
    report = grade(GradeRequest(catalog(), spec, EXAMPLE.read_text(), by_name("opencl"), Target.to_choose(by_name("opencl")), "x.cl",
                                GradeOptions(plugins={"counters": True})))
    assert report.section("counters").reason == Unavailable.CPU_DEVICE
    # the submission's run, and (nothing kept here yet) the trusted roles': both ended unused
    assert len(seen) == 2 and all(r.proc.returncode is not None and not r.folder.exists() for r in seen)
    assert not set(seen) & set(worker_process._live)
    assert runs(stand_in) == []  # neither got a request
    seen.clear()
    report = grade(GradeRequest(catalog(), spec, EXAMPLE.read_text(), by_name("opencl"), Target.to_choose(by_name("opencl")),
                                "x.cl"))  # the default
    assert report.section("counters") is None  # a CPU device: nothing said, not even why
    assert len(seen) == 2 and all(r.proc.returncode is not None and not r.folder.exists() for r in seen)
    assert runs(stand_in) == []


def test_a_first_grading_starts_the_trusted_roles_run_beside_the_worker(stand_in):
    """Where this machine never kept the stage's trusted counters, their run is started before the
    worker too and used after it; once kept, no such run is started again."""
    spec = catalog().get("transpose_coalesced")
    roles = runner.roles_for(catalog(), spec, "src", "x.cu")
    trusted = runner.start_trusted_run(catalog(), spec, roles, by_name("cuda"), "gpu", None, sandboxed=False)
    started = runner.start_submission_run(catalog(), spec, roles, by_name("cuda"), "gpu", None, sandboxed=False)
    assert trusted is not None and trusted.names == ["baseline", "reference"] and trusted.proc.poll() is None
    result = runner.profile(catalog(), spec, roles, sandboxed=False, facts=FACTS, started=started,
                            started_trusted=trusted)
    assert result.ok and result.cached == () and result.roles == ("baseline", "reference", "submission")
    assert runs(stand_in) == ["baseline,reference", "submission"]
    assert trusted.proc.returncode is not None and not trusted.folder.exists()
    assert runner.start_trusted_run(catalog(), spec, roles, by_name("cuda"), "gpu", None, sandboxed=False) is None
    # another metric list (the default's lesson metrics) is another hint: started again
    again = runner.start_trusted_run(catalog(), spec, roles, by_name("cuda"), "gpu", None, sandboxed=False,
                                     metrics=spec.counters.lesson_metrics)
    assert again is not None
    again.discard()
    assert runs(stand_in) == ["baseline,reference", "submission"]


def test_a_wrong_guess_costs_no_number(stand_in):
    """Seen here, but not kept for this GPU (another device, driver): read after the worker, as before."""
    assert grade().ok
    spec = catalog().get("transpose_coalesced")
    roles = runner.roles_for(catalog(), spec, "src", "x.cu")
    assert runner.start_trusted_run(catalog(), spec, roles, by_name("cuda"), "gpu", None, sandboxed=False) is None
    result = runner.profile(catalog(), spec, roles, sandboxed=False, facts=replace(FACTS, driver="560.28.03"))
    assert result.ok and result.cached == () and shown(result) == (32.0, 4.0, 32.0)
