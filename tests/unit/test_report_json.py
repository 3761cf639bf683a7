"""Report.from_json reads back exactly what render_json wrote, and refuses what it cannot read
with one line naming the field."""

import inspect
import json
from dataclasses import replace

import pytest

import tests.unit.test_scoring_and_feedback as scoring_tests
from grader.counters.model import Unavailable
from grader.counters.view import CounterRow, CountersShown
from grader.course.counter_spec import Better
from grader.feedback import render_json
from grader.report import DeviceShown, Report
from grader.sandbox import SandboxInfo
from tests.unit.test_scoring_and_feedback import spec  # noqa: F401 - the fixture, for the scoring tests

SCORING_TESTS = [f for name, f in inspect.getmembers(scoring_tests, inspect.isfunction)
                 if name.startswith("test_")]


def reports_made_by(test, scoring_spec, tmp_path, monkeypatch) -> list[Report]:
    """Every Report `test` built (each passes Report.__post_init__)."""
    made: list[Report] = []
    original = Report.__post_init__

    def record(self: Report) -> None:
        original(self)
        made.append(self)

    monkeypatch.setattr(Report, "__post_init__", record)
    given = {"spec": scoring_spec, "tmp_path": tmp_path}
    test(**{name: given[name] for name in inspect.signature(test).parameters})
    monkeypatch.undo()
    return made


@pytest.mark.parametrize("test", SCORING_TESTS, ids=lambda f: f.__name__)
def test_every_report_of_the_scoring_tests_round_trips(test, spec, tmp_path, monkeypatch):  # noqa: F811
    for report in reports_made_by(test, spec, tmp_path, monkeypatch):
        assert Report.from_json(render_json(report)) == report
        assert Report.from_json(json.loads(render_json(report))) == report


def a_report(**changes) -> Report:
    counters = CountersShown(True, None, "", {"n": 4}, (CounterRow(
        "dram", "DRAM bytes", Better.LOWER, 1, 2.0, 1.5, None, True, "more than the reference"),),
        True, "", {"baseline": "failed"}, 0.5, "H100", "")
    report = Report("a", "A", "idea", "opencl", DeviceShown("d", "cpu"), "k.cl", "pending", 90, 100, [],
                    None, phase_log=[("compiling", 0.25)], output_tile=(16, 32),
                    sandbox=SandboxInfo(True, "nobody"), sections={"counters": counters})
    return replace(report, **changes)


def test_nested_types_come_back_typed():
    report = a_report()
    again = Report.from_json(render_json(report))
    assert again == report
    assert again.phase_log == [("compiling", 0.25)] and again.output_tile == (16, 32)
    shown = again.section("counters")
    assert isinstance(shown, CountersShown) and shown.rows[0].better is Better.LOWER
    unavailable = a_report(sections={"counters": CountersShown(False, Unavailable.CPU_DEVICE, "a CPU device")})
    assert Report.from_json(render_json(unavailable)) == unavailable


def test_unknown_keys_are_ignored_and_defaulted_fields_may_be_absent():
    data = json.loads(render_json(a_report()))
    data["written_by_a_later_grader"] = {"x": 1}
    data["checks"] = [{"name": "compiles", "status": "passed", "message": "", "extra": 1}]
    for name in ("phase_log", "sandbox", "counters", "hints"):
        del data[name]
    again = Report.from_json(data)
    assert again.phase_log == [] and again.sandbox is None and again.section("counters") is None
    assert again.checks[0].points == 0


@pytest.mark.parametrize("change, named", [
    (lambda d: d.pop("score"), "score: missing"),
    (lambda d: d.update(status="splendid"), "status: 'splendid' is not one of"),
    (lambda d: d.update(max_score="100"), "max_score: expected an integer, found str"),
    (lambda d: d.update(checks=[{"name": "fast", "status": "failed", "message": 3}]),
     "checks[0].message: expected a string, found int"),
    (lambda d: d.update(checks=[{"name": "fast", "status": "failed", "message": "", "failure": "odd"}]),
     "checks[0].failure: 'odd' is not one of"),
    (lambda d: d.update(output_tile=[1, 2, 3]), "output_tile: expected 2 items, found 3"),
    (lambda d: d["counters"]["rows"][0].update(yours="many"), "counters.rows[0].yours: expected a number"),
    (lambda d: d.update(sandbox=True), "sandbox: expected an object, found bool"),
])
def test_a_missing_or_malformed_field_is_named(change, named):
    data = json.loads(render_json(a_report()))
    change(data)
    with pytest.raises(ValueError) as caught:
        Report.from_json(data)
    assert named in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["", "[1, 2]", "{", "null"])
def test_text_that_is_no_report_is_refused(text):
    with pytest.raises(ValueError, match="report"):
        Report.from_json(text)
