"""Fault injection: the judge stage under `dvc repro`, `dvc exp run` and queued experiments, against
the local fake OpenAI API, with every kind of provider misbehaviour.

One DVC project (a temporary git + DVC repository holding a small ingested corpus and frozen
checklists) runs the `judge` stage with the shared call cache in a temporary folder, while the
server injects: 429 + Retry-After, 500, 529, a connection reset, a timeout, a malformed body and a
schema-violating answer (all retried), a 400 `context_length_exceeded` for one request (a recorded
refusal), a 401 mid-run (the stage stops), and the stage is `kill -9`ed mid-run once. Asserted:

* 0 calls lost and 0 finished calls repeated: every request the server answered with a valid
  answer was answered exactly once across all runs (the refused request was asked exactly once);
* `dvc repro` after the 401 and after the kill makes exactly the remaining calls;
* the first run is a `dvc exp run` stopped by the 401; two queued experiments (`--queue` +
  `--run-all`, in temporary workspaces with no call store) asking the same new requests pay for
  each once;
* judgments are byte-identical to an uninterrupted run with the same refusal.
"""

from __future__ import annotations

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
from judge_corpus import replicated_corpus

from gcpc.io import iter_jsonl, record_outputs, write_jsonl
from gcpc.llm.store import CallStore, is_refusal

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-FAULTS-123456"
MARKER = "(the provider refuses this request)"
JUDGE_DIR = Path("data/processed/judge/gcpc")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Demo corpus ingested, checklists synthesized (heuristic), trajectories replicated to 40 distinct requests."""
    root = replicated_corpus(tmp_path_factory.mktemp("corpus"), 40)
    processed = root / "data" / "processed"
    out = list(iter_jsonl(processed / "ingest" / "trajectories.jsonl"))
    out[1]["events"][-1]["text"] += "\n" + MARKER  # early in the run: refused before the 401
    write_jsonl(processed / "ingest" / "trajectories.jsonl", out[:40])
    record_outputs(processed / "ingest", ["trajectories.jsonl"])  # the ingest's manifest says what is there now
    for name in ("attempts.jsonl", "llm_calls.jsonl", "usage_summary.json"):
        (processed / "synthesize" / name).unlink(missing_ok=True)
    return root


DVC_YAML = {"stages": {"judge": {
    "cmd": "python -m gcpc.judging gcpc",
    "deps": ["data/processed/ingest/trajectories.jsonl", "data/processed/synthesize/checklists.jsonl"],
    "params": ["judge", "judging", "arm"],
    "outs": [{"data/processed/judge/gcpc": {"persist": True}}],
}}}


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(OPENAI_API_KEY=KEY, GCPC_CACHE_DIR=str(cache), PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
               DVC_NO_ANALYTICS="1")
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == expect, f"{' '.join(args)} -> {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def project(dest: Path, corpus: Path, server: FakeOpenAI, env: dict[str, str], dvc: bool = True, **judge) -> Path:
    """The corpus and params.yaml; with `dvc`, also dvc.yaml in a committed git + DVC repository."""
    shutil.copytree(corpus / "data", dest / "data")
    cfg = {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048, "max_attempts": 3,
           "concurrency": 4, "timeout_s": 1.0, "base_url": server.url + "/v1",
           "retry": {"max_retries": 4, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retry_after_s": 1.0}}
    cfg.update(judge)
    params = {"judge": cfg, "judging": {"max_event_chars": 4000},
              "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja"), "evidence_gate": True}}}
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    if not dvc:
        return dest
    (dest / "dvc.yaml").write_text(yaml.safe_dump(DVC_YAML, sort_keys=False))
    (dest / ".gitignore").write_text("/data/processed/judge\n")
    for args in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"]):
        _run(args, dest, env)
    return dest


def _settle(server: FakeOpenAI, timeout_s: float = 10.0) -> None:
    """Wait until the server has no call in flight, so its counters are final."""
    deadline = time.monotonic() + timeout_s
    while server.inflight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.inflight, "a server call never finished"


def refuse_marked(body: str) -> Fault | None:
    if MARKER in body:
        return Fault(kind="status", status=400, message="This model's maximum context length is 8192 tokens "
                                                        "(context_length_exceeded)")
    return None


TRANSIENT = [Fault(kind="status", status=429, headers={"retry-after": "0.05"}), Fault(kind="status", status=500),
             Fault(kind="status", status=529), Fault(kind="reset"), Fault(kind="delay", seconds=1.5), Fault(kind="malformed"),
             Fault(kind="content", text='{"verdicts": "not a list"}')]


def test_faults_under_dvc_repro_exp_run_and_queued_experiments(corpus, tmp_path):
    reference_cache, cache = tmp_path / "ref-cache", tmp_path / "cache"
    with FakeOpenAI() as ref_server:  # the reference: an uninterrupted run of the stage's command with the same refusal
        ref_server.fault_rules.append(refuse_marked)
        env = _env(reference_cache)
        ref = project(tmp_path / "ref", corpus, ref_server, env, dvc=False)
        _run([sys.executable, *DVC_YAML["stages"]["judge"]["cmd"].split()[1:]], ref, env)
        n_requests = len({r["key"] for r in iter_jsonl(ref / JUDGE_DIR / "llm_calls.jsonl")})
        assert n_requests == 40 and ref_server.model_calls == 39

    with FakeOpenAI(latency_s=0.01) as server:
        refusals = []

        def rule(body: str) -> Fault | None:
            fault = refuse_marked(body)
            if fault is not None:
                refusals.append(1)
            return fault

        server.fault_rules.append(rule)
        env = _env(cache)
        work = project(tmp_path / "work", corpus, server, env)

        # 1. under `dvc exp run`: transient faults are retried; a 401 after 12 answers stops the stage
        server.faults.extend(TRANSIENT + [None] * 12 + [Fault(kind="status", status=401, message="invalid api key")])  # type: ignore[list-item]
        proc = _run(["dvc", "exp", "run"], work, env, expect=255)
        assert "HTTP 401" in proc.stderr + proc.stdout
        assert not server.faults
        _settle(server)  # the delayed call the client timed out on is still sleeping on the server: let it land
        first = server.model_calls
        shared = {p.stem for p in cache.rglob("*.jsonl")}
        assert 12 <= len(shared) < n_requests  # every finished call is in the shared cache

        # 2. the stage is killed with SIGKILL mid-run
        judge = subprocess.Popen([sys.executable, "-m", "gcpc.judging", "gcpc"], cwd=work, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while server.model_calls < first + 8:
            assert judge.poll() is None, "the judge stage ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.002)
        judge.send_signal(signal.SIGKILL)
        judge.wait()
        _settle(server)  # in-flight calls reach the server counter; their answers died with the process
        # finished: in the shared cache, or in the stage's own store (a kill between the two writes)
        store = CallStore(work / JUDGE_DIR / "llm_calls.jsonl")
        finished = {p.stem for p in cache.rglob("*.jsonl")} | {r.key for r in store.records() if r.ok or is_refusal(r)}
        store.close()
        in_flight_lost = server.model_calls - first - (len(finished) - len(shared))

        # 3. dvc repro resumes: exactly the calls not yet finished
        before = server.model_calls
        _run(["dvc", "repro"], work, env)
        assert server.model_calls - before == n_requests - len(finished)
        assert {p.stem for p in cache.rglob("*.jsonl")} == {r["key"] for r in iter_jsonl(work / JUDGE_DIR / "llm_calls.jsonl")}
        assert (work / JUDGE_DIR / "judgments.jsonl").read_bytes() == (ref / JUDGE_DIR / "judgments.jsonl").read_bytes()
        # answers produced twice: the schema-violating one (asked again by design), the one the client
        # timed out on (the server finished it anyway), and the calls in flight at the kill
        assert sum(c - 1 for c in server.prompt_counts.values()) == 2 + in_flight_lost
        assert in_flight_lost <= 4  # at most `concurrency` answers died with the killed process
        _run(["git", "add", "-A"], work, env)
        _run(["git", "commit", "-qm", "judged"], work, env)

        assert len(refusals) == 1  # the refused request was asked once, never again

        # 4. two queued experiments with the same new requests (other max_tokens), run in temporary
        # workspaces: together they pay for each new request once
        before = server.model_calls
        _run(["dvc", "exp", "run", "--queue", "-S", "judge.max_tokens=1024", "-S", "judge.concurrency=3"], work, env)
        _run(["dvc", "exp", "run", "--queue", "-S", "judge.max_tokens=1024", "-S", "judge.concurrency=5"], work, env)
        _run(["dvc", "exp", "run", "--run-all"], work, env)
        assert server.model_calls - before == n_requests - 1, "queued experiments paid twice for the same requests"
        assert len(refusals) == 2  # the changed request was asked again, once
        shown = _run(["dvc", "exp", "show", "--no-pager", "--csv"], work, env).stdout
        assert shown.count("\n") >= 4  # header, workspace, baseline and the experiments
        print(f"\nFAULTS: requests {n_requests}, server calls {server.model_calls}, killed in flight {in_flight_lost}")
