"""The table of environment variables (grader.settings): every one the lab reads is declared
there and read through its declaration, each is documented, and each reads its text as the
code before it did."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import settings
from grader.settings import SETTINGS, Audience, SandboxMode, SettingError, Tool
from grader.worker_process import WorkerStart

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lab", "grader")
SETTINGS_FILE = ROOT / "grader" / "settings.py"
LAB_NAME = "LAB_"
# Names of the lab's own spelled in code, that are no environment variable: a macro of the
# toolchain probe's kernel (grader.toolchain_probe).
NOT_VARIABLES = frozenset({"LAB_PROBE_TOKEN"})


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants in `tree`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def lab_names_in_code(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each string constant in `path`'s code that is a whole LAB_* name: what
    reading (or setting) such a variable by name takes, as os.environ.get("LAB_X"), env["LAB_X"],
    X_ENV = "LAB_X" or getenv("LAB_X"). Docstrings, and names inside longer texts (messages,
    f-strings' literal parts), are not such reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and node.value.startswith(LAB_NAME) and len(node.value) > len(LAB_NAME)
                and node.value.replace("_", "").isalnum()
                and node.value.upper() == node.value and node.value not in NOT_VARIABLES):
            found.append((node.lineno, node.value))
    return found


def environ_reads(path: Path) -> list[tuple[int, str]]:
    """(line, source) of each read of os.environ or os.getenv by a constant name in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            owner = ast.unparse(node.func.value)
            if (owner.endswith("environ") and node.func.attr in ("get", "pop", "setdefault")) or \
                    ast.unparse(node.func) in ("os.getenv", "getenv"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.append((node.lineno, ast.unparse(node)))
    return found


def project_files() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if path != SETTINGS_FILE]


def test_no_module_but_the_settings_names_a_lab_variable():
    """A LAB_* variable is read through its declaration (settings.value(settings.X)), so its
    name is written once, in grader/settings.py."""
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in project_files()
             for line, name in lab_names_in_code(path)]
    assert not found, "LAB_* names written outside grader/settings.py:\n" + "\n".join(found)


def test_every_environment_variable_read_by_name_is_declared():
    """os.environ.get("X") and its like, outside grader/settings.py, only for variables the lab
    does not own (PATH, PYTHONPATH, ..., Slurm's): every declared one is read through the table."""
    declared = {s.name for s in SETTINGS}
    found = [f"{path.relative_to(ROOT)}:{line}: {source}" for path in project_files()
             for line, source in environ_reads(path) if any(f"'{name}'" in source for name in declared)]
    assert not found, "declared variables read from os.environ directly:\n" + "\n".join(found)


def test_the_checks_find_what_they_look_for(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""LAB_DOC is documentation."""\nimport os\nNAME = "LAB_THING"\n'
                      'os.environ.get("XDG_CACHE_HOME")\nos.environ["HOME"]\nf"LAB_SANDBOX={1}"\n')
    assert lab_names_in_code(module) == [(3, "LAB_THING")]
    assert [line for line, _ in environ_reads(module)] == [4, 5]


def test_each_setting_is_declared_once_with_what_the_table_shows():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    for setting in SETTINGS:
        assert setting.meaning.strip() and setting.default.strip(), setting.name
        assert setting.audience and all(isinstance(a, Audience) for a in setting.audience), setting.name
        assert settings.named(setting.name) is setting


def test_every_setting_reads_an_unset_variable_as_its_default(monkeypatch):
    for setting in SETTINGS:
        monkeypatch.delenv(setting.name, raising=False)
    for setting in SETTINGS:
        setting.shown()  # never raises where unset
    assert settings.value(settings.SANDBOX) == SandboxMode.ON
    assert settings.value(settings.SANDBOX_USER) == "nobody"
    assert settings.value(settings.COUNTERS) is True and settings.value(settings.POCL_KERNEL_CACHE) is True
    assert settings.value(settings.NCU) == Tool() and settings.value(settings.BACKENDS) == ()
    assert settings.value(settings.COURSE_ROOT) is None and settings.value(settings.COUNTERS_KEEP) is None
    assert settings.value(settings.DEVICE_QUEUE) == settings.DEFAULT_DEVICE_QUEUE
    assert settings.value(settings.AUTOGRADER_ROOT) == settings.DEFAULT_AUTOGRADER_ROOT


def test_the_caches_are_under_xdg_cache_home_or_off(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for name in ("LAB_KERNEL_CACHE", "LAB_COUNTER_CACHE"):
        monkeypatch.delenv(name, raising=False)
    assert settings.value(settings.KERNEL_CACHE) == tmp_path / "gpu-teaching-lab" / "kernels"
    assert settings.value(settings.COUNTER_CACHE) == tmp_path / "gpu-teaching-lab" / "counters"
    for word in ("off", "OFF", "0", "none"):
        monkeypatch.setenv("LAB_KERNEL_CACHE", word)
        monkeypatch.setenv("LAB_COUNTER_CACHE", word)
        assert settings.value(settings.KERNEL_CACHE) is None and settings.value(settings.COUNTER_CACHE) is None
    monkeypatch.setenv("LAB_COUNTER_CACHE", "~/counters")
    assert settings.value(settings.COUNTER_CACHE) == Path("~/counters").expanduser()


@pytest.mark.parametrize(("text", "mode"), [("", "on"), ("ON", "on"), ("yes", "on"), (" off ", "off"),
                                            ("0", "off"), ("none", "off"), ("require", "require")])
def test_lab_sandbox_reads_its_words(monkeypatch, text, mode):
    monkeypatch.setenv("LAB_SANDBOX", text)
    assert settings.value(settings.SANDBOX) == mode


def test_a_value_that_cannot_be_used_is_one_line_naming_the_variable(monkeypatch):
    monkeypatch.setenv("LAB_SANDBOX", "requried")
    with pytest.raises(SettingError) as raised:
        settings.value(settings.SANDBOX)
    assert str(raised.value) == "LAB_SANDBOX='requried': it must be on, off or require"
    row = next(r for r in settings.rows() if r.name == "LAB_SANDBOX")
    assert row.value is None and row.set_to == "requried" and row.problem == str(raised.value)


@pytest.mark.parametrize(("text", "tool"), [("", Tool()), ("off", Tool(off=True)), (" Off ", Tool(off=True)),
                                            ("/opt/ncu", Tool(path="/opt/ncu"))])
def test_a_tool_is_off_a_path_or_found_as_usual(monkeypatch, text, tool):
    monkeypatch.setenv("LAB_NCU", text)
    monkeypatch.setenv("LAB_CUPTI", text)
    assert settings.value(settings.NCU) == tool == settings.value(settings.CUPTI)


def test_more_backends_are_a_comma_separated_list(monkeypatch):
    monkeypatch.setenv("LAB_BACKENDS", " a.b , ,c ")
    assert settings.value(settings.BACKENDS) == ("a.b", "c")


def test_the_device_queue_is_a_folder_or_off(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_DEVICE_QUEUE", f" {tmp_path} ")
    assert settings.value(settings.DEVICE_QUEUE) == tmp_path
    for word in ("off", "no", "False"):
        monkeypatch.setenv("LAB_DEVICE_QUEUE", word)
        assert settings.value(settings.DEVICE_QUEUE) is None


def test_a_worker_is_told_what_it_needs_before_its_request_on_its_command_line():
    start = WorkerStart("opencl", sandboxed=True, cache_templates=("/tmp/t", "/tmp/u"))
    assert start.argv() == ["--backend", "opencl", "--sandboxed", "--cache-template", "/tmp/t",
                            "--cache-template", "/tmp/u"]
    assert WorkerStart.from_argv(start.argv()) == start
    resident = WorkerStart("cuda", resident=True)
    assert resident.argv() == ["--backend", "cuda", "--resident"]
    assert WorkerStart.from_argv(resident.argv()) == resident
    assert WorkerStart.from_argv([]) == WorkerStart()
    with pytest.raises(ValueError, match="--preload"):
        WorkerStart.from_argv(["--preload", "cuda"])


def test_the_worker_gets_the_sandboxs_answers_after_its_command(monkeypatch):
    """WorkerProcess appends WorkerStart's arguments to the launch the sandbox made (its
    command ends the argv), so the worker reads them, not its environment."""
    import sys

    from grader import sandbox, worker_process
    from grader.backends import registry

    launched = {}

    def wrap(command, env, **kwargs):
        launched["backend"] = kwargs.get("backend")
        return sandbox.Launch(["bwrap", "--", *command], dict(env), sandbox.SandboxInfo(True, "nobody"),
                              cache_templates=("/cache/nv/555.1",))

    class Started(Exception):
        pass

    def popen(argv, **kwargs):
        launched["argv"], launched["env"] = argv, kwargs["env"]
        raise Started

    monkeypatch.setattr(worker_process.sandbox, "wrap", wrap)
    monkeypatch.setattr(worker_process.subprocess, "Popen", popen)
    with pytest.raises(Started):
        worker_process.WorkerProcess(registry.by_name("opencl"))
    tail = launched["argv"][launched["argv"].index("grader.worker") + 1:]
    assert launched["backend"] is registry.by_name("opencl")
    assert WorkerStart.from_argv(tail) == WorkerStart("opencl", sandboxed=True, cache_templates=("/cache/nv/555.1",))
    assert launched["argv"][:2] == ["bwrap", "--"] and launched["argv"][2] == sys.executable
    assert not [name for name in launched["env"] if name in ("LAB_WORKER_PRELOAD", "LAB_SANDBOXED")]
