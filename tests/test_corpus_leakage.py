"""No verifier output reaches the judge-visible transcript, for every log format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_corpus_harbor import VERIFIER_MARKER, make_task, make_trial

from gcpc.corpus.ingest import ingest
from gcpc.corpus.render import render_log
from gcpc.corpus.tb1_logs import parse_commands, read_session

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"
DATA = REPO.parent / "shared" / "data"

FIXTURE_CORPORA = {
    "tb1-agent-log+tb1-pane": ({"name": "tb1", "format": "terminal-bench-1", "root": "tests/fixtures/terminal_bench_1",
                                "trials_dirs": ["runs"]},
                               "TB1-VERIFIER-OUTPUT-7731", FIX / "terminal_bench_1" / "runs"),
    "atif": ({"name": "atif", "benchmark": "b", "root": "tests/fixtures/harbor_atif",
              "tasks_dir": "tasks", "trials_dirs": ["jobs"]},
             "ATIF-VERIFIER-OUTPUT-5521", FIX / "harbor_atif"),
    "swe-agent-traj": ({"name": "swe", "format": "swe-bench", "root": "tests/fixtures/swe_bench",
                        "tasks_file": "instances.jsonl",
                        "trials_dirs": ["trajectories/sweagent-demo"],
                        "reports_dirs": ["evaluation/sweagent-demo"]},
                       "SWE-VERIFIER-OUTPUT-9931", FIX / "swe_bench"),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_CORPORA))
def test_fixture_verifier_marker_never_rendered(name):
    cfg, marker, folder = FIXTURE_CORPORA[name]
    assert any(marker.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file())  # the marker is there
    result = ingest(cfg, REPO)
    assert result.trajectories
    for t in result.trajectories:
        assert marker not in render_log(t.events, None), t.trajectory_id
        assert marker not in t.model_dump_json(), t.trajectory_id


def test_claude_code_stream_and_session_never_show_verifier_output(tmp_path):
    make_task(tmp_path)
    make_trial(tmp_path, "j", "demo-task__stream")
    session_trial = make_trial(tmp_path, "j", "demo-task__session", log=False)
    proj = session_trial / "agent" / "sessions" / "projects" / "-root"
    proj.mkdir(parents=True)
    (proj / "u.jsonl").write_text(json.dumps({"type": "user", "message": {"content": "Task"}}) + "\n", encoding="utf-8")
    result = ingest({"name": "c", "benchmark": "skillsbench", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}, tmp_path)
    assert {t.log_format for t in result.trajectories} == {"claude-code-stream-json", "claude-code-session"}
    for t in result.trajectories:
        assert VERIFIER_MARKER not in render_log(t.events, None)


def test_pane_with_a_test_run_is_cut(tmp_path):
    pane = ("root@x:/app# source /installed-agent/install-agent.sh; tmux wait -S done\nINSTALL_SUCCESS\n"
            "root@x:/app# bash /tests/run-tests.sh; tmux wait -S done\nPANE-VERIFIER-99\n1 passed\nroot@x:/app#\n")
    (tmp_path / "panes").mkdir()
    (tmp_path / "panes" / "post-agent.txt").write_text(pane, encoding="utf-8")
    session, _ = read_session(tmp_path / "panes" / "post-agent.txt", "post-agent.txt", [])
    assert "PANE-VERIFIER-99" not in render_log(session.events, None)
    assert session.notes == ["post-agent.txt: verifier phase removed: lines 3-6 (from the harness command "
                             "'bash /tests/run-tests.sh')"]


@pytest.mark.parametrize("trial", [
    "20250902_orchestrator_claude-4-sonnet/simple-sheets-put/simple-sheets-put.3-of-5",
    "20250825_swe-agent-mini_claude-4-sonnet/2025-08-15__16-23-45/jupyter-notebook-server/"
    "jupyter-notebook-server.1-of-1.2025-08-15__16-23-45",
])
def test_real_sessions_with_a_test_run(trial):
    path = DATA / "terminal-bench-1" / "runs" / trial
    if not path.is_dir():
        pytest.skip(f"real data not available at {path} (the shared curated-data checkout is absent)")
    raw = (path / "sessions" / "agent.log").read_bytes()
    assert b"/tests/run-tests.sh" in raw and b"test session starts" in raw
    typed, _ = parse_commands((path / "commands.txt").read_text(encoding="utf-8"), "commands.txt")
    session, _ = read_session(path / "sessions" / "agent.log", "agent.log", typed)
    text = render_log(session.events, None)
    assert "test session starts" not in text and "short test summary" not in text
    assert "/tests/run-tests.sh" not in text
