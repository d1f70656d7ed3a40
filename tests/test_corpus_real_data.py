"""The readers on the curated real data (../shared/data from the repository root), when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.harbor import find_trial_folders, read_tasks, read_trial
from gcpc.corpus.ingest import ingest
from gcpc.corpus.models import Trajectory

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="module")
def data() -> Path:
    if not (DATA / "skillsbench" / "tasks").is_dir():
        pytest.skip(f"real data not available at {DATA} (the shared curated-data checkout is absent)")
    return DATA


@pytest.fixture(scope="module")
def skillsbench_tasks(data):
    return read_tasks(data / "skillsbench" / "tasks", "skillsbench", root=data)


def _functions(tasks) -> set[tuple[str, str]]:
    """Distinct test functions: node ids without the parametrize suffix."""
    return {(t.task_id, v.id.split("[", 1)[0]) for t in tasks for v in t.tests}


def test_all_skillsbench_tasks(skillsbench_tasks):
    tasks = skillsbench_tasks
    assert len(tasks) == 87
    # data README: 630 `def test_` in total; two tasks verify with a plain script, not pytest
    assert len(_functions(tasks)) == 630
    assert sorted(t.task_id for t in tasks if not t.tests) == [
        "crystallographic-wyckoff-position-analysis", "python-scala-translation"]
    n_ids = sum(len(t.tests) for t in tasks)
    assert 630 < n_ids < 2000  # parametrize cases expand the count, but not without bound
    assert all(t.instruction.strip() and "test.sh" in t.verifier_files for t in tasks)
    assert all(not any(p.startswith("solution") for p in t.verifier_files) for t in tasks)
    offer = next(t for t in tasks if t.task_id == "offer-letter-generator")
    assert "test_outputs.py::test_split_placeholder_replaced[DATE]" in {v.id for v in offer.tests}
    assert offer.metadata.get("difficulty")


def test_all_terminal_bench_2_tasks(data):
    tasks = read_tasks(data / "terminal-bench-2" / "tasks", "terminal-bench-2", root=data)
    assert len(tasks) == 89
    assert len(_functions(tasks)) == 308  # data README: 308 test functions
    assert all(t.tests for t in tasks)
    assert all("test_outputs.py" in t.verifier_files for t in tasks)


def test_all_real_trials_match_manifest(data, skillsbench_tasks):
    traj_root = data / "skillsbench" / "trajectories"
    manifest = json.loads((traj_root / "manifest.json").read_text(encoding="utf-8"))["trials"]
    assert len(manifest) == 24
    by_id = {t.task_id: t for t in skillsbench_tasks}
    folders = {p.relative_to(traj_root).as_posix(): p for p in find_trial_folders(traj_root)}
    assert sorted(folders) == sorted(m["path"] for m in manifest)
    formats = set()
    for m in manifest:
        traj = read_trial(folders[m["path"]], "skillsbench", by_id, root=data)
        assert isinstance(traj, Trajectory), traj
        assert traj.outcome.status == m["outcome"], m["path"]
        assert (traj.task_id, traj.model, traj.condition, traj.trial) == (
            m["task"], m["model"], m["condition"], m["trial_name"])
        assert len(traj.events) > 0
        assert sum(e.kind.value == "tool_call" for e in traj.events) == sum(m["tool_calls"].values())
        assert all("/verifier/" not in e.source.path for e in traj.events)
        formats.add(Path(traj.events[-1].source.path).suffix)
    assert formats == {".txt", ".jsonl"}  # both log formats were exercised


def test_ingest_real_corpus(data):
    result = ingest({"name": "real", "benchmark": "skillsbench", "tasks_dir": "skillsbench/tasks",
                     "trials_dirs": ["skillsbench/trajectories/xiangyi-completed"]}, data)
    assert len(result.trajectories) == 24 and not result.exclusions


def test_real_claude_code_stream_json_content(data):
    from gcpc.corpus.claude_code import parse_log

    log = data / "skillsbench/trajectories/xiangyi-completed/withskills-claude-code/3d-scan-calc__bMCJZaG/agent/claude-code.txt"
    events = parse_log(log, "claude-code.txt")
    calls = [e for e in events if e.kind.value == "tool_call"]
    assert calls[2].text.startswith("Bash (Run Python script to analyze STL mesh and calculate mass): "
                                    "cat << 'EOF' > /root/calculate_mass.py")
    out = events[calls[2].index + 1]
    assert (out.kind.value, out.tool, out.text.split("\n")[0]) == ("tool_output", "Bash", "Volume: 6242.890312594918")
    assert (calls[2].source.line, out.source.line) == (9, 10)
    raw = log.read_bytes()
    assert raw[out.source.byte_start:out.source.byte_end].startswith(b'{"type":"user"')


def test_real_claude_code_session_transcript_content(data):
    from gcpc.corpus.claude_code import parse_log

    folder = data / "skillsbench/trajectories/xiangyi-completed/without-claude-code/3d-scan-calc__o5Q6AC8"
    (log,) = sorted((folder / "agent/sessions/projects/-root").glob("*.jsonl"))
    events = parse_log(log, "session.jsonl")
    calls = [e for e in events if e.kind.value == "tool_call"]
    assert calls[2].text == "Bash (Check STL file size): ls -la /root/scan_data.stl"
    # parallel calls: the results come after all three calls; the third call's result is event 6
    assert events[6].tool == "Bash" and events[6].text.split("\n")[0] == (
        "-rw-r--r-- 1 root root 17684 Jan 25 20:43 /root/scan_data.stl")
    assert events[4].kind.value == "file_content" and events[4].text.startswith("     1\u2192# Proprietary Material")
    assert events[0].text.startswith("[task prompt]\nYou need to calculate the mass of a 3D printed part.")
