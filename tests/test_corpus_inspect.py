"""`python -m gcpc.corpus.inspect PATH` prints metadata and the rendered events, or a task's test ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gcpc.corpus.inspect import inspect_path, main

FIX = Path(__file__).resolve().parent / "fixtures"


def test_inspect_tb1_trial_folder():
    trial = FIX / "terminal_bench_1/runs/20250101_swe-agent-mini_model-x/batch-1/hello-world/hello-world.1-of-1.batch-1"
    text = inspect_path(trial, max_chars=None)
    meta = json.loads(text.split("\n\nevents (", 1)[0])
    assert (meta["harness"], meta["model"], meta["outcome"]["status"]) == ("mini-swe-agent", "model-x", "PASS")
    assert meta["trajectory_id"] == ("terminal-bench-1/20250101_swe-agent-mini_model-x/batch-1/hello-world/"
                                     "hello-world.1-of-1.batch-1")
    assert "] TOOL_CALL (bash):\ncat hello.txt" in text and "TB1-VERIFIER-OUTPUT-7731" not in text


def test_inspect_task_folder_log_files_and_swe_instances(capsys):
    task = inspect_path(FIX / "harbor_atif/tasks/count-words")
    assert "tests (2):\n  test_outputs.py::test_count_file_exists\n  test_outputs.py::test_count_value" in task
    atif = inspect_path(FIX / "harbor_atif/jobs/atif-job/count-words__A1b2C3d/agent/trajectory.json")
    assert '"schema_version": "ATIF-v1.4"' in atif and "[5] FILE_CONTENT (read_file):" in atif
    traj = inspect_path(FIX / "swe_bench/trajectories/sweagent-demo/demo__calc-101/demo__calc-101.traj")
    assert "[3] TOOL_CALL (find_file):\nfind_file calc.py" in traj
    swe = inspect_path(FIX / "swe_bench/instances.jsonl")
    assert "task swe-bench/demo__calc-101" in swe and "  tests/test_calc.py::TestAdd::test_add[2-3-5]" in swe
    assert main([str(FIX / "nothing-here")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_inspect_runs_as_a_module():
    pane = FIX / ("terminal_bench_1/runs/20250102_openhands_model-y/oh-1/hello-world/hello-world.1-of-1.oh-1/"
                  "panes/post-agent.txt")
    out = subprocess.run([sys.executable, "-m", "gcpc.corpus.inspect", str(pane), "--max-chars", "0"],
                         capture_output=True, text=True, check=True).stdout
    assert "[agent output: no structured steps]" in out and "AgentState.FINISHED" in out
