"""Ingest benchmark: throughput over the Terminal-Bench 1 runs, rendered/raw token ratio per log format.

    python bench/bench_ingest.py                      # ../shared/data, 3 repeats -> bench/results/ingest.json
    python bench/bench_ingest.py --repeat 1 --out /tmp/ingest.json
    python bench/bench_ingest.py --workers 1          # one process (default: ingest.workers = one per CPU, at most 8)

Throughput: the whole Terminal-Bench 1 corpus (`conf/data/terminal-bench-1.yaml`: every run, tasks
from results.json, every trial folder, de-duplication) is ingested `--repeat` times in this process;
the median wall time gives trajectories/s (kept trajectories), trial folders/s, and MB/s over the
bytes of every file under the runs folder and over the bytes of the agent logs parsed (MB = 10^6 bytes).
Trials are read in `--workers` processes (default: what the ingest stage uses, `ingest.workers: null`
= one per CPU, at most 8); one more timing run in a single process is reported beside it
(`single_process`), and the load average before and after, since the machine is shared.

Token ratio: for every log format, the judge-visible rendering (`render_log`, per-event cut of
`render.DEFAULT_MAX_CHARS` characters, and uncut) against the raw log files, summed over all
trajectories of that format. Tokens are estimated as ceil(characters / 4) (`gcpc.corpus.size`); no
tokenizer vocabulary is available offline. Claude Code formats come from the SkillsBench sample in
../shared/data; ATIF and SWE-agent `.traj` from the project's own fixtures (no such files are in
../shared/data), so their ratios describe tiny logs only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from gcpc.corpus.ingest import ingest
from gcpc.corpus.parallel import resolve_workers
from gcpc.corpus.render import DEFAULT_MAX_CHARS, render_log
from gcpc.corpus.size import TOKENIZER, estimate_tokens

REPO = Path(__file__).resolve().parents[1]
TARGET_MB_PER_S = 20.0
"""Issue 12: ingest of the Terminal-Bench 1 shared set at >= 20 MB/s (over every file under runs/)."""
FIXTURE_CORPORA = [
    {"name": "atif-fixture", "benchmark": "fixture", "root": "tests/fixtures/harbor_atif",
     "tasks_dir": "tasks", "trials_dirs": ["jobs"]},
    {"name": "swe-bench-fixture", "format": "swe-bench", "root": "tests/fixtures/swe_bench",
     "tasks_file": "instances.jsonl",
     "trials_dirs": ["trajectories/sweagent-demo"],
     "reports_dirs": ["evaluation/sweagent-demo"]},
]


def _files_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def throughput(cfg: dict, repeat: int, workers: int) -> dict:
    runs = REPO / cfg["root"] / cfg["trials_dirs"][0]
    times: list[float] = []
    result = None
    load_before = [round(x, 2) for x in os.getloadavg()]
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = ingest(cfg, REPO, workers=workers)
        times.append(time.perf_counter() - t0)
    assert result is not None
    wall = statistics.median(times)
    n_traj = len(result.trajectories)
    n_folders = n_traj + sum(1 for e in result.exclusions if not e.reason.startswith("no trial folder"))
    input_bytes = _files_bytes(runs)
    log_bytes = sum(t.size.raw_bytes for t in result.trajectories if t.size)
    single = None
    if workers > 1:
        t0 = time.perf_counter()
        ingest(cfg, REPO, workers=1)
        single = time.perf_counter() - t0
    return {
        "corpus": f"conf/data/{cfg['name']}.yaml",
        "workers": workers,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "single_process": None if single is None else {
            "wall_s": round(single, 3), "input_mb_per_s": round(input_bytes / 1e6 / single, 2),
            "meets_target": input_bytes / 1e6 / single >= TARGET_MB_PER_S},
        "target_input_mb_per_s": TARGET_MB_PER_S,
        "meets_target": input_bytes / 1e6 / wall >= TARGET_MB_PER_S,
        "repeats": repeat,
        "wall_s_median": round(wall, 3),
        "wall_s_all": [round(t, 3) for t in times],
        "trajectories": n_traj,
        "trial_folders": n_folders,
        "exclusions": len(result.exclusions),
        "input_mb": round(input_bytes / 1e6, 2),
        "agent_log_mb": round(log_bytes / 1e6, 2),
        "trajectories_per_s": round(n_traj / wall, 1),
        "trial_folders_per_s": round(n_folders / wall, 1),
        "input_mb_per_s": round(input_bytes / 1e6 / wall, 2),
        "agent_log_mb_per_s": round(log_bytes / 1e6 / wall, 2),
    }, result


def token_ratios(trajectories) -> dict:
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per: dict[str, list[float]] = defaultdict(list)
    for t in trajectories:
        if t.size is None:
            continue
        a = acc[t.log_format or "unknown"]
        uncut = estimate_tokens(render_log(t.events, None))
        a["trajectories"] += 1
        a["raw_tokens"] += t.size.raw_tokens
        a["rendered_tokens"] += t.size.rendered_tokens
        a["rendered_uncut_tokens"] += uncut
        if t.size.raw_tokens:
            per[t.log_format or "unknown"].append(t.size.rendered_tokens / t.size.raw_tokens)
    out = {}
    for fmt, a in sorted(acc.items()):
        out[fmt] = {
            "trajectories": int(a["trajectories"]),
            "raw_tokens": int(a["raw_tokens"]),
            "rendered_tokens": int(a["rendered_tokens"]),
            "rendered_uncut_tokens": int(a["rendered_uncut_tokens"]),
            "ratio_rendered_to_raw": round(a["rendered_tokens"] / a["raw_tokens"], 4) if a["raw_tokens"] else None,
            "ratio_uncut_to_raw": round(a["rendered_uncut_tokens"] / a["raw_tokens"], 4) if a["raw_tokens"] else None,
            "median_ratio_per_trajectory": round(statistics.median(per[fmt]), 4) if per[fmt] else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default=None, help="processes reading trials (default: one per CPU, at most 8)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "ingest.json")
    parser.add_argument("--data", default="terminal-bench-1",
                        help="conf/data config timed (default: the shared Terminal-Bench 1 set, the target's corpus); "
                             "any other (e.g. `demo`, the test suite's smoke run) skips the SkillsBench token ratios")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    cfg = yaml.safe_load((REPO / f"conf/data/{args.data}.yaml").read_text(encoding="utf-8"))
    if not (REPO / cfg["root"] / cfg["trials_dirs"][0]).is_dir():
        print(f"bench_ingest: {REPO / cfg['root'] / cfg['trials_dirs'][0]} not found (../shared/data is needed)", file=sys.stderr)
        return 2
    workers = resolve_workers(None if args.workers in (None, "auto") else int(args.workers), "--workers")
    tput, timed = throughput(cfg, args.repeat, workers)
    trajectories = list(timed.trajectories)
    if args.data == "terminal-bench-1":
        skills = yaml.safe_load((REPO / "conf/data/skillsbench.yaml").read_text(encoding="utf-8"))
        trajectories += list(ingest(skills, REPO).trajectories)
    for fixture in FIXTURE_CORPORA:
        trajectories += ingest(fixture, REPO).trajectories
    result = {
        "command": "python bench/bench_ingest.py" + (f" --repeat {args.repeat}" if args.repeat != 3 else "")
                   + (f" --workers {args.workers}" if args.workers is not None else "")
                   + (f" --data {args.data}" if args.data != "terminal-bench-1" else ""),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "tokenizer": TOKENIZER,
        "render_max_chars": DEFAULT_MAX_CHARS,
        "throughput_terminal_bench_1": tput,
        "token_ratio_by_format": token_ratios(trajectories),
        "token_ratio_sources": {"tb1-agent-log, tb1-pane": "../shared/data/terminal-bench-1",
                                "claude-code-stream-json, claude-code-session": "../shared/data/skillsbench",
                                "atif, swe-agent-traj": "tests/fixtures (written for gcpc)"}
                               if args.data == "terminal-bench-1" else
                               {"every format": f"conf/data/{args.data}.yaml and tests/fixtures (written for gcpc)"},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(result["throughput_terminal_bench_1"], indent=2))
    for fmt, r in result["token_ratio_by_format"].items():
        print(f"{fmt:26s} n={r['trajectories']:4d} rendered/raw={r['ratio_rendered_to_raw']} "
              f"uncut/raw={r['ratio_uncut_to_raw']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
