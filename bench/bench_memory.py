"""Peak memory of ingesting one very large agent log, per log format.

    python bench/bench_memory.py                 # 200 MB logs -> bench/results/memory.json
    python bench/bench_memory.py --mb 20 --out /tmp/memory.json

For each format a corpus with ONE trial whose agent log is `--mb` MB (10^6 bytes) is written to a
temporary folder, then ingested (`gcpc.corpus.ingest.ingest` + `write_outputs`, as the stage does)
in a fresh child process. The memory ratio is defined once, in bench/README.md ("Peak memory of one
large log"): `peak_over_log = (peak_rss_bytes - baseline_rss_bytes) / log_bytes`, where
`peak_rss_bytes` is the child's peak resident set (`ru_maxrss`) and `baseline_rss_bytes` that of a
child that ingests a ~1 KB log of the same format the same way (same imports, pyarrow included, and
fixed costs). Every result records all three absolute figures beside the ratio, and the baseline's
definition (`baseline`), so that a changed baseline shows. Target (issue 11): ratio under 2.

Formats: `claude-code-stream-json` (Harbor `agent/claude-code.txt`, tool outputs of ~4 KB),
`tb1-pane` (Terminal-Bench 1 `panes/post-agent.txt`, a plain terminal capture), `tb1-agent-log`
(Terminal-Bench 1 `sessions/agent.log`, the raw stream with ANSI escapes), `inspect-eval` (an Inspect AI
`.eval` log of `--mb` MB: many samples of about 1 MB of tool output each, written by Inspect's own
`write_eval_log` from the sample of tests/fixtures/inspect/file_tasks.eval; needs the `inspect` extra).
An Inspect log is read a sample at a time, so its peak follows the largest sample, not the log.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ itself, also when imported by tests
from portable import command_line  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FORMATS = ("claude-code-stream-json", "tb1-pane", "tb1-agent-log", "inspect-eval")
RATIO = "peak_over_log = (peak_rss_bytes - baseline_rss_bytes) / log_bytes (bench/README.md, 'Peak memory of one large log')"
BASELINE = ("ru_maxrss of a fresh child that ingests and writes a ~1 KB log of the same format the same way "
            "(same imports, pyarrow included, and fixed costs)")


def _write_stream_json(path: Path, size: int) -> None:
    out = ['{"type":"system","subtype":"init","cwd":"/root","tools":["Bash"]}\n']
    n, total = 0, len(out[0])
    with path.open("w", encoding="utf-8") as fh:
        fh.write(out[0])
        while total < size:
            n += 1
            body = "".join(f"line {n}-{i}: some build output, file_{i}.py OK\n" for i in range(90))
            recs = [{"type": "assistant", "message": {"content": [
                        {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": f"make step-{n}"}}]}},
                    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": body}]}}]
            text = "".join(json.dumps(r) + "\n" for r in recs)
            fh.write(text)
            total += len(text)


def _write_pane(path: Path, size: int, ansi: bool) -> None:
    total, n = 0, 0
    with path.open("w", encoding="utf-8") as fh:
        while total < size:
            n += 1
            prompt = "\x1b[01;32mroot@box\x1b[00m:/app# " if ansi else "root@box:/app# "
            chunk = prompt + f"make step-{n}\n" + "".join(f"compiling file_{i}.c ... ok ({n})\n" for i in range(60))
            if ansi:
                chunk += "".join(f"\r[{'#' * k}{' ' * (20 - k)}] {k * 5}%" for k in range(0, 21, 4)) + "\n"
            fh.write(chunk)
            total += len(chunk)


def _write_inspect_log(path: Path, size: int) -> None:
    """An `.eval` log of about `size` bytes: copies of the fixture's first sample, each with ~1 MB of (poorly
    compressible) tool output, so the zip reaches the size; written by Inspect, never by hand."""
    import base64
    import random

    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import ChatMessageTool

    base = read_eval_log(str(REPO / "tests" / "fixtures" / "inspect" / "file_tasks.eval"))
    template = base.samples[0]
    rng = random.Random(0)
    per_sample = 1_000_000
    n = max(1, round(size / (per_sample * 0.76)))  # base64 of random bytes deflates to ~76 %
    samples = []
    for k in range(n):
        messages = list(template.messages)
        for j in range(8):
            body = base64.b64encode(rng.randbytes(per_sample * 3 // 32)).decode()
            messages.append(ChatMessageTool(content=f"chunk {k}-{j}\n{body}", function="bash", tool_call_id=f"t{j}"))
        samples.append(template.model_copy(update={"id": f"s{k:05d}", "messages": messages, "events": [],
                                                   "attachments": {}}))
    base.samples = samples
    base.eval.dataset.samples = n
    base.eval.dataset.sample_ids = [s.id for s in samples]  # Inspect streams the samples the header lists
    write_eval_log(base, str(path), format="eval")


def make_corpus(fmt: str, dest: Path, mb: float) -> tuple[dict, Path]:
    size = int(mb * 1_000_000)
    if fmt == "inspect-eval":
        log = dest / "logs" / "big.eval"
        log.parent.mkdir(parents=True)
        # written in its own process: a child's ru_maxrss starts at its parent's peak (Linux keeps it across
        # fork and exec), so the parent must not grow to hold the log's samples
        subprocess.run([sys.executable, __file__, "--write-inspect", str(log), str(size)], check=True)
        return {"name": "big", "format": "inspect", "benchmark": "bench", "trials_dirs": ["logs"]}, log
    if fmt == "claude-code-stream-json":
        task = dest / "tasks" / "big"
        (task / "tests").mkdir(parents=True)
        (task / "instruction.md").write_text("Build the project.\n")
        (task / "tests" / "test_outputs.py").write_text("def test_built():\n    pass\n")
        trial = dest / "jobs" / "j" / "big__1"
        (trial / "agent").mkdir(parents=True)
        (trial / "config.json").write_text(json.dumps({"task": {"path": "/x/big"}, "trial_name": "big__1",
                                                       "agent": {"name": "claude-code", "model_name": "m"}}))
        (trial / "result.json").write_text(json.dumps({"task_name": "big", "verifier_result": {"rewards": {"reward": 1.0}}}))
        log = trial / "agent" / "claude-code.txt"
        _write_stream_json(log, size)
        return {"name": "big", "benchmark": "bench", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}, log
    trial = dest / "runs" / "20250101_agent_model" / "big" / "big.1-of-1"
    trial.mkdir(parents=True)
    (trial / "results.json").write_text(json.dumps({"task_id": "big", "instruction": "Build it.", "is_resolved": True,
                                                    "parser_results": {"test_built": "passed"}}))
    (trial / "commands.txt").write_text("make\n")
    rel = "panes/post-agent.txt" if fmt == "tb1-pane" else "sessions/agent.log"
    log = trial / rel
    log.parent.mkdir(parents=True)
    _write_pane(log, size, ansi=fmt == "tb1-agent-log")
    return {"name": "big", "format": "terminal-bench-1", "trials_dirs": ["runs"]}, log


def child(mode: str, cfg_json: str, root: str) -> None:
    """Run in a fresh process: import, optionally ingest; print the peak RSS (KiB on Linux)."""
    from gcpc.corpus.ingest import ingest, write_outputs

    if json.loads(cfg_json).get("format") == "inspect":
        import inspect_ai.log  # noqa: F401 - imported by the reader; the baseline imports it too
        import inspect_ai.model  # noqa: F401

        import gcpc.corpus.inspect_log  # noqa: F401

    t0 = time.perf_counter()
    n = 0
    if mode == "ingest":
        result = ingest(json.loads(cfg_json), Path(root))
        n = len(result.trajectories)
        write_outputs(result, Path(root) / "out")
    print(json.dumps({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "trajectories": n,
                      "seconds": round(time.perf_counter() - t0, 2)}))


def measure(mode: str, cfg: dict, root: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", mode, json.dumps(cfg), str(root)], capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "memory.json"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--write-inspect", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_inspect:
        _write_inspect_log(Path(args.write_inspect[0]), int(args.write_inspect[1]))
        return
    if args.child:
        child(*args.child)
        return
    results = {}
    load_before = [round(x, 2) for x in os.getloadavg()]
    for fmt in args.formats:
        if fmt == "inspect-eval" and importlib.util.find_spec("inspect_ai") is None:
            print("inspect-eval: skipped, inspect-ai is not installed (pip install -e \".[inspect]\")", flush=True)
            continue
        with tempfile.TemporaryDirectory(prefix="gcpc-mem-") as tmp:
            cfg, log = make_corpus(fmt, Path(tmp) / "big", args.mb)
            # the baseline ingests a ~1 KB log of the same format: the same modules (pyarrow for the metadata
            # table, ...) and fixed costs, so the difference is what the big log itself costs
            tiny_cfg, _ = make_corpus(fmt, Path(tmp) / "tiny", 0.001)
            base = measure("ingest", tiny_cfg, Path(tmp) / "tiny")
            run = measure("ingest", cfg, Path(tmp) / "big")
            log_bytes = log.stat().st_size
            peak = (run["maxrss_kib"] - base["maxrss_kib"]) * 1024
            results[fmt] = {"log_bytes": log_bytes, "peak_rss_bytes": run["maxrss_kib"] * 1024, "peak_bytes_over_baseline": peak,
                            "peak_over_log": round(peak / log_bytes, 2), "target_met": peak < 2 * log_bytes,
                            "trajectories": run["trajectories"], "seconds": run["seconds"],
                            "baseline_rss_bytes": base["maxrss_kib"] * 1024, "baseline": BASELINE,
                            "peak_rss_over_log": round(run["maxrss_kib"] * 1024 / log_bytes, 2)}
            print(f"{fmt}: {log_bytes / 1e6:.0f} MB log, peak RSS {run['maxrss_kib'] * 1024 / 1e6:.0f} MB, baseline "
                  f"{base['maxrss_kib'] * 1024 / 1e6:.0f} MB, {peak / 1e6:.0f} MB over baseline = {peak / log_bytes:.2f}x "
                  f"({run['seconds']} s)", flush=True)
    out = {"command": command_line("bench/bench_memory.py", sys.argv[1:]), "target": "peak_over_log < 2",
           "ratio": RATIO, "mb": args.mb, "results": results,
           "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                       "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()]}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
