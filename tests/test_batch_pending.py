"""Issue 38, problem 3: a batch still running after `batch.max_wait_s` ends the stage with one line and exit status 75.

Against the local fake servers (tests/fakeservers, the real anthropic and openai SDKs): a stage-like process
(`gcpc.llm.cli.stage_errors` around an `LLMClient` run in batch mode, what every LLM stage's `__main__` does)
submits, the server holds the batch, the wait ends. On 1da41f9 it printed a ~30-line traceback ending in
`BatchPending` and exited 1, like any crash. Now: one line on stderr naming the batch ids, how many results are
in and when to re-run, exit status 75 (EX_TEMPFAIL); the same command run again collects without resubmitting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_llm_providers import api, cfg, judge_req  # noqa: F401 (api: the providers' fake-server fixture)

from gcpc.llm.cli import BATCH_PENDING_EXIT
from gcpc.llm.store import read_call_records

STAGE = """
import json, sys
from gcpc.llm import make_client
from gcpc.llm.cli import stage_errors
from gcpc.llm.schemas import ChecklistJudgment
from llm_requests import judge_req
cfg, path, name = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
with stage_errors():
    client = make_client(cfg, path, progress=False)
    results = client.run([judge_req(name, n) for n in range(5)], ChecklistJudgment)
    client.store.close()
print(f"stage: {sum(r.ok for r in results)}/{len(results)} answered")
"""


def _stage(name: str, config: dict, path: Path) -> subprocess.CompletedProcess:
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("GCPC_DEBUG", None)
    return subprocess.run([sys.executable, "-c", STAGE, json.dumps(config), str(path), name], env=env,
                          capture_output=True, text=True, timeout=120)


def test_pending_batch_is_one_line_and_exit_75_then_a_rerun_collects(api, tmp_path):
    name, server = api
    path = tmp_path / "llm_calls.jsonl"
    server.hold_batches = True
    first = _stage(name, cfg(name, server, mode="batch", batch={"poll_interval_s": 0.01, "max_wait_s": 0.2}), path)
    assert first.returncode == BATCH_PENDING_EXIT == 75, first.stderr[-3000:]
    lines = [line for line in first.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, first.stderr  # no traceback
    (line,) = lines
    state = json.loads(path.with_name("llm_calls.batches.json").read_text())
    (batch,) = state["batches"]
    assert line.startswith("batch pending: 1 ") and batch["id"] in line
    assert "0 of 5 results of this stage are in" in line and "re-run the same command" in line
    assert "Traceback" not in first.stderr and first.stdout == ""
    # the batch ends; the same command collects it (no second batch is created)
    server.release_batches()
    second = _stage(name, cfg(name, server, mode="batch", batch={"poll_interval_s": 0.01, "max_wait_s": 30}), path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.strip() == "stage: 5/5 answered"
    assert server.route_calls["batch_create"] == 1
    assert {r["batch_id"] for r in read_call_records(path)} == {batch["id"]}
    assert not path.with_name("llm_calls.batches.json").exists()


def test_debug_shows_the_traceback(api, tmp_path, monkeypatch):
    name, server = api
    server.hold_batches = True
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", ""), "GCPC_DEBUG": "1"}
    config = cfg(name, server, mode="batch", batch={"poll_interval_s": 0.01, "max_wait_s": 0.1})
    proc = subprocess.run([sys.executable, "-c", STAGE, json.dumps(config), str(tmp_path / "c.jsonl"), name], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "BatchPending" in proc.stderr and "Traceback" in proc.stderr
    server.release_batches()
