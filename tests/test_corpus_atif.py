"""Harbor ATIF `agent/trajectory.json` on the project's own fixture (no ATIF file exists in ../shared/data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.atif import parse_atif, parse_atif_file
from gcpc.corpus.harbor import read_task, read_trial
from gcpc.corpus.models import Trajectory
from gcpc.corpus.render import render_log

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "harbor_atif"
TRIAL = FIXTURE / "jobs" / "atif-job" / "count-words__A1b2C3d"


def test_atif_events_kinds_and_matching_by_call_id():
    events, meta, raw = parse_atif_file(TRIAL / "agent" / "trajectory.json", "agent/trajectory.json")
    assert meta["schema_version"] == "ATIF-v1.4" and meta["model_name"] == "example-model-1"
    assert [e.kind.value for e in events] == [
        "system", "system", "agent_message", "agent_message", "tool_call", "file_content", "tool_call",
        "tool_output", "agent_message", "tool_call", "tool_call", "tool_output", "tool_output", "agent_message"]
    calls = [e for e in events if e.kind.value == "tool_call"]
    assert calls[2].text == ('bash_command: {"duration":1.0,"keystrokes":"wc -w < /app/input.txt > /app/count.txt '
                             '&& cat /app/count.txt\\n"}')
    # results come in another order than the calls; each is matched to its call by source_call_id
    assert events[11].text.startswith("-rw-r--r-- 1 root root 2") and events[12].text == "9\n"
    assert events[5].tool == "read_file" and events[5].text.startswith("the quick brown fox")
    assert events[0].text.startswith("[system prompt]") and events[1].text.startswith("[task prompt]")
    assert events[2].text == "(thinking) The file is small; reading it is cheap."
    # every event points at its step in the file
    step5 = events[9].source
    assert (step5.line, step5.end_line) == (77, 113)
    assert json.loads(raw[step5.byte_start:step5.byte_end])["step_id"] == 5


def test_atif_trial_through_harbor_reader():
    task = read_task(FIXTURE / "tasks" / "count-words", "harbor-demo", root=FIXTURE)
    traj = read_trial(TRIAL, "harbor-demo", {task.task_id: task}, root=FIXTURE)
    assert isinstance(traj, Trajectory)
    assert (traj.log_format, traj.harness, traj.model, traj.outcome.status) == (
        "atif", "terminus-2", "example-model-1", "PASS")
    assert traj.log_files == ["jobs/atif-job/count-words__A1b2C3d/agent/trajectory.json"]
    assert traj.size.raw_bytes == (TRIAL / "agent" / "trajectory.json").stat().st_size
    assert traj.size.rendered_tokens < traj.size.raw_tokens
    assert "ATIF-VERIFIER-OUTPUT-5521" not in render_log(traj.events, None)


@pytest.mark.parametrize(("doc", "message"), [
    ([], "root is not a JSON object"),
    ({"schema_version": "ATIF-v1.4"}, "'steps' is missing"),
    ({"schema_version": "OTHER-1", "steps": []}, "not an ATIF-v1.x version"),
])
def test_atif_schema_errors_name_the_field(doc, message):
    with pytest.raises(ValueError, match=message):
        parse_atif(doc, "agent/trajectory.json")


def test_atif_content_parts_unknown_sources_and_subagents_are_kept():
    doc = {"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [
        {"step_id": 1, "source": "user", "message": [{"type": "text", "text": "Do it"}, {"type": "image"}]},
        {"step_id": 2, "source": "agent", "message": "",
         "tool_calls": [{"tool_call_id": "c", "function_name": "delegate", "arguments": {}}],
         "observation": {"results": [{"source_call_id": "c", "subagent_trajectory_ref": [
             {"session_id": "sub-1", "trajectory_path": "sub.json"}]}]}},
        {"step_id": 3, "source": "environment", "message": "reset"},
        {"step_id": 4, "source": "system", "message": "ctx", "observation": {"results": [{"content": "compacted"}]}},
    ]}
    events, _ = parse_atif(doc, "t.json")
    assert [(e.kind.value, e.text) for e in events] == [
        ("system", "[task prompt]\nDo it\n[image]"),
        ("tool_call", "delegate: {}"),
        ("system", "[subagent trajectory] session_id=sub-1 path=sub.json"),
        ("system", "[environment step]\nreset"),
        ("system", "[system prompt]\nctx"),
        ("system", "compacted"),
    ]
