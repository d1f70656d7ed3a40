"""A hostile provider (issue 25, "Providers"): refusals, rejected keys, echoed key parts, twin workers, abandoned calls.

The real SDKs against the local fake APIs (tests/fakeservers):

* a refusal (OpenAI `message.refusal` with null content, Anthropic `stop_reason: "refusal"`) is recorded
  once as a refusal with its text, never retried as invalid output, and asked again only with
  `retry_refused` (the config key) or `--retry-refused` (the same key for one run);
* a 401 / 403 stops a stage's entry point with one line naming the provider and the variable to set;
* any run of 12 characters of a registered key is redacted (a server echoing the key's tail);
* workers sharing the call cache never pay twice for one request key (2 and 4 processes);
* every HTTP request sent and every answer received (abandoned ones included) is counted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import string
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakeservers import FakeOpenAI, Fault

from gcpc import secrets
from gcpc.io import write_text
from gcpc.llm import make_client
from gcpc.llm.base import AuthenticationFailed, ProviderError
from gcpc.llm.cli import llm_configs, load_llm_params, stage_errors
from gcpc.llm.schemas import ChecklistJudgment
from gcpc.llm.shared_cache import SharedCache
from gcpc.llm.store import read_call_records
from gcpc.llm.usage import write_usage_summary
from test_llm_providers import KEYS, api, cfg, judge_req, model_bodies  # noqa: F401 - `api` is a fixture

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


def model_calls_sent(server) -> int:
    return len(model_bodies(server))


# ---- refusals ---------------------------------------------------------------------------------
def test_refusal_is_recorded_once_with_its_text_and_asked_again_only_on_request(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="refusal", text="I can't help with grading this log."))
    path = tmp_path / "c.jsonl"
    client = make_client(cfg(name, server), path, progress=False)
    result = client.run_one(judge_req(name), ChecklistJudgment)
    client.store.close()
    assert not result.ok and result.refused and result.attempts == 1
    assert "I can't help with grading this log." in result.error and "invalid output" not in result.error
    assert model_calls_sent(server) == 1  # not retried as invalid output
    (rec,) = read_call_records(path)
    assert rec["error"].startswith("refused: provider declined to answer") and rec["usage"]["output_tokens"] > 0

    again = make_client(cfg(name, server), path, progress=False)  # a re-run: the refusal is final
    assert again.run_one(judge_req(name), ChecklistJudgment).refused and again.calls_made == 0
    again.store.close()
    assert model_calls_sent(server) == 1

    flag = argparse.Namespace(params=str(tmp_path / "params.yaml"), retry_refused=True)  # `--retry-refused`
    write_text(tmp_path / "params.yaml", json.dumps({"judge": cfg(name, server)}))
    asked = make_client(load_llm_params(flag)["judge"], path, progress=False)
    assert asked.run_one(judge_req(name), ChecklistJudgment).ok
    asked.store.close()
    assert model_calls_sent(server) == 2


def test_retry_refused_flag_reaches_every_llm_config(tmp_path):
    params = {"judge": {"provider": "openai", "model": "a"}, "generator": {"provider": "heuristic", "model": "b"},
              "analysis": {"rejudge": {"swap_judge": {"provider": "anthropic", "model": "c"}}}, "data": {"provider": "x"}}
    write_text(tmp_path / "params.yaml", json.dumps(params))
    loaded = load_llm_params(argparse.Namespace(params=str(tmp_path / "params.yaml"), retry_refused=True))
    assert [c["model"] for c in llm_configs(loaded)] == ["a", "b", "c"]
    assert all(c["retry_refused"] for c in llm_configs(loaded)) and "retry_refused" not in loaded["data"]
    plain = load_llm_params(argparse.Namespace(params=str(tmp_path / "params.yaml"), retry_refused=False))
    assert not any("retry_refused" in c for c in llm_configs(plain))


# ---- rejected credentials ------------------------------------------------------------------------
@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_is_one_line_naming_provider_and_variable(api, tmp_path, status):
    name, server = api
    server.faults.append(Fault(kind="status", status=status, message="invalid x-api-key", echo_auth=True))
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    with pytest.raises(AuthenticationFailed) as caught:
        client.run_one(judge_req(name), ChecklistJudgment)
    client.store.close()
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"{name} at {server.url}") and f"set the environment variable {KEYS[name][0]}" in line
    assert f"HTTP {status}" in line and KEYS[name][1] not in line and KEYS[name][1][-12:] not in line
    assert model_calls_sent(server) == 1  # never retried
    (rec,) = read_call_records(tmp_path / "c.jsonl")  # the failed attempt is on record
    assert rec["error"].startswith("provider error") and rec["wire"] == {"sent": 1, "answered": 1}


def test_stage_entry_point_prints_one_line_and_a_traceback_only_with_gcpc_debug(tmp_path):
    """`python -m gcpc.judging` itself, against a server that rejects every key."""
    with FakeOpenAI() as server:
        server.fault_rules.append(lambda body: Fault(kind="status", status=401, message="Incorrect API key provided"))
        work = judge_workspace(tmp_path / "w", server, trajectories=2)
        env = dict(os.environ, OPENAI_API_KEY="sk-test-WRONGKEY-000000000000", GCPC_CACHE_DIR="off")
        env.pop("GCPC_DEBUG", None)
        proc = subprocess.run([sys.executable, "-m", "gcpc.judging", "gcpc"], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        lines = [x for x in re.split(r"[\r\n]", proc.stderr) if x.strip() and "%|" not in x]  # not the progress bar
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("error: openai at ") and "OPENAI_API_KEY" in lines[0] and "HTTP 401" in lines[0]
        assert "Traceback" not in proc.stderr
        debug = subprocess.run([sys.executable, "-m", "gcpc.judging", "gcpc"], cwd=work, env=dict(env, GCPC_DEBUG="1"),
                               capture_output=True, text=True, timeout=300)
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "AuthenticationFailed" in debug.stderr


def test_stage_errors_lets_other_errors_through():
    with pytest.raises(ProviderError, match="HTTP 500"), stage_errors():
        raise ProviderError("HTTP 500")
    with pytest.raises(SystemExit, match="^error: openai rejected"), stage_errors():
        raise AuthenticationFailed("openai rejected the credentials")


# ---- redaction of key parts ----------------------------------------------------------------------
@pytest.fixture
def clean_secrets(monkeypatch):
    monkeypatch.setattr(secrets, "_registered", set())
    monkeypatch.setattr(secrets, "_anchors", [])


def _brute_mask(text: str, key: str) -> str:
    """The reference: mask every character inside any occurrence of any >= 12-character run of `key`."""
    marked = [False] * len(text)
    for i in range(len(key) - secrets.RUN + 1):
        piece, at = key[i:i + secrets.RUN], text.find(key[i:i + secrets.RUN])
        while at != -1:
            marked[at:at + secrets.RUN] = [True] * secrets.RUN
            at = text.find(piece, at + 1)
    out, i = [], 0
    while i < len(text):
        if marked[i]:
            while i < len(text) and marked[i]:
                i += 1
            out.append(secrets.MASK)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def test_every_run_of_12_key_characters_is_redacted(clean_secrets):
    rng = random.Random(25)
    for trial in range(400):
        secrets._registered.clear()
        secrets._anchors.clear()
        alphabet = "ab" if trial % 3 == 0 else string.ascii_letters + string.digits + "-_"  # "ab": many repeats in the key
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(secrets.MIN_SECRET, 64)))
        secrets.register(key)
        parts = []
        for _ in range(rng.randint(0, 6)):
            parts.append("".join(rng.choice(alphabet + " ") for _ in range(rng.randint(0, 30))))
            a = rng.randint(0, len(key) - 1)
            parts.append(key[a:rng.randint(a, len(key))])
        text = "".join(parts)
        assert secrets.redact(text) == _brute_mask(text, key), (key, text)
    secrets.register("sk-test-TAILCANARY-0123456789")
    assert secrets.redact("echo 9-TAILCANARY-01 and ANARY-012345 and ARY-01234 done") == \
        f"echo 9{secrets.MASK} and {secrets.MASK} and ARY-01234 done"  # "9-" is not in the key; 11 characters are not a key


def test_a_short_secret_never_edits_data(clean_secrets):
    """moto's dummy secret `testing` (or any value under MIN_SECRET characters) masks nothing: item text that
    contains the word stays as it is, so output bytes never depend on the machine's secret (issue 44)."""
    for short in ("testing", "x" * (secrets.MIN_SECRET - 1)):
        secrets.register(short)
        assert not secrets.active()
        assert secrets.redact(f"Is the user printing or {short} it?") == f"Is the user printing or {short} it?"
    long = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    secrets.register(long)
    assert secrets.redact(f"echo {long[5:30]} testing") == f"echo {secrets.MASK} testing"


# ---- abandoned calls counted ---------------------------------------------------------------------
def test_every_request_sent_and_answer_received_is_counted(api, tmp_path):
    name, server = api
    server.faults.extend([Fault(kind="delay", seconds=1.0), Fault(kind="status", status=500), Fault(kind="reset")])
    path = tmp_path / "llm_calls.jsonl"
    client = make_client(cfg(name, server, timeout_s=0.3), path, progress=False)
    assert client.run_one(judge_req(name), ChecklistJudgment).ok
    client.store.compact(client.used_keys)
    client.store.close()
    (rec,) = read_call_records(path)
    assert rec["wire"] == {"sent": 4, "answered": 2}  # the timeout and the reset were abandoned
    total = write_usage_summary(path, cfg(name, server))["total"]
    assert (total["http_requests_sent"], total["http_answers_received"], total["http_abandoned"]) == (4, 2, 2)
    assert total["http_requests_sent"] == model_calls_sent(server)  # every request the server saw is counted


# ---- twin workers sharing the call cache ---------------------------------------------------------
WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from llm_requests import judge_req
    from gcpc.llm import make_client
    from gcpc.llm.schemas import ChecklistJudgment
    cfg, store, go, n = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    client = make_client(cfg, store, progress=False)
    reqs = [judge_req("openai", i) for i in range(n)]
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    results = client.run(reqs, ChecklistJudgment)
    client.store.compact(client.used_keys)
    client.store.close()
    print(json.dumps({{"ok": sum(r.ok for r in results), "calls": client.calls_made, "hits": client.shared_hits}}))
""").format(tests=str(TESTS))


def _spawn(config: dict, store: Path, go: Path, n: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(config), str(store), str(go), str(n)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ready(proc: subprocess.Popen) -> None:
    """Wait for a worker's 'ready' (its imports done, its requests built): the workers start up side by side."""
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrent_workers_sharing_the_cache_never_pay_twice(tmp_path, workers, concurrency):
    n = 24
    with FakeOpenAI(latency_s=0.03) as server:
        env = dict(os.environ, OPENAI_API_KEY=KEYS["openai"][1])
        config = cfg("openai", server, concurrency=concurrency, cache_dir=str(tmp_path / "shared"))
        go = tmp_path / "go"
        procs = [_spawn(config, tmp_path / f"w{i}" / "llm_calls.jsonl", go, n, env) for i in range(workers)]
        for p in procs:
            _ready(p)
        go.touch()  # all start together, in the same request order: the worst case for twins
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            outs.append(json.loads(out.strip().splitlines()[-1]))
        paid_twice = sum(c - 1 for c in server.prompt_counts.values())
        print(f"\nTWINS workers={workers} concurrency={concurrency}: server calls {server.model_calls} for {n} keys, "
              f"paid twice {paid_twice}, per worker {outs}")
        assert paid_twice == 0 and server.model_calls == n
        assert all(o["ok"] == n for o in outs) and sum(o["calls"] for o in outs) == n
        assert sum(o["calls"] > 0 for o in outs) >= 2  # the work was shared, not done by one while the others idled
        first = (tmp_path / "w0" / "llm_calls.jsonl").read_bytes()
        assert all((tmp_path / f"w{i}" / "llm_calls.jsonl").read_bytes() == first for i in range(workers))
        assert not list((tmp_path / "shared").rglob("*.claim"))


HOLDER = textwrap.dedent("""
    import sys, time
    from gcpc.llm.shared_cache import SharedCache
    cache = SharedCache(sys.argv[1], stale_s=float(sys.argv[3]))
    assert cache.claim(sys.argv[2])
    print("held", flush=True)
    time.sleep(600)
""")


def _holder(root: Path, key: str, stale_s: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), key, str(stale_s)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_killed_workers_claim_is_free_at_once(tmp_path):
    cache, key = SharedCache(tmp_path, stale_s=600), "ab" * 32
    holder = _holder(tmp_path, key, 600)
    try:
        assert not cache.claim(key) and not cache.stale(key)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert cache.claim(key)  # the kernel dropped the dead worker's lock: no waiting out a timeout
        cache.release(key)
        assert not cache.claim_path(key).exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_frozen_workers_claim_goes_stale_and_the_request_is_asked_once(tmp_path, monkeypatch):
    """A holder that stops refreshing its claim (SIGSTOP) is given up on after the stale timeout."""
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["openai"][1])
    with FakeOpenAI() as server:
        client = make_client(cfg("openai", server, cache_dir=str(tmp_path / "shared")), tmp_path / "c.jsonl", progress=False)
        client.shared = SharedCache(tmp_path / "shared", stale_s=0.6)
        request = judge_req("openai")
        holder = _holder(tmp_path / "shared", request.key, 0.6)
        try:
            holder.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            result = client.run_one(request, ChecklistJudgment)
            waited = time.monotonic() - t0
        finally:
            holder.kill()
            holder.wait()
        client.store.close()
        assert result.ok and server.model_calls == 1 and 0.6 <= waited < 5


# ---- key-tail canary: a whole judge stage under DVC ----------------------------------------------
def judge_workspace(dest: Path, server: FakeOpenAI, *, trajectories: int, marks: tuple[str, ...] = (), **judge) -> Path:
    """A git + DVC project with one `judge` stage (gcpc arm) over the first `trajectories` of the ingested demo
    corpus; `marks[i]` is appended to trajectory i's last event (for a server fault rule to find)."""
    import yaml
    from judge_corpus import replicated_corpus

    from gcpc.io import iter_jsonl, record_outputs, write_jsonl

    replicated_corpus(dest, trajectories)
    processed = dest / "data" / "processed"
    kept = list(iter_jsonl(processed / "ingest" / "trajectories.jsonl"))[:trajectories]
    for t, mark in zip(kept, marks):
        t["events"][-1]["text"] += "\n" + mark
    write_jsonl(processed / "ingest" / "trajectories.jsonl", kept)
    record_outputs(processed / "ingest", ["trajectories.jsonl"])  # the ingest's manifest says what is there now
    for name in ("attempts.jsonl", "llm_calls.jsonl", "usage_summary.json"):
        (processed / "synthesize" / name).unlink(missing_ok=True)
    config = {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048, "max_attempts": 2,
              "concurrency": 4, "timeout_s": 5.0, "base_url": server.url + "/v1",
              "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retry_after_s": 1.0}} | judge
    params = {"judge": config, "judging": {"max_event_chars": 4000},
              "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja"), "evidence_gate": True}}}
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    stage = {"cmd": "python -m gcpc.judging gcpc", "params": ["judge", "judging", "arm"],
             "deps": ["data/processed/ingest/trajectories.jsonl", "data/processed/synthesize/checklists.jsonl"],
             "outs": [{"data/processed/judge/gcpc": {"persist": True}}]}
    (dest / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"judge": stage}}, sort_keys=False))
    (dest / ".gitignore").write_text("/data/processed/judge\n")
    return dest


CANARY_KEY = "sk-canary-" + "Zq7RtY2uIo9PaS4dFg6HjK8lMn3BvC5xWe1"
TAIL = CANARY_KEY[-20:]
SCANNED = ("data", "reports", "metrics", "figures", ".dvc")


def echoing_responder(ctx) -> str:
    """The default answers, with the key's last 20 characters in every free-text field."""
    from fakeservers import default_responder

    data = json.loads(default_responder(ctx))
    for v in data.get("verdicts", []):
        v["reason"] += f" (key seen: {TAIL})"
    for k in ("rationale", "reasoning"):
        if k in data:
            data[k] += f" (key seen: {TAIL})"
    return json.dumps(data)


def echo_faults(body: str) -> Fault | None:
    """One request refused with the tail in the refusal, one rejected (HTTP 400) with it in the error."""
    if "(canary refusal)" in body:
        return Fault(kind="refusal", text=f"I won't grade logs that mention {TAIL}.")
    if "(canary error)" in body:
        return Fault(kind="status", status=400, message=f"context_length_exceeded near {TAIL}")
    return None


def key_runs_in(root: Path, key: str) -> tuple[int, list[str]]:
    """(files scanned, files holding any 12-character run of `key`) under `SCANNED` of `root`; gzip and
    parquet files are read decompressed."""
    import gzip
    import io

    import pyarrow.parquet as pq

    windows = [key[i:i + secrets.RUN] for i in range(len(key) - secrets.RUN + 1)]
    n, hits = 0, []
    for d in SCANNED:
        for p in sorted((root / d).rglob("*")) if (root / d).is_dir() else []:
            if not p.is_file() or p.is_symlink():
                continue
            n += 1
            data = p.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            text = (json.dumps(pq.read_table(io.BytesIO(data)).to_pylist(), default=str) if data[:4] == b"PAR1"
                    else data.decode("latin-1"))
            if any(w in text for w in windows):
                hits.append(str(p.relative_to(root)))
    return n, hits


def _git_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""), DVC_NO_ANALYTICS="1",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", **extra)
    return env


def _ok(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{' '.join(args)} -> {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.mark.slow
def test_key_tail_canary_judge_stage_under_dvc(tmp_path):
    """A server echoing the key's last 20 characters in answers, a refusal and an error: after `dvc repro`
    and a queued `dvc exp run`, no file under data/ or .dvc/ (nor the shared cache) holds 12 of them."""
    with FakeOpenAI(responder=echoing_responder) as server:
        server.fault_rules.append(echo_faults)
        env = _git_env({"OPENAI_API_KEY": CANARY_KEY, "GCPC_CACHE_DIR": str(tmp_path / "shared")})
        work = judge_workspace(tmp_path / "w", server, trajectories=20, marks=("(canary refusal)", "(canary error)"),
                               failure_budget=0.2)
        for args in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"],
                     ["dvc", "repro"], ["git", "add", "-A"], ["git", "commit", "-qm", "judged"],
                     ["dvc", "exp", "run", "--queue", "-S", "judge.max_tokens=1024"], ["dvc", "exp", "run", "--run-all"]):
            _ok(args, work, env)
        calls = (work / "data/processed/judge/gcpc/llm_calls.jsonl").read_text()
        assert calls.count("[REDACTED]") >= 20 and "refused: provider declined to answer" in calls  # it was echoed, and masked
        assert "context_length_exceeded near [REDACTED]" in calls
        n, hits = key_runs_in(work, CANARY_KEY)
        shared = [p.read_text() for p in (tmp_path / "shared").rglob("*.jsonl")]
        shared_n, shared_hits = len(shared), [t for t in shared if any(CANARY_KEY[i:i + 12] in t for i in range(len(CANARY_KEY) - 11))]
        print(f"\nCANARY judge stage: {n} files scanned under {', '.join(SCANNED)}, {len(hits)} with a key run; "
              f"shared cache {shared_n} files, {len(shared_hits)} with a key run")
        assert n > 20 and hits == [] and shared_n > 0 and shared_hits == []


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("GCPC_E2E_FULL") != "1",
                    reason="opt-in (GCPC_E2E_FULL=1): the whole pipeline against the fake server, ~6 min on 2 busy cores")
def test_key_tail_canary_whole_pipeline(tmp_path):
    """`dvc repro` of the whole repository with the judge on the echoing fake server: 0 files under data/,
    reports/, metrics/, figures/ and .dvc/ hold any 12-character run of the key."""
    import shutil

    from demo_outputs import git_files

    dest = tmp_path / "gcpc"
    for rel in git_files(ROOT):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("data/processed/", "metrics/", "figures/")) and Path(rel).name != "dvc.lock":
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    with FakeOpenAI(responder=echoing_responder) as server:
        env = _git_env({"OPENAI_COMPAT_API_KEY": CANARY_KEY, "GCPC_CACHE_DIR": str(tmp_path / "shared")})
        for args in ([sys.executable, "-m", "gcpc.experiment", "llm@judge=openai-compatible", f"judge.base_url={server.url}/v1",
                      "judge.model=gpt-fake-1", "judge.timeout_s=30"],
                     ["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "clone"], ["dvc", "repro"]):
            _ok(args, dest, env)
        assert server.model_calls > 100
    assert "[REDACTED]" in (dest / "data/processed/judge/gcpc/judgments.jsonl").read_text()
    n, hits = key_runs_in(dest, CANARY_KEY)
    print(f"\nCANARY whole pipeline: {server.model_calls} model calls, {n} files scanned, {len(hits)} with a key run")
    assert n > 300 and hits == []
