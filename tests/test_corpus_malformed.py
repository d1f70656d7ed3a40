"""Malformed inputs give a clear error or a recorded exclusion/note naming the file and field; ingest goes on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_corpus_harbor import make_task, make_trial

from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.corpus.models import Trajectory

REPO = Path(__file__).resolve().parents[1]
TB1_FIXTURE = REPO / "tests" / "fixtures" / "terminal_bench_1" / "runs"


def _harbor(tmp_path: Path):
    return ingest({"name": "m", "benchmark": "skillsbench", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}, tmp_path)


def test_malformed_harbor_trials_are_excluded_or_noted_and_nothing_is_lost(tmp_path):
    make_task(tmp_path)
    good = make_trial(tmp_path, "j", "demo-task__good")
    lines = (good / "agent" / "claude-code.txt").read_text(encoding="utf-8").splitlines()
    make_trial(tmp_path, "j", "demo-task__trunc", log="\n".join(lines[:2]) + "\n" + lines[2][:25] + "\n")
    make_trial(tmp_path, "j", "demo-task__noresult", result=False, log="\n".join(lines[:3]) + "\n")
    bad_utf8 = make_trial(tmp_path, "j", "demo-task__latin1", log=False)
    (bad_utf8 / "agent" / "claude-code.txt").write_bytes(lines[0].encode() + b"\n" + b'{"type":"user","x":"caf\xe9"}\n')
    make_trial(tmp_path, "j", "demo-task__empty", log="")
    ctrf = make_trial(tmp_path, "j", "demo-task__ctrf", log="\n".join(lines[:2]) + "\n")
    (ctrf / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": "test_outputs.py::test_exists", "status": "passed"},
        {"name": "test_outputs.py::TestValue::test_value", "status": "exploded"}]}}), encoding="utf-8")
    atif_empty = make_trial(tmp_path, "j", "demo-task__atif", log=False)
    (atif_empty / "agent" / "trajectory.json").write_bytes(b"")

    result = _harbor(tmp_path)
    reasons = {e.path: e.reason for e in result.exclusions}
    assert reasons["jobs/j/demo-task__trunc"] == (
        "unreadable agent log: jobs/j/demo-task__trunc/agent/claude-code.txt:3: malformed JSON line "
        "(Unterminated string starting at)")
    assert reasons["jobs/j/demo-task__latin1"].startswith(
        "unreadable agent log: jobs/j/demo-task__latin1/agent/claude-code.txt:2: agent log is not UTF-8")
    assert reasons["jobs/j/demo-task__empty"] == ("empty agent log: no events in "
                                                  "jobs/j/demo-task__empty/agent/claude-code.txt")
    assert reasons["jobs/j/demo-task__atif"] == ("unreadable agent log: jobs/j/demo-task__atif/agent/trajectory.json: "
                                                 "empty file")
    kept = {t.trial: t for t in result.trajectories}
    assert kept["demo-task__noresult"].outcome.status == "other"
    assert kept["demo-task__noresult"].outcome.reason == "result.json missing"
    assert kept["demo-task__ctrf"].test_results == {"test_outputs.py::test_exists": "passed"}
    assert any(n.startswith("jobs/j/demo-task__ctrf/verifier/ctrf.json: results.tests[1].status is 'exploded', "
                            "not a CTRF status") for n in result.notes)
    # every trial folder is either a trajectory or an exclusion, and the report lists them
    assert len(result.trajectories) + len(result.exclusions) == 7
    pop = write_outputs(result, tmp_path / "out")
    assert pop["excluded_by_reason"] == {"empty agent log": 1, "unreadable agent log": 3}
    md = (tmp_path / "out" / "population.md").read_text(encoding="utf-8")
    assert "jobs/j/demo-task__trunc" in md and "results.tests[1].status" in md


def test_malformed_terminal_bench_1_trials(tmp_path):
    runs = tmp_path / "runs"
    src = TB1_FIXTURE / "20250103_orchestrator_model-z"
    shutil.copytree(src, runs / src.name)
    trial = runs / src.name / "hello-world" / "hello-world.1-of-2"
    (trial / "results.json").unlink()  # a missing results.json
    (trial / "sessions" / "agent.log").write_bytes(b"")  # an empty raw log
    other = runs / src.name / "hello-world" / "hello-world.2-of-2"
    (other / "results.json").write_text('{"task_id": "hello-world", "is_resolved": tru', encoding="utf-8")
    res = ingest({"name": "t", "format": "terminal-bench-1", "trials_dirs": ["runs"]}, tmp_path)
    by_trial = {t.trial: t for t in res.trajectories}
    empty = by_trial["hello-world.1-of-2"]
    assert isinstance(empty, Trajectory) and empty.events == []
    assert empty.outcome.reason == "results.json missing"
    assert any(n.endswith("sessions/agent.log: empty log (nothing recorded)") for n in empty.notes)
    trunc = by_trial["hello-world.2-of-2"]
    assert trunc.outcome.status == "other"
    assert trunc.outcome.reason.startswith("results.json: invalid JSON (Expecting value, line 1 column 43)")
    assert not res.exclusions
