"""The judging stage (`python -m gcpc.judging`, a real subprocess) against a local fake OpenAI API.

* a run of >= 200 requests SIGKILLed midway and restarted makes exactly the remaining calls
  (counted by the server) and ends with outputs equal to an uninterrupted run's: judgments.jsonl
  byte for byte, llm_calls.jsonl byte for byte once the volatile `latency_s` is dropped;
* a batch-mode run SIGKILLed while its batch runs is collected after the restart without a
  second submission;
* after a recorded run, replay reproduces the same files with no call;
* with a fake key set (and a server that echoes it back in errors) no output or log holds it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fakeservers import FakeOpenAI, Fault
from fakeservers.base import prompt_digest
from judge_corpus import replicated_corpus

from gcpc.llm.store import read_call_records
from gcpc.io import iter_jsonl
from gcpc.llm.store import CallStore

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-SECRET123"
CALLS = Path("data/processed/judge/gcpc/llm_calls.jsonl")
JUDGMENTS = Path("data/processed/judge/gcpc/judgments.jsonl")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Demo corpus ingested, checklists synthesized (heuristic), trajectories replicated to >= 200 distinct requests."""
    return replicated_corpus(tmp_path_factory.mktemp("corpus"), 220)


def workdir(dest: Path, corpus: Path, server: FakeOpenAI, **judge) -> Path:
    shutil.copytree(corpus / "data", dest / "data")
    cfg = {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048, "max_attempts": 3,
           "concurrency": 8, "timeout_s": 10, "base_url": server.url + "/v1",
           "retry": {"max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05},
           "batch": {"poll_interval_s": 0.02}}
    cfg.update(judge)
    params = {"judge": cfg, "judging": {"max_event_chars": 4000},
              "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja"), "evidence_gate": True}}}
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    (dest / "logs").mkdir()
    return dest


def start(work: Path, tag: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = KEY
    return subprocess.Popen([sys.executable, "-m", "gcpc.judging", "gcpc", "--params", "params.yaml"], cwd=work, env=env,
                            stdout=(work / "logs" / f"{tag}.out").open("w"), stderr=(work / "logs" / f"{tag}.err").open("w"))


def finish(work: Path, tag: str, expect: int = 0) -> None:
    proc = start(work, tag)
    code = proc.wait(timeout=300)
    assert code == expect, (work / "logs" / f"{tag}.err").read_text()[-3000:]


def without_latency(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "latency_s"} for r in read_call_records(path)]


def digest(record: dict) -> str:
    """The fake server's digest of the prompt this record's request sends (consecutive user messages merged
    as the OpenAI provider merges them)."""
    from gcpc.llm.base import Message
    from gcpc.llm.providers.openai_provider import merged_turns

    msgs = merged_turns([Message.model_validate(m) for m in record["request"]["messages"]])
    return prompt_digest("\n".join(m["content"] for m in msgs if m["role"] == "system"),
                         "\n".join(m["content"] for m in msgs if m["role"] == "user"))


@pytest.fixture(scope="module")
def recorded(corpus, tmp_path_factory) -> Path:
    """One uninterrupted recorded run: the reference outputs."""
    with FakeOpenAI() as server:
        work = workdir(tmp_path_factory.mktemp("recorded"), corpus, server)
        finish(work, "run")
        assert server.model_calls == len({r["key"] for r in iter_jsonl(work / CALLS)})
    return work


def test_killed_run_makes_exactly_the_remaining_calls_and_matches_an_uninterrupted_run(corpus, recorded, tmp_path):
    with FakeOpenAI(latency_s=0.02) as server:
        work = workdir(tmp_path / "killed", corpus, server)
        proc = start(work, "first")
        deadline = time.monotonic() + 120
        while server.model_calls < 100:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # calls that were in flight reach the server's counter (their answers died with the process)
        calls_before = server.model_calls
        assert not (work / JUDGMENTS).exists()
        store = CallStore(work / CALLS)  # as the restart will see it (a torn last line is dropped)
        finished = {r.key for r in store.records() if r.ok}
        store.close()

        finish(work, "second")
        second_run_calls = server.model_calls - calls_before
        records = read_call_records(work / CALLS)
        n_requests = len({r["key"] for r in records})
        assert n_requests >= 200 and 0 < len(finished) < n_requests
        print(f"\nKILL: requests {n_requests}, finished before kill {len(finished)}, server calls before kill {calls_before}, restart calls {second_run_calls}")
        assert second_run_calls == n_requests - len(finished)
        for r in records:  # no finished call was made twice
            if r["key"] in finished:
                assert server.prompt_counts[digest(r)] == 1

        finish(work, "third")  # unchanged requests: zero calls
        assert server.model_calls == calls_before + second_run_calls

    assert (work / JUDGMENTS).read_bytes() == (recorded / JUDGMENTS).read_bytes()
    assert without_latency(work / CALLS) == without_latency(recorded / CALLS)
    assert len((work / JUDGMENTS).read_text().splitlines()) >= 200


def test_replay_reproduces_the_recorded_outputs_without_any_call(recorded, tmp_path):
    recorded_judgments = (recorded / JUDGMENTS).read_bytes()
    recorded_calls = (recorded / CALLS).read_bytes()
    with FakeOpenAI() as server:
        for n, mode in enumerate([{"mode": "replay"}, {"provider": "replay", "recorded_provider": "openai"}]):
            work = tmp_path / f"replay{n}"
            shutil.copytree(recorded, work)
            params = yaml.safe_load((work / "params.yaml").read_text())
            params["judge"].update(mode, base_url=server.url + "/v1")
            (work / "params.yaml").write_text(yaml.safe_dump(params))
            (work / JUDGMENTS).unlink()
            finish(work, "replay")
            assert (work / JUDGMENTS).read_bytes() == recorded_judgments
            assert (work / CALLS).read_bytes() == recorded_calls
        assert server.requests == [] and server.model_calls == 0
        # a request that was never recorded is an error naming it, not a new call
        work = tmp_path / "replay-miss"
        shutil.copytree(recorded, work)
        params = yaml.safe_load((work / "params.yaml").read_text())
        params["judge"].update(mode="replay", max_tokens=999)  # other sampling: other request keys
        (work / "params.yaml").write_text(yaml.safe_dump(params))
        finish(work, "miss", expect=1)
        assert "no recorded response for request" in (work / "logs" / "miss.err").read_text()
        assert server.requests == []


def test_batch_run_killed_while_the_batch_runs_is_collected_after_restart(corpus, recorded, tmp_path):
    with FakeOpenAI(hold_batches=True) as server:
        work = workdir(tmp_path / "batch", corpus, server, mode="batch")
        state = work / "data/processed/judge/gcpc/llm_calls.batches.json"
        proc = start(work, "first")
        deadline = time.monotonic() + 120
        while not (state.exists() and server.route_calls.get("batch_retrieve", 0) >= 2):
            assert proc.poll() is None, (work / "logs" / "first.err").read_text()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        (batch,) = json.loads(state.read_text())["batches"]
        server.release_batches()
        finish(work, "second")
        assert server.route_calls["batch_create"] == 1 and not state.exists()
        assert {r["batch_id"] for r in iter_jsonl(work / CALLS)} == {batch["id"]}
    assert (work / JUDGMENTS).read_bytes() == (recorded / JUDGMENTS).read_bytes()


def test_no_trace_of_the_api_key_in_any_output_or_log(corpus, tmp_path):
    with FakeOpenAI() as server:
        # the server echoes the credential back: once in a retried 500, once in a fatal 401
        server.faults.extend([Fault(kind="status", status=500, echo_auth=True), Fault(kind="status", status=401, echo_auth=True)])
        work = workdir(tmp_path / "secret", corpus, server, concurrency=1)
        finish(work, "fails", expect=1)
        assert "credential seen: Bearer [REDACTED]" in (work / "logs" / "fails.err").read_text()
        finish(work, "completes")
        assert "[REDACTED]" in (work / CALLS).read_text()  # the failed attempt stays on record, scrubbed
        # batch mode too: the state file left by a run that stops waiting
        batch = workdir(tmp_path / "secret-batch", corpus, server, mode="batch", batch={"poll_interval_s": 0.01, "max_wait_s": 0.05})
        server.hold_batches = True
        finish(batch, "pending", expect=75)  # the judge stage's own exit status for a pending batch (issue 38)
        pending = [line for line in (batch / "logs" / "pending.err").read_text().splitlines() if "batch pending:" in line]
        assert len(pending) == 1 and "Traceback" not in (batch / "logs" / "pending.err").read_text()
        assert (batch / "data/processed/judge/gcpc/llm_calls.batches.json").exists()
        assert_no_key(batch)
        server.release_batches()
        finish(batch, "collects")
        assert any(r["auth"] == f"Bearer {KEY}" for r in server.requests)  # the key was really in use
    assert assert_no_key(work) > 10 and assert_no_key(batch) > 10


def assert_no_key(root: Path) -> int:
    """Every file under root (outputs, params, stdout/stderr logs): no trace of the key. Returns the count scanned."""
    scanned = 0
    for path in root.rglob("*"):
        if path.is_file():
            scanned += 1
            assert KEY.encode() not in path.read_bytes(), f"API key found in {path}"
    return scanned
