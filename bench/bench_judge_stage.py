"""Judge stage throughput against a local fake OpenAI-compatible server with a fixed latency per call.

    python bench/bench_judge_stage.py                               # shared TB1 set, concurrency 8 and 32, 0.2 and 1.0 s
    python bench/bench_judge_stage.py --data demo --levels 4 --latency 0.05 --out /tmp/judge_stage.json

Unlike bench_llm_throughput.py (the client alone), this runs the judge stage itself,
`python -m gcpc.judging <arm>`, as `dvc repro` does: reading trajectories.jsonl in chunks, rendering and
fitting each judge view, building and keying requests, calling, validating and writing. In a temporary
folder it composes params.yaml for `--data` with the judge `conf/llm/openai-compatible.yaml` pointed at a
fake server (tests/fakeservers, its own process; every reply schema-valid after `--latency` seconds),
runs ingest and synthesis once (heuristic generator), then the judge stage once per concurrency level
with an empty call store and the shared call cache off (every request is a new call).

Reported per level (each concurrency at each latency, `--repeat` times): calls, wall seconds, the ideal
wall (calls x latency / concurrency), the fraction of ideal, the share of the run with no call in flight
(from the server), the most calls in flight, the stage's CPU seconds and peak RSS, and the machine's load
average before and after the level (the fake server and the stage share the machine with whatever else
runs: CPU ms per call times calls per second must fit in the cores left). Target (issue 29): >= 0.8 of
ideal at 8 and 32.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ itself, also when imported by tests
from portable import command_line, load_average, write_result  # noqa: E402

from bench_llm_throughput import start_server as _start, stop_server  # one fake-server launcher for both benchmarks

REPO = Path(__file__).resolve().parents[1]
TARGET_FRACTION = 0.8


def run_child(argv: list[str], cwd: Path, env: dict[str, str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read() if proc.stdout else b""  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{out.decode(errors='replace')[-4000:]}")
    return {"wall_s": wall, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_rss_bytes": usage.ru_maxrss * 1024}


def prepare(work: Path, data: str, env: dict[str, str], harness: list[str] | None = None) -> dict:
    """params.yaml for `data` (the heuristic generator; the judge set per level), ingest and synthesize;
    `harness`: only those harnesses' trajectories (`data.population.harness`)."""
    from gcpc.experiment import compose

    compose(work / "params.yaml", [f"data={data}", "llm@judge=openai-compatible"], conf_dir=REPO / "conf")
    params = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
    if harness:
        params["data"]["population"] = dict(params["data"].get("population") or {}, harness=list(harness))
    root = (REPO / params["data"]["root"]).resolve()
    if not root.exists():
        raise SystemExit(f"bench_judge_stage: {root} not found (conf/data/{data}.yaml; ../shared/data is needed)")
    params["data"]["root"] = str(root)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (work / "prompts").symlink_to(REPO / "prompts")
    for mod in ("gcpc.corpus", "gcpc.synthesis"):
        run_child([sys.executable, "-m", mod, "--params", "params.yaml"], work, env)
    return params


def measure(work: Path, params: dict, arm: str, url: str, latency: float, concurrency: int, env: dict[str, str],
            server: subprocess.Popen[str]) -> dict:
    params = dict(params)
    params["judge"] = dict(params["judge"], base_url=url + "/v1", concurrency=concurrency, cache_dir="off", timeout_s=120,
                           retry={"max_retries": 0, "backoff_base_s": 0.1, "backoff_max_s": 1.0, "max_retry_after_s": 1.0})
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    out = work / "data" / "processed" / "judge" / arm
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    child = run_child([sys.executable, "-m", "gcpc.judging", arm, "--params", "params.yaml"], work, env)
    counters = stop_server(server)
    calls = counters.get("model_calls", 0)
    ideal = calls * latency / concurrency
    span = counters.get("span_s") or 0.0
    return {"concurrency": concurrency, "calls": calls, "wall_s": round(child["wall_s"], 2), "ideal_wall_s": round(ideal, 2),
            "fraction_of_ideal": round(ideal / child["wall_s"], 3) if child["wall_s"] else None,
            "idle_share_of_wall": round(1 - (counters.get("busy_s") or 0.0) / child["wall_s"], 3) if child["wall_s"] else None,
            "first_to_last_call_s": span,
            "fraction_of_ideal_first_to_last_call": round(ideal / span, 3) if span else None,
            "max_inflight": counters.get("max_inflight"),
            "stage_cpu_s": child["cpu_s"], "cpu_ms_per_call": round(1000 * child["cpu_s"] / calls, 2) if calls else None,
            "peak_rss_bytes": child["peak_rss_bytes"], "meets_target": calls > 0 and ideal / child["wall_s"] >= TARGET_FRACTION}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="terminal-bench-1", help="conf/data config (default: the shared TB1 set)")
    parser.add_argument("--arm", default="gcpc")
    parser.add_argument("--levels", type=int, nargs="+", default=[8, 32], help="judge.concurrency values")
    parser.add_argument("--latency", type=float, nargs="+", default=[0.2, 1.0], help="seconds per call at the fake server")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per level (load varies; each is reported)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "judge_stage.json")
    args = parser.parse_args(argv)
    env = dict(os.environ, GCPC_CACHE_DIR="off", PYTHONPATH=str(REPO / "src"))
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="gcpc-judge-stage-") as tmp:
        work = Path(tmp)
        # bytecode cached (in the temporary folder) as in an ordinary installation: with PYTHONDONTWRITEBYTECODE
        # set, every stage process would compile the OpenAI SDK's sources again (~2 s of CPU before the first call)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        params = prepare(work, args.data, env)
        run_child([sys.executable, "-c", "import gcpc.judging.stage, gcpc.llm.providers.openai_provider"], work, env)
        levels = []
        for latency in args.latency:
            for c in args.levels:
                for _ in range(args.repeat):
                    load = load_average()
                    server, url = _start("openai", latency)
                    try:
                        row = measure(work, params, args.arm, url, latency, c, env, server)
                    finally:
                        if server.poll() is None:
                            server.kill()
                    row = {"latency_s": latency, **row, "load_average_before": load,
                           "load_average_after": load_average()}
                    levels.append(row)
                    print(f"latency {latency:g} s, concurrency {c:3d}: {row['calls']} calls in {row['wall_s']} s = "
                          f"{row['fraction_of_ideal']} of ideal (idle {row['idle_share_of_wall']}, max in flight "
                          f"{row['max_inflight']}, {row['cpu_ms_per_call']} ms CPU per call, load {load[0]})", flush=True)
    result = {"benchmark": "judge stage vs a local fake OpenAI-compatible server with fixed latency",
              "command": command_line("bench/bench_judge_stage.py", argv if argv is not None else sys.argv[1:]),
              "data": args.data, "arm": args.arm, "latencies_s": args.latency, "target_fraction_of_ideal": TARGET_FRACTION,
              "levels": levels, "meets_target": all(r["meets_target"] for r in levels),
              "load_average_before": load_before, "load_average_after": load_average(),
              "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}}
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
