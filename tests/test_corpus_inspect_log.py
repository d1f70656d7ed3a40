"""Inspect AI eval logs as a corpus (`format: inspect`, gcpc.corpus.inspect_log) on a real log.

tests/fixtures/inspect/file_tasks.eval was written by Inspect itself (`python tests/inspect_support.py DIR`:
four samples, scripted mockllm agent, bash tool in the local sandbox; greeting and marker pass their
scorer, numbers and script fail). The outcome mapping and config recognition need no inspect_ai.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from gcpc.corpus.inspect_log import find_logs, is_inspect_log, outcome_of, per_test_results
from gcpc.corpus.models import EventKind

FIXTURE = Path(__file__).parent / "fixtures" / "inspect" / "file_tasks.eval"
CFG = {"name": "ft", "format": "inspect", "benchmark": "file-tasks", "trials_dirs": ["file_tasks.eval"],
       "test_ids_keys": ["tests"], "verifier_source_keys": ["check"], "test_results_key": "tests"}


def _score(value, metadata=None):
    return SimpleNamespace(value=value, metadata=metadata)


@pytest.mark.parametrize(("value", "threshold", "status"), [
    ("C", None, "PASS"), ("I", None, "FAIL"), ("P", None, "other"), ("N", None, "other"), (True, None, "PASS"),
    (False, None, "FAIL"), (1, None, "PASS"), (0.0, None, "FAIL"), (0.5, None, "other"), (0.5, 0.5, "PASS"),
    (0.4, 0.5, "FAIL"), ({"a": 1}, None, "other")])
def test_outcome_values(value, threshold, status):
    out = outcome_of({"check": _score(value)}, pass_threshold=threshold)
    assert out.status == status
    if status == "other":
        assert out.reason and "check" in out.reason


def test_outcome_missing_ambiguous_error_and_gcpc_ignored():
    assert outcome_of({}).reason == "unscored: the sample has no score"
    two = {"a": _score("C"), "b": _score("I")}
    assert "several scorers (a, b)" in outcome_of(two).reason
    assert outcome_of(two, scorer="b").status == "FAIL"
    assert "no score from scorer 'c'" in outcome_of(two, scorer="c").reason
    assert outcome_of({"a": _score("C"), "gcpc": _score({"gcpc_plain": 1.0})}, ignore=("gcpc",)).status == "PASS"
    err = outcome_of({"a": _score("C")}, error=SimpleNamespace(message="boom\ntrace"))
    assert (err.status, err.reason) == ("other", "sample error: boom")
    assert per_test_results({"a": _score("C", {"t": {"x": True, "y": "failed"}})}, None, "t") == {"x": "passed", "y": "failed"}


def test_log_files_are_recognised(tmp_path):
    (tmp_path / "logs" / "sub").mkdir(parents=True)
    shutil.copy(FIXTURE, tmp_path / "logs" / "sub" / "a.eval")
    (tmp_path / "logs" / "notes.json").write_text('{"not": "a log"}')
    assert find_logs(tmp_path / "logs") == [tmp_path / "logs" / "sub" / "a.eval"]
    assert not is_inspect_log(tmp_path / "logs" / "notes.json")


def test_new_config_recognises_an_inspect_log_folder(tmp_path):
    from gcpc.corpus.new_config import main

    (tmp_path / "runs").mkdir()
    shutil.copy(FIXTURE, tmp_path / "runs" / "a.eval")
    assert main(["mylogs", str(tmp_path / "runs"), "--conf", str(tmp_path / "conf")]) == 0
    cfg = yaml.safe_load((tmp_path / "conf" / "mylogs.yaml").read_text())
    assert cfg["format"] == "inspect" and cfg["trials_dirs"] == ["."] and cfg["benchmark"] == "mylogs"
    from gcpc.experiment import check_data

    assert check_data(cfg) == "mylogs"


@pytest.fixture(scope="module")
def ingested():
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -e \".[inspect]\")")
    from gcpc.corpus.ingest import ingest

    return ingest(dict(CFG, root=str(FIXTURE.parent)), Path("."))


def test_every_sample_is_a_trajectory(ingested):
    from inspect_ai.log import read_eval_log_samples

    ids = [str(s.id) for s in read_eval_log_samples(str(FIXTURE))]
    assert sorted(ids) == ["greeting", "marker", "numbers", "script"]
    assert not ingested.exclusions
    got = {t.task_id: t for t in ingested.trajectories}
    assert sorted(got) == sorted(ids)
    assert {k: t.outcome.status for k, t in got.items()} == {"greeting": "PASS", "marker": "PASS", "numbers": "FAIL",
                                                             "script": "FAIL"}
    assert got["numbers"].test_results == {"test_numbers_file": "failed"}
    assert got["marker"].model == "mockllm/model" and got["marker"].log_format == "inspect-eval-log"


def test_events_and_tasks(ingested):
    traj = next(t for t in ingested.trajectories if t.task_id == "numbers")
    kinds = [e.kind for e in traj.events]
    assert kinds[:2] == [EventKind.SYSTEM, EventKind.SYSTEM]
    assert traj.events[1].text.startswith("[task prompt]\nCreate the file numbers.txt")
    call = next(e for e in traj.events if e.kind == EventKind.TOOL_CALL)
    assert (call.tool, call.text) == ("bash", "bash: seq 1 3 > numbers.txt && cat numbers.txt")
    output = traj.events[traj.events.index(call) + 1]
    assert output.kind == EventKind.TOOL_OUTPUT and output.text.split() == ["1", "2", "3"]  # the sandbox's real output
    task = next(t for t in ingested.tasks if t.task_id == "numbers")
    assert task.instruction == "Create the file numbers.txt containing the numbers 1 to 5, one per line."
    assert [t.id for t in task.tests] == ["test_numbers_file"]
    assert set(task.verifier_files) == {"scorers.json", "target.txt", "metadata/check"}
    assert '"file_check"' in task.verifier_files["scorers.json"]


def test_tool_errors_are_marked():
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -e \".[inspect]\")")
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    from gcpc.corpus.inspect_log import events_from_messages

    msgs = [ChatMessageUser(content="do it"),
            ChatMessageAssistant(content="", tool_calls=[ToolCall(id="1", function="bash", arguments={"command": "false"})]),
            ChatMessageTool(content="", tool_call_id="1", function="bash",
                            error=ToolCallError(type="timeout", message="Command timed out"))]
    events = events_from_messages(msgs, "x")
    assert [e.kind for e in events] == [EventKind.SYSTEM, EventKind.TOOL_CALL, EventKind.TOOL_OUTPUT]
    assert events[2].is_error and events[2].text == "[tool error: timeout] Command timed out"
    assert events[2].source.line == 3


def test_unreadable_log_is_an_exclusion(tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -e \".[inspect]\")")
    from gcpc.corpus.ingest import ingest

    (tmp_path / "bad.eval").write_bytes(b"PK\x03\x04 not really a zip")
    shutil.copy(FIXTURE, tmp_path / "good.eval")
    result = ingest(dict(CFG, root=str(tmp_path), trials_dirs=["."]), Path("."))
    assert len(result.trajectories) == 4
    assert [e.path for e in result.exclusions] == ["bad.eval"]
    assert result.exclusions[0].reason.startswith("unreadable Inspect log: bad.eval")


def test_inspect_cli_prints_every_sample():
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -e \".[inspect]\")")
    from gcpc.corpus.inspect import inspect_path

    text = inspect_path(FIXTURE)
    for sample in ("greeting", "marker", "numbers", "script"):
        assert f'"trajectory_id": "inspect/file_tasks/{sample}/1"' in text
    assert "bash: seq 1 3 > numbers.txt && cat numbers.txt" in text
