"""Harbor task/trial readers and the ingest stage on small inline fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gcpc.corpus.harbor import find_trial_folders, outcome_of, read_task, read_trial
from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.corpus.models import Exclusion, Trajectory
from gcpc.corpus.render import render_log

VERIFIER_MARKER = "VERIFIER-STDOUT-SECRET-1234"


def make_task(root: Path, task_id: str = "demo-task") -> Path:
    folder = root / "tasks" / task_id
    (folder / "tests").mkdir(parents=True)
    (folder / "solution").mkdir()
    (folder / "instruction.md").write_text("Write /root/out.txt containing 42.\n", encoding="utf-8")
    (folder / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\ntags = ["a", "b"]\nexpert_min = 5\n'
        '[verifier]\ntimeout_sec = 10.0\n',
        encoding="utf-8",
    )
    (folder / "tests" / "test.sh").write_text("pytest /tests/test_outputs.py\n", encoding="utf-8")
    (folder / "tests" / "test_outputs.py").write_text(
        "import pytest\n\n\ndef test_exists():\n    pass\n\n\nclass TestValue:\n"
        "    @pytest.mark.parametrize('v', [42, 43])\n    def test_value(self, v):\n        pass\n",
        encoding="utf-8",
    )
    (folder / "tests" / "blob.bin").write_bytes(b"\x00\x01\x02")
    (folder / "solution" / "solve.sh").write_text("echo SOLUTION-SECRET > /root/out.txt\n", encoding="utf-8")
    return folder


def stream_log(answer: str = "42") -> str:
    records = [
        {"type": "system", "subtype": "init", "cwd": "/root", "tools": ["Bash"], "skills": []},
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"echo {answer} > /root/out.txt"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": ""}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "Done."},
    ]
    return "\n".join(json.dumps(r) for r in records) + "\n"


def make_trial(root: Path, job: str, trial: str, *, task: str = "demo-task", reward=1.0, source: str = "tasks",
               log: str | None = None, result: bool = True, exception=None, verifier_result=True) -> Path:
    folder = root / "jobs" / job / trial
    (folder / "agent").mkdir(parents=True)
    (folder / "verifier").mkdir()
    config = {"task": {"path": f"/x/tasks/{task}", "source": source}, "trial_name": trial,
              "agent": {"name": "claude-code", "model_name": "claude-test@1"}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if result:
        res = {"task_name": task, "trial_name": trial, "source": source, "config": config,
               "verifier_result": {"rewards": {"reward": reward}} if verifier_result else None,
               "exception_info": exception}
        (folder / "result.json").write_text(json.dumps(res), encoding="utf-8")
    if log is not False:
        (folder / "agent" / "claude-code.txt").write_text(log if log is not None else stream_log(), encoding="utf-8")
    (folder / "verifier" / "test-stdout.txt").write_text(VERIFIER_MARKER + "\n1 passed\n", encoding="utf-8")
    (folder / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": "test_outputs.py::test_exists", "status": "passed"},
        {"name": "test_outputs.py::TestValue::test_value", "status": "failed"}]}}), encoding="utf-8")
    return folder


def test_read_task_reads_only_instruction_toml_and_tests(tmp_path):
    folder = make_task(tmp_path)
    notes: list[str] = []
    task = read_task(folder, "skillsbench", root=tmp_path, notes=notes)
    assert task.task_id == "demo-task" and task.benchmark == "skillsbench"
    assert task.instruction.startswith("Write /root/out.txt")
    assert task.metadata == {"difficulty": "easy", "tags": ["a", "b"], "expert_min": 5}
    assert sorted(task.verifier_files) == ["test.sh", "test_outputs.py"]
    assert any("blob.bin" in n and "binary" in n for n in notes)
    assert [t.id for t in task.tests] == [
        "test_outputs.py::test_exists",
        "test_outputs.py::TestValue::test_value[42]",
        "test_outputs.py::TestValue::test_value[43]",
    ]
    assert task.source_path == "tasks/demo-task"
    assert "SOLUTION-SECRET" not in task.model_dump_json()


def test_read_task_errors_name_the_file(tmp_path):
    folder = make_task(tmp_path)
    (folder / "instruction.md").unlink()
    with pytest.raises(FileNotFoundError, match="instruction.md"):
        read_task(folder, "skillsbench")
    folder = make_task(tmp_path, "other")
    (folder / "task.toml").write_text("[metadata\n", encoding="utf-8")
    with pytest.raises(ValueError, match="task.toml"):
        read_task(folder, "skillsbench")


def test_read_trial_fields_and_verifier_output_never_in_events(tmp_path):
    task = read_task(make_task(tmp_path), "skillsbench", root=tmp_path)
    folder = make_trial(tmp_path, "withskills-claude-code", "demo-task__abc")
    traj = read_trial(folder, "skillsbench", {task.task_id: task}, root=tmp_path)
    assert isinstance(traj, Trajectory)
    assert traj.trajectory_id == "skillsbench/withskills-claude-code/demo-task__abc"
    assert (traj.model, traj.harness, traj.condition, traj.source) == (
        "claude-test@1", "claude-code", "with_skills", "withskills-claude-code")
    assert traj.outcome.status == "PASS"
    assert traj.test_results == {"test_outputs.py::test_exists": "passed",
                                 "test_outputs.py::TestValue::test_value": "failed"}
    assert len(traj.events) == 4
    assert traj.events[1].source.path == "jobs/withskills-claude-code/demo-task__abc/agent/claude-code.txt"
    assert VERIFIER_MARKER not in traj.model_dump_json(include={"events"})
    assert VERIFIER_MARKER not in render_log(traj.events)
    assert all("verifier" not in e.source.path for e in traj.events)


def test_session_transcript_used_when_no_stream_log(tmp_path):
    task = read_task(make_task(tmp_path), "skillsbench")
    folder = make_trial(tmp_path, "without-claude-code", "demo-task__s", source="tasks-no-skills", log=False)
    session = folder / "agent" / "sessions" / "projects" / "-root"
    session.mkdir(parents=True)
    (session / "uuid-1.jsonl").write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "Task text"}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}) + "\n",
        encoding="utf-8")
    traj = read_trial(folder, "skillsbench", {task.task_id: task})
    assert isinstance(traj, Trajectory)
    assert traj.condition == "without_skills"
    assert [e.kind.value for e in traj.events] == ["system", "agent_message"]


@pytest.mark.parametrize(
    ("result", "status", "reason_part"),
    [
        ({"verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": None}, "PASS", None),
        ({"verifier_result": {"rewards": {"reward": 0}}, "exception_info": None}, "FAIL", None),
        ({"verifier_result": {"rewards": {"reward": 0.5}}, "exception_info": None}, "other", "partial"),
        ({"verifier_result": None, "exception_info": None}, "other", "verifier_result is null"),
        # a binary reward keeps its official outcome; the exception is recorded (issue 23, item 8)
        ({"verifier_result": {"rewards": {"reward": 1.0}},
          "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "late"}},
         "PASS", "AgentTimeoutError"),
        ({"verifier_result": {"rewards": {"reward": 0.0}},
          "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "late"}},
         "FAIL", "exception_info set (AgentTimeoutError: late)"),
        ({"verifier_result": {"rewards": {"reward": 0.5}}, "exception_info": {"exception_type": "RuntimeError"}},
         "other", "exception_info set (RuntimeError)"),
        ({"verifier_result": None, "exception_info": {"exception_type": "AgentTimeoutError"}}, "other", "AgentTimeoutError"),
        (None, "other", "result.json missing"),
    ],
)
def test_outcome_mapping(result, status, reason_part):
    outcome = outcome_of(result)
    assert outcome.status == status
    if reason_part:
        assert reason_part in outcome.reason
    else:
        assert outcome.reason is None


def test_partial_reward_keeps_raw_reward():
    assert outcome_of({"verifier_result": {"rewards": {"reward": 0.25}}}).reward == 0.25


def test_trial_exclusions(tmp_path):
    task = read_task(make_task(tmp_path), "skillsbench")
    by_id = {task.task_id: task}
    no_log = read_trial(make_trial(tmp_path, "j", "demo-task__nolog", log=False), "skillsbench", by_id)
    assert isinstance(no_log, Exclusion) and no_log.reason.startswith("no agent log")
    unknown = read_trial(make_trial(tmp_path, "j", "ghost__1", task="ghost"), "skillsbench", by_id)
    assert isinstance(unknown, Exclusion) and "ghost" in unknown.reason
    bad = read_trial(make_trial(tmp_path, "j", "demo-task__bad", log="{oops\n"), "skillsbench", by_id)
    assert isinstance(bad, Exclusion) and "claude-code.txt:1" in bad.reason
    missing = read_trial(make_trial(tmp_path, "j", "demo-task__nores", result=False), "skillsbench", by_id)
    assert isinstance(missing, Trajectory) and missing.outcome.status == "other"


def test_find_trial_folders_skips_job_level_files(tmp_path):
    make_trial(tmp_path, "job1", "demo-task__a")
    make_trial(tmp_path, "job1", "demo-task__b")
    (tmp_path / "jobs" / "job1" / "result.json").write_text(json.dumps({"n_trials": 2}), encoding="utf-8")
    (tmp_path / "jobs" / "job1" / "config.json").write_text(json.dumps({"job_name": "job1"}), encoding="utf-8")
    found = find_trial_folders(tmp_path / "jobs")
    assert [p.name for p in found] == ["demo-task__a", "demo-task__b"]


def _corpus(tmp_path: Path) -> dict:
    return {"name": "t", "benchmark": "skillsbench", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}


def test_ingest_dedup_and_deterministic_outputs(tmp_path):
    make_task(tmp_path)
    make_trial(tmp_path, "job1", "demo-task__a")
    copy = tmp_path / "jobs" / "job2" / "demo-task__z"
    copy.parent.mkdir(parents=True)
    shutil.copytree(tmp_path / "jobs" / "job1" / "demo-task__a", copy)
    make_trial(tmp_path, "job1", "demo-task__c", log=stream_log("41"), reward=0.0, source="tasks-no-skills")
    make_trial(tmp_path, "job1", "ghost__x", task="ghost")

    result = ingest(_corpus(tmp_path), tmp_path)
    assert [t.trajectory_id for t in result.trajectories] == [
        "skillsbench/job1/demo-task__a", "skillsbench/job1/demo-task__c"]
    reasons = {e.path: e.reason for e in result.exclusions}
    assert reasons["jobs/job2/demo-task__z"] == "duplicate: same task and log as skillsbench/job1/demo-task__a"
    assert reasons["jobs/job1/ghost__x"].startswith("unknown task")

    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    pop = write_outputs(result, out1)
    write_outputs(ingest(_corpus(tmp_path), tmp_path), out2)
    names = ["tasks.jsonl", "trajectories.jsonl", "exclusions.jsonl", "population.json", "population.md"]
    for name in names:
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name
    assert pop["counts"] == {"skillsbench": {"with_skills": {"PASS": 1, "FAIL": 0, "other": 0},
                                            "without_skills": {"PASS": 0, "FAIL": 1, "other": 0}}}
    assert pop["excluded_by_reason"] == {"duplicate": 1, "unknown task": 1}
    assert pop["n_tasks"] == 1 and pop["n_trajectories"] == 2 and pop["n_excluded"] == 2
    md = (out1 / "population.md").read_text(encoding="utf-8")
    assert "| skillsbench | with_skills | 1 | 0 | 0 | 1 |" in md and "jobs/job1/ghost__x" in md
    assert VERIFIER_MARKER not in (out1 / "trajectories.jsonl").read_text(encoding="utf-8")


def test_run_with_single_corpus_data_section(tmp_path):
    """params.yaml `data` may be one corpus config with a corpus `root` for recorded paths."""
    from gcpc.corpus.ingest import run

    demo = tmp_path / "data" / "demo"
    make_task(demo)
    make_trial(demo, "job1", "demo-task__a")
    data = {"name": "demo", "root": "data/demo", "benchmark": "skillsbench", "tasks_dir": "tasks",
            "trials_dirs": ["jobs"], "out_dir": "out/ingest"}
    pop = run(data, tmp_path)
    assert pop["n_trajectories"] == 1 and pop["corpora"] == ["demo"]
    (traj,) = [json.loads(line) for line in (tmp_path / "out/ingest/trajectories.jsonl").read_text().splitlines()]
    assert traj["source_path"] == "jobs/job1/demo-task__a"
    assert traj["events"][0]["source"]["path"] == "jobs/job1/demo-task__a/agent/claude-code.txt"


def test_config_paths_resolve_against_the_corpus_root(tmp_path):
    """Paths of a corpus config resolve against its `root`; nothing falls back to the repository root."""
    repo = tmp_path / "repo"
    corpus = tmp_path / "elsewhere-corpus"
    make_task(corpus)
    make_trial(corpus, "job1", "demo-task__a")
    make_task(repo, "repo-task")  # would be read if tasks_dir resolved against the repository root
    make_trial(repo, "job1", "repo-task__a", task="repo-task")
    cfg = {"name": "c", "benchmark": "skillsbench", "root": str(corpus), "tasks_dir": "tasks", "trials_dirs": ["jobs"]}
    result = ingest(cfg, repo)
    assert [t.task_id for t in result.tasks] == ["demo-task"]
    assert [t.trajectory_id for t in result.trajectories] == ["skillsbench/job1/demo-task__a"]


def test_missing_corpus_root_is_an_error_naming_the_folder(tmp_path):
    """`root: /elsewhere, trials_dirs: ['.']` used to read the repository's own folders instead."""
    repo = tmp_path / "repo"
    make_task(repo)
    make_trial(repo, "job1", "demo-task__a")
    missing = tmp_path / "elsewhere"
    with pytest.raises(FileNotFoundError, match=f"root folder {missing} not found"):
        ingest({"name": "c", "benchmark": "skillsbench", "root": str(missing), "tasks_dir": ".", "trials_dirs": ["."]}, repo)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=rf"trials_dirs entry 'jobs' not found: looked for {empty / 'jobs'}"):
        ingest({"name": "c", "benchmark": "skillsbench", "root": str(empty), "trials_dirs": ["jobs"]}, repo)
    with pytest.raises(FileNotFoundError, match=rf"tasks_dir entry 'tasks' not found: looked for {repo / 'sub' / 'tasks'}"):
        (repo / "sub").mkdir()
        ingest({"name": "c", "benchmark": "skillsbench", "root": "sub", "tasks_dir": "tasks", "trials_dirs": ["."]}, repo)
