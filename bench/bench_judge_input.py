"""Judge input size and noise on the shared sets: rendered judge view / raw log, install lines left.

    python bench/bench_judge_input.py                  # needs ../shared/data -> bench/results/judge_input.json
    python bench/bench_judge_input.py --budgets 12000 16000

For Terminal-Bench 1 (panes and agent logs) and the SkillsBench sample, every trajectory is shown
as the judge sees it (`gcpc.judging.view.judge_input` after run-metadata redaction) with the
configured view (conf/config.yaml `judging:`: harness setup dropped, install runs collapsed,
per-event cut 4,000) and again with each `--budgets` value as `max_log_chars`. Ratios are
characters of the judge view over characters of the raw log files (= the chars/4 token ratio),
summed over the trajectories of a format. Also: harness install lines dropped, install lines
collapsed, noise-regex lines left in harness events (must be 0), budget cuts; and on a sample of
rendered logs the chars/4 estimate against the BPE tokenizer (`gcpc.llm.tokens`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from gcpc.corpus.ingest import ingest
from gcpc.corpus.models import EventKind
from gcpc.corpus.noise import is_install_line
from gcpc.judging.spec import redact_run_metadata
from gcpc.judging.view import HARNESS_PREFIX, ViewSettings, judge_input
from gcpc.llm.tokens import count_tokens, tokenizer_name

REPO = Path(__file__).resolve().parents[1]


def measure(trajectories, view: ViewSettings) -> dict:
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for t in trajectories:
        events = redact_run_metadata(t).events
        shown = judge_input(events, view)
        a = acc[t.log_format or "unknown"]
        a["trajectories"] += 1
        a["harness_install_lines_left"] += 0
        a["raw_chars"] += t.size.raw_chars if t.size else 0
        a["view_chars"] += len(shown.log)
        a["harness_install_lines_dropped"] += shown.cuts["harness_setup"]["install_lines"]
        a["harness_lines_dropped"] += shown.cuts["harness_setup"]["lines"]
        a["trajectories_with_harness_install"] += bool(shown.cuts["harness_setup"]["install_lines"])
        a["install_lines_collapsed"] += shown.cuts["install_collapsed"]["lines"]
        a["budget_cut_events"] += shown.cuts["budget"]["events"]
        a["trajectories_budget_cut"] += bool(shown.cuts["budget"]["events"])
        a["marked_truncations"] += shown.log.count(" chars truncated ...]")
        for raw, e in zip(events, shown.events, strict=True):
            if raw.kind == EventKind.SYSTEM and raw.text.startswith(HARNESS_PREFIX):
                a["harness_install_lines_left"] += sum(is_install_line(ln) for ln in e["text"].split("\n"))
    out = {}
    for fmt, a in sorted(acc.items()):
        row = {k: int(v) for k, v in a.items()}
        row["ratio_view_to_raw"] = round(a["view_chars"] / a["raw_chars"], 4) if a["raw_chars"] else None
        out[fmt] = row
    return out


def tokenizer_sample(trajectories, view: ViewSettings, n: int = 60) -> dict:
    sample = sorted(trajectories, key=lambda t: t.trajectory_id)[:: max(1, len(trajectories) // n)][:n]
    bpe = est = 0
    worst = 0.0
    for t in sample:
        log = judge_input(redact_run_metadata(t).events, view).log
        b, e = count_tokens(log), -(-len(log) // 4)
        bpe, est = bpe + b, est + e
        worst = max(worst, abs(e - b) / b if b else 0.0)
    return {"tokenizer": tokenizer_name(), "logs": len(sample), "bpe_tokens": bpe, "chars_over_4_tokens": est,
            "chars_over_4_relative_error": round((est - bpe) / bpe, 4) if bpe else None,
            "worst_single_log_relative_error": round(worst, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="*", default=[12000])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "judge_input.json")
    parser.add_argument("--data", nargs="+", default=["terminal-bench-1", "skillsbench"],
                        help="conf/data configs (default: the shared sets; the test suite's smoke run uses `demo`)")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    judging = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))["judging"]
    view = ViewSettings.from_params(judging)
    result: dict = {"command": "python bench/bench_judge_input.py" + (
                        f" --budgets {' '.join(map(str, args.budgets))}" if args.budgets != [12000] else "")
                        + (f" --data {' '.join(args.data)}" if args.data != ["terminal-bench-1", "skillsbench"] else ""),
                    "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                    "view": view.model_dump(), "sets": {}}
    for name in args.data:
        cfg = yaml.safe_load((REPO / f"conf/data/{name}.yaml").read_text(encoding="utf-8"))
        trials = REPO / cfg.get("root", ".") / cfg["trials_dirs"][0]  # config paths resolve against its root
        if not trials.is_dir():
            print(f"bench_judge_input: {trials} not found (../shared/data is needed)", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        trajectories = ingest(cfg, REPO).trajectories
        entry = {"ingest_s": round(time.perf_counter() - t0, 1), "configured": measure(trajectories, view)}
        for b in args.budgets:
            entry[f"max_log_chars={b}"] = measure(trajectories, view.model_copy(update={"max_log_chars": b}))
        entry["tokenizer_sample"] = tokenizer_sample(trajectories, view)
        result["sets"][name] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for name, entry in result["sets"].items():
        for setting, rows in entry.items():
            if not isinstance(rows, dict) or setting == "tokenizer_sample":
                continue
            for fmt, r in rows.items():
                print(f"{name:17s} {setting:20s} {fmt:24s} view/raw={r['ratio_view_to_raw']} "
                      f"harness install dropped={r['harness_install_lines_dropped']} left={r['harness_install_lines_left']} "
                      f"collapsed={r['install_lines_collapsed']} budget-cut trajectories={r['trajectories_budget_cut']}")
        print(name, "tokenizer sample:", entry["tokenizer_sample"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
