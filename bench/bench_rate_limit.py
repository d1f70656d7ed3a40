"""The judge stage against fake providers that enforce rate limits (issue 46): at the limit, not into it.

    python bench/bench_rate_limit.py                                # shared TB1 set, openhands + mini-swe-agent (652 calls)
    python bench/bench_rate_limit.py --before-src BEFORE_SRC        # the same with another checkout's src/ (today's code)
    python bench/bench_rate_limit.py --data smoke --time-scale 60 --out /tmp/rate_limit.json   # the test suite's smoke size

In a temporary folder (as bench_judge_stage.py: params.yaml for `--data`, restricted to `--harness` (the TB1
harnesses whose logs are long enough that a 60-RPM key reaches its tokens-per-minute limit: the mean request
must exceed 200,000 / 60 = 3,333 tokens, and TB1's LeadArchitectAgent logs are ~400 tokens), ingest and
heuristic synthesis once)
the judge stage `python -m gcpc.judging <arm>` runs, with an empty call store and the shared cache off, against
a fake server (tests/fakeservers, its own process, `--latency` seconds per call):

* `openai`: OpenAI-style limits, `--rpm` / `--tpm` (default 60 / 200,000), `x-ratelimit-*` headers and 429s
  with Retry-After past them; the judge is conf/llm/openai-compatible.yaml at `--concurrency` (32);
* `anthropic`: Anthropic-style limits, `--anthropic-limits RPM ITPM OTPM` (default 50 / 200,000 / 40,000),
  `anthropic-ratelimit-*` headers and whole-second Retry-After; the judge is
  conf/llm/claude-haiku-4-5.yaml at `--concurrency`;

and once per provider against the same fake without limits (the reference: the limited run's judgments.jsonl
must be byte-identical to it). The judge learns the limits from the headers (nothing configured) with
`rate_limit: {window_s: 60 / time_scale, probe: true}`.

**Accelerated clock.** The fake server's minute lasts 60 / `--time-scale` real seconds (default 20: 3 s), its
limits, refill, reset headers and Retry-After all on that clock; the judge's `rate_limit.window_s` says the same,
so a run of ~15 server minutes takes ~4 real minutes at the default 4. The fake latency is real time. The scale
must leave the limit below what the stage can send on the machine (else nothing binds: on this 2-core machine
under load the stage sends ~7 calls/s, ~30,000 tokens/s).

Reported per run: calls answered, requests answered 429 and their share, the tokens the server charged per
bucket, the span first arrival to last answer (real seconds and server minutes), `fraction_of_allowed` per
bucket = charged / (limit x (span in server minutes + 1)) (what the buckets allowed over the run: one full
bucket at the start plus the refill; target >= 0.9 for the binding bucket), the stage's exit status and the
call records that failed on a 429 (target 0), whether the judgments equal the unlimited run's, and the
machine's load average before and after each run (`/proc/sys/kernel/sched_autogroup_enabled` recorded: with
autogroup on, `nice` orders only processes of one autogroup, so an undisturbed measurement runs alone).
With `--before-src` (a folder holding another checkout's `src/`, e.g. `git archive HEAD src | tar -x -C DIR`)
the limited runs use that code without `rate_limit` settings: today's figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from portable import command_line, load_average, write_result  # noqa: E402

from bench_judge_stage import prepare, run_child  # noqa: E402
from bench_llm_throughput import start_server as _start, stop_server  # noqa: E402  one fake-server launcher for the benchmarks

REPO = Path(__file__).resolve().parents[1]
TARGET_FRACTION = 0.9
TARGET_429_SHARE = 0.02
JUDGE_CONFIGS = {"openai": "openai-compatible", "anthropic": "claude-haiku-4-5"}


def autogroup() -> str | None:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return None


def start_server(provider: str, latency: float, limits: dict[str, int], scale: float) -> tuple[subprocess.Popen[str], str]:
    flags = {"requests": "--rpm", "tokens": "--tpm", "input_tokens": "--input-tpm", "output_tokens": "--output-tpm"}
    extra = ["--time-scale", str(scale)] + [x for k, v in limits.items() for x in (flags[k], str(v))]
    return _start(provider, latency, flags=extra)


def judge_cfg(provider: str, url: str, concurrency: int, scale: float, limited: bool, before: bool) -> dict:
    cfg = yaml.safe_load((REPO / "conf" / "llm" / f"{JUDGE_CONFIGS[provider]}.yaml").read_text(encoding="utf-8"))
    cfg.update(base_url=url + ("/v1" if provider == "openai" else ""), concurrency=concurrency, cache_dir="off", timeout_s=120,
               api_key_env="GCPC_BENCH_FAKE_KEY", api_key_required=False,
               retry={"max_retries": 6, "backoff_base_s": 0.1, "backoff_max_s": 2.0, "max_retry_after_s": 30.0})
    if provider == "anthropic":
        cfg["structured_output"] = "json_schema"  # the fake answers the schema it is sent (the shipped config: in the prompt)
    if limited and not before:
        cfg["rate_limit"] = {"window_s": 60.0 / scale, "probe": True}
    return cfg


def run_stage(work: Path, params: dict, arm: str, judge: dict, env: dict[str, str]) -> dict:
    params = dict(params, judge=judge)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    out = work / "data" / "processed" / "judge" / arm
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gcpc.judging", arm, "--params", "params.yaml"], cwd=work, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    calls = out / "llm_calls.jsonl"
    records = [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines() if line.strip()] if calls.exists() else []
    judgments = out / "judgments.jsonl"
    return {"rc": proc.returncode, "wall_s": round(wall, 2),
            "stderr_tail": proc.stderr.strip().splitlines()[-1][:400] if proc.returncode and proc.stderr.strip() else None,
            "records_failed_on_429": sum(1 for r in records if not r.get("ok") and "429" in (r.get("error") or "")),
            "records": len(records), "judgments": judgments.read_bytes() if judgments.exists() else None}


def measure(work: Path, params: dict, arm: str, provider: str, limits: dict[str, int], args: argparse.Namespace,
            env: dict[str, str], limited: bool, before: bool) -> dict:
    before_load = load_average()
    server, url = start_server(provider, args.latency, limits if limited else {}, args.time_scale)
    try:
        run = run_stage(work, params, arm, judge_cfg(provider, url, args.concurrency, args.time_scale, limited, before), env)
    finally:
        counters = stop_server(server) if server.poll() is None else {}
        if server.poll() is None:
            server.kill()
    row = {"provider": provider, "limited": limited, "code": "before" if before else "this", "calls": counters.get("model_calls"),
           "max_inflight": counters.get("max_inflight"), **{k: v for k, v in run.items() if k != "judgments"},
           "load_average_before": before_load, "load_average_after": load_average()}
    rate = counters.get("rate")
    if rate:
        minutes = rate["span_server_minutes"]
        sent = rate["admitted"] + rate["answered_429"]
        row.update(rate=rate, share_answered_429=round(rate["answered_429"] / sent, 4) if sent else None,
                   fraction_of_allowed={k: round(v / (limits[k] * (minutes + 1)), 3) for k, v in rate["charged"].items()},
                   per_minute_over_limit={k: round(v / minutes / limits[k], 3) if minutes else None for k, v in rate["charged"].items()})
        binding = max(row["fraction_of_allowed"], key=lambda k: row["fraction_of_allowed"][k])
        row["binding_limit"] = binding
    return row | {"_judgments": run["judgments"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="terminal-bench-1", help="conf/data config (default: the shared TB1 set)")
    parser.add_argument("--arm", default="gcpc")
    parser.add_argument("--providers", nargs="+", default=["openai", "anthropic"], choices=sorted(JUDGE_CONFIGS))
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call at the fake server (real time)")
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--tpm", type=int, default=200_000)
    parser.add_argument("--anthropic-limits", type=int, nargs=3, default=[50, 200_000, 40_000], metavar=("RPM", "ITPM", "OTPM"))
    parser.add_argument("--time-scale", type=float, default=4.0, help="server minutes per real minute")
    parser.add_argument("--harness", nargs="*", default=["openhands", "mini-swe-agent"],
                        help="population.harness (none: every trajectory of --data)")
    parser.add_argument("--before-src", type=Path, help="a folder with another checkout's src/: its judge runs the limited stage")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "rate_limit.json")
    args = parser.parse_args(argv)
    limits = {"openai": {"requests": args.rpm, "tokens": args.tpm},
              "anthropic": dict(zip(("requests", "input_tokens", "output_tokens"), args.anthropic_limits))}
    env = dict(os.environ, GCPC_CACHE_DIR="off", PYTHONPATH=str(REPO / "src"), GCPC_BENCH_FAKE_KEY="sk-fake-bench")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = load_average()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gcpc-rate-limit-") as tmp:
        work = Path(tmp)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        params = prepare(work, args.data, env, harness=args.harness)
        run_child([sys.executable, "-c", "import gcpc.judging.stage, gcpc.llm.providers.openai_provider"], work, env)
        for provider in args.providers:
            reference = measure(work, params, args.arm, provider, limits[provider], args, env, limited=False, before=False)
            limited_env = dict(env, PYTHONPATH=str(args.before_src.resolve() / "src")) if args.before_src else env
            row = measure(work, params, args.arm, provider, limits[provider], args, limited_env, limited=True,
                          before=args.before_src is not None)
            same = reference.pop("_judgments")
            row["judgments_identical_to_unlimited"] = same is not None and row.pop("_judgments") == same
            row.pop("_judgments", None)
            row["meets_target"] = (row["rc"] == 0 and row["records_failed_on_429"] == 0 and row["judgments_identical_to_unlimited"]
                                   and (row.get("share_answered_429") or 0) <= TARGET_429_SHARE
                                   and max((row.get("fraction_of_allowed") or {0: 0}).values()) >= TARGET_FRACTION)
            rows += [reference, row]
            print(f"{provider}: limited run ({row['code']} code) rc {row['rc']}, {row['calls']} calls, "
                  f"429 share {row.get('share_answered_429')}, fraction of allowed {row.get('fraction_of_allowed')}, "
                  f"failed on 429: {row['records_failed_on_429']}, judgments identical: {row['judgments_identical_to_unlimited']}, "
                  f"wall {row['wall_s']} s (unlimited {reference['wall_s']} s), load {row['load_average_before'][0]}", flush=True)
    result = {"benchmark": "judge stage against fake providers enforcing rate limits (accelerated clock)",
              "command": command_line("bench/bench_rate_limit.py", argv if argv is not None else sys.argv[1:]),
              "data": args.data, "arm": args.arm, "concurrency": args.concurrency, "latency_s": args.latency,
              "time_scale": args.time_scale, "server_minute_s": round(60.0 / args.time_scale, 4), "limits": limits,
              "code": "before (--before-src, no rate_limit settings)" if args.before_src else "this checkout",
              "targets": {"fraction_of_allowed_binding_limit": TARGET_FRACTION, "share_answered_429": TARGET_429_SHARE,
                          "records_failed_on_429": 0, "judgments_identical_to_unlimited": True},
              "runs": rows, "meets_target": all(r["meets_target"] for r in rows if r["limited"]),
              "load_average_before": load_before, "load_average_after": load_average(), "sched_autogroup_enabled": autogroup(),
              "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}}
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
