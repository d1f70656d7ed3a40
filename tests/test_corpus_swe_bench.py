"""SWE-bench instances, SWE-agent `.traj` trajectories and evaluation reports, on the project's fixture
(no SWE-bench data exists in ../shared/data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.ingest import ingest
from gcpc.corpus.swe_bench import outcome_of, parse_traj, read_tasks

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "swe_bench"
CFG = {"name": "swe", "format": "swe-bench", "benchmark": "swe-bench-verified", "root": "tests/fixtures/swe_bench",
       "tasks_file": "instances.jsonl",
       "trials_dirs": ["trajectories/sweagent-demo"],
       "reports_dirs": ["evaluation/sweagent-demo"]}


@pytest.fixture(scope="module")
def result():
    return ingest(CFG, REPO)


def test_tasks_problem_statement_and_test_ids_never_the_patch():
    tasks = read_tasks(FIXTURE / "instances.jsonl", "swe-bench-verified", root=[FIXTURE])
    calc, strutil = tasks
    assert calc.task_id == "demo__calc-101"
    assert calc.instruction.startswith("add() subtracts instead of adding")
    assert [t.id for t in calc.tests] == ["tests/test_calc.py::test_add_positive",
                                          "tests/test_calc.py::TestAdd::test_add[2-3-5]", "tests/test_calc.py::test_sub"]
    assert (calc.tests[1].file, calc.tests[1].cls, calc.tests[1].name) == ("tests/test_calc.py", "TestAdd", "test_add")
    assert calc.metadata["fail_to_pass"] == ["tests/test_calc.py::test_add_positive",
                                             "tests/test_calc.py::TestAdd::test_add[2-3-5]"]
    assert calc.metadata["repo"] == "demo/calc" and "test_patch.diff" in calc.verifier_files
    assert (strutil.tests[0].name, strutil.tests[0].cls) == ("test_reverse", "tests.test_strutil.ReverseTests")
    dumped = json.dumps([t.model_dump() for t in tasks])
    assert "SWE-SOLUTION-PATCH-0042" not in dumped and "SWE-HINT-0042" not in dumped


def test_traj_events_and_outcomes(result):
    calc = next(t for t in result.trajectories if t.task_id == "demo__calc-101")
    assert (calc.model, calc.harness, calc.source, calc.outcome.status) == (
        "example-model-2", "swe-agent", "sweagent-demo", "PASS")
    calls = [e for e in calc.events if e.kind.value == "tool_call"]
    assert calls[2].text == "edit 2:2\n    return a + b\nend_of_edit"
    assert calc.events[calls[2].index + 1].text.split("\n")[0] == "[File: /demo__calc/calc.py (2 lines total)]"
    assert calc.events[calls[1].index + 1].kind.value == "file_content"  # `open` shows a file
    assert calc.test_results["tests/test_calc.py::test_sub"] == "passed"
    src = calls[2].source
    raw = (FIXTURE / "trajectories/sweagent-demo/demo__calc-101/demo__calc-101.traj").read_bytes()
    assert json.loads(raw[src.byte_start:src.byte_end])["action"].startswith("edit 2:2")
    assert calc.events[1].text.startswith("[task prompt]") and calc.events[-1].text == "[agent exit] exit_status=submitted"
    strutil = next(t for t in result.trajectories if t.task_id == "demo__strutil-7")
    assert (strutil.outcome.status, strutil.outcome.reason) == ("other", "no evaluation report for this instance")


def test_report_outcomes():
    assert outcome_of({"resolved": False, "patch_exists": True}, "r.json").status == "FAIL"
    assert "did not apply" in outcome_of({"resolved": False, "patch_successfully_applied": False}, "r.json").reason
    assert "empty patch" in outcome_of({"patch_is_None": True}, "r.json").reason


def test_traj_without_trajectory_field_is_an_error():
    with pytest.raises(ValueError, match="field 'trajectory'"):
        parse_traj({"history": []}, "x.traj")


def test_unknown_instance_and_unreadable_traj_are_excluded(tmp_path):
    run = tmp_path / "runs" / "r1"
    (run / "ghost__x-1").mkdir(parents=True)
    (run / "ghost__x-1" / "ghost__x-1.traj").write_text("{}", encoding="utf-8")
    (run / "demo__calc-101").mkdir()
    (run / "demo__calc-101" / "demo__calc-101.traj").write_text('{"trajectory": [', encoding="utf-8")
    (tmp_path / "instances.jsonl").write_bytes((FIXTURE / "instances.jsonl").read_bytes())
    res = ingest({"name": "s", "format": "swe-bench", "tasks_file": "instances.jsonl", "trials_dirs": ["runs/r1"]},
                 tmp_path)
    reasons = {e.path: e.reason for e in res.exclusions}
    assert reasons["runs/r1/ghost__x-1/ghost__x-1.traj"].startswith("unknown task: 'ghost__x-1'")
    assert reasons["runs/r1/demo__calc-101/demo__calc-101.traj"].startswith(
        "unreadable agent log: runs/r1/demo__calc-101/demo__calc-101.traj: invalid JSON")
