"""Benchmark: every analysis stage on 20,000 synthetic scored trajectories (the paper's corpus scale).

    python bench/bench_analysis.py [--n 20000] [--resamples 2000] [--out bench/results/analysis.json]

Builds, in a temporary directory laid out like the repository, what the analysis stages read:
a finalize-shaped metrics table (arms gcpc, generic, holistic; per-test variant column), item
labels, trajectory metadata (with/without-skills trials in rounds, three benchmarks incl.
Terminal-Bench), an annotation file, repeated-judging and judge-swap scores, and a controls summary.
Then it runs the stage entry points exactly as `dvc repro` would — analyze (RQ1), figures, rq2,
rq3, rq4, rq5, report — each timed, with 2,000 bootstrap resamples; each stage computes its independent
parts in GCPC_ANALYSIS_WORKERS processes (default one per CPU; 1 for one process), as in `dvc repro`. The judge-calling stages
(rejudge, controls) are not included: their cost is judge calls, measured by the providers'
benchmark. Target: all analysis stages under 10 s (issue 12). Results (timings, sizes, machine) are written
as JSON. Synthetic data are seeded; only timings vary between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 10.0  # issue 12: all analysis stages at 20,000 trajectories
BENCHES = (("skillsbench", 87), ("terminal-bench-2", 89), ("terminal-bench-1", 74))
MODELS = ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5")


def synthesize(n: int, seed: int, work: Path) -> dict[str, int]:
    """Write the synthetic inputs under ``work`` and return their sizes."""
    rng = np.random.default_rng(seed)
    tasks = [(b, f"{b}-task{i:03d}") for b, k in BENCHES for i in range(k)]
    per_task = int(np.ceil(n / len(tasks)))
    traj, metric_rows, label_rows = [], [], []
    difficulty = rng.normal(0, 1, len(tasks))
    k = 0
    for ti, (bench, task) in enumerate(tasks):
        for j in range(per_task):
            if k >= n:
                break
            model = MODELS[j % 3]
            cond = "self_generated" if j % 20 == 19 else ("with_skills" if (j // 3) % 2 == 0 else "without_skills")
            rnd = j // 6
            u = rng.random()
            outcome = "other" if u < 0.05 else ("PASS" if rng.random() < 1 / (1 + np.exp(difficulty[ti])) else "FAIL")
            tid = f"{bench}/{cond}/{task}__r{rnd:02d}m{j % 3}"
            traj.append({"trajectory_id": tid, "benchmark": bench, "task_id": task, "harness": "claude-code", "model": model,
                         "condition": cond, "source": cond, "trial": f"{task}__r{rnd:02d}", "source_path": f"jobs/{cond}/{task}__r{rnd:02d}m{j % 3}",
                         "outcome": {"status": outcome, "reward": None, "reason": None}, "test_results": {}, "events": []})
            progress = float(np.clip(rng.normal(0.75 if outcome == "PASS" else 0.45, 0.2), 0, 1))
            for arm, n_items in (("gcpc", 8), ("generic", 5)):
                labs = []
                for i in range(n_items):
                    r = rng.random()
                    lab = "Abstain" if r < 0.15 else ("Yes" if rng.random() < progress else "No")
                    route = "assertion" if (arm == "gcpc" and i < 5) else "judge"
                    labs.append((f"i{i:02d}", route, lab))
                    # per-test truth of assertion-route items (what item validity compares the judge's label with)
                    truth = ("Yes" if rng.random() < (0.9 if outcome == "PASS" else 0.4) else "No") if route == "assertion" else None
                    label_rows.append({"trajectory_id": tid, "arm": arm, "item_id": f"i{i:02d}", "route": route, "label_plain": lab,
                                       "truth_per_test": truth})
                yes = sum(lab == "Yes" for _, _, lab in labs)
                dec = yes + sum(lab == "No" for _, _, lab in labs)
                binary = outcome in ("PASS", "FAIL")
                prop_yes = yes + (sum(1 for _, r, lab in labs if r == "assertion" and lab != "Yes") if outcome == "PASS" else 0)
                prop_dec = dec + (sum(1 for _, r, lab in labs if r == "assertion" and lab == "Abstain") if outcome == "PASS" else 0)
                metric_rows.append({"trajectory_id": tid, "benchmark": bench, "task_id": task, "harness": "claude-code", "model": model,
                                    "condition": cond, "outcome": outcome, "arm": arm, "arm_kind": "checklist", "provider": "synthetic",
                                    "judge_model": "bench-v1", "checklist_hash": f"h{ti}", "n_items": n_items, "n_yes": yes,
                                    "gcpc_plain": yes / dec if dec else np.nan,
                                    "gcpc_outcome": (prop_yes + (outcome == "PASS")) / (prop_dec + 1) if binary else np.nan,
                                    "gcpc_per_test": (prop_yes + (outcome == "PASS")) / (prop_dec + 1) if binary and arm == "gcpc" else np.nan,
                                    "zero_evidence": dec == 0})
            hol = float(np.clip(round(10 * progress + rng.normal(0, 1.5)), 0, 10))
            metric_rows.append({"trajectory_id": tid, "benchmark": bench, "task_id": task, "harness": "claude-code", "model": model,
                                "condition": cond, "outcome": outcome, "arm": "holistic", "arm_kind": "holistic", "provider": "synthetic",
                                "judge_model": "bench-v1", "checklist_hash": "", "n_items": 0, "n_yes": 0, "gcpc_plain": hol / 10,
                                "gcpc_outcome": np.nan, "gcpc_per_test": np.nan, "zero_evidence": False})
            for floor, value in (("floor_exit0", float(np.clip(rng.normal(0.6 + 0.2 * progress, 0.15), 0, 1))),
                                 ("floor_steps", float(1 / (1 + rng.poisson(20))))):  # outcome-blind features of the log
                metric_rows.append({"trajectory_id": tid, "benchmark": bench, "task_id": task, "harness": "claude-code", "model": model,
                                    "condition": cond, "outcome": outcome, "arm": floor, "arm_kind": "floor", "provider": "none",
                                    "judge_model": "none", "checklist_hash": "", "n_items": 0, "n_yes": 0, "gcpc_plain": value,
                                    "gcpc_outcome": np.nan, "gcpc_per_test": np.nan, "zero_evidence": False})
            k += 1
    proc = work / "data" / "processed"
    for sub in ("ingest", "finalize", "rejudge", "controls", "analyze"):
        (proc / sub).mkdir(parents=True, exist_ok=True)
    metrics = pd.DataFrame(metric_rows)
    metrics.to_parquet(proc / "finalize" / "metrics.parquet", index=False)
    labels = pd.DataFrame(label_rows)
    labels.to_parquet(proc / "finalize" / "labels.parquet", index=False)
    from gcpc.io import canonical_json

    from gcpc.corpus.meta import FILE_NAME, write_trajectory_meta

    with (proc / "ingest" / "trajectories.jsonl").open("w", encoding="utf-8") as fh:
        for t in traj:  # as the ingest stage writes them (canonical JSON), without events
            fh.write(canonical_json(t) + "\n")
    write_trajectory_meta(proc / "ingest" / FILE_NAME, traj)  # and their metadata table, as the ingest stage writes it

    # repeated judging (3 passes, some label noise) and a swap judge, for the gcpc arm
    g = metrics[metrics["arm"] == "gcpc"].reset_index(drop=True)
    gl = labels[labels["arm"] == "gcpc"].reset_index(drop=True)
    score_frames, label_frames = [], []
    for role, p, noise in (("repeat", 1, 0.0), ("repeat", 2, 0.05), ("repeat", 3, 0.05), ("swap", 1, 0.15)):
        flip = rng.random(len(gl)) < noise
        lab = gl["label_plain"].where(~flip, rng.choice(["Yes", "No", "Abstain"], len(gl)))
        label_frames.append(pd.DataFrame({"trajectory_id": gl["trajectory_id"], "task_id": gl["trajectory_id"].str.split("/").str[2].str.split("__").str[0],
                                          "role": role, "pass": p, "item_id": gl["item_id"], "label": lab}))
        jitter = np.where(rng.random(len(g)) < noise * 3, rng.normal(0, 0.1, len(g)), 0.0)
        score_frames.append(pd.DataFrame({"trajectory_id": g["trajectory_id"], "benchmark": g["benchmark"], "task_id": g["task_id"],
                                          "outcome": g["outcome"], "role": role, "pass": p, "provider": "synthetic", "model": "bench-v1",
                                          "status": "ok", "gcpc_plain": np.clip(g["gcpc_plain"] + jitter, 0, 1),
                                          "gcpc_outcome": np.clip(g["gcpc_outcome"] + jitter, 0, 1), "zero_evidence": g["zero_evidence"]}))
    pd.concat(score_frames, ignore_index=True).to_parquet(proc / "rejudge" / "scores.parquet", index=False)
    item_labels = pd.concat([f for f in label_frames if (f["role"] == "repeat").all()], ignore_index=True)
    item_labels.to_parquet(proc / "rejudge" / "item_labels.parquet", index=False)
    (proc / "rejudge" / "summary.json").write_text(json.dumps({"arm": "gcpc", "n_passes": 3, "primary_judge": "synthetic/bench-v1",
                                                                "swap_judge": "synthetic/bench-v2", "swap_source": "synthetic",
                                                                "deterministic_primary": False, "deterministic_swap_identical": False}))
    (proc / "controls" / "summary.json").write_text(json.dumps({"judge": "synthetic/bench-v1", "scope": "all_events", "max_items": 500,
                                                                 "idle_outcome": "FAIL", "arms": {"gcpc": {
        "evidence_replacement": {"n": 500, "n_no": 310, "n_abstain": 90, "n_yes": 100, "n_failed": 0, "share_no": 0.62,
                                 "share_no_or_abstain": 0.8, "share_still_yes": 0.2, "n_yes_items": 500, "n_skipped": 0, "by_rule": {}, "by_route": {}},
        "idle": {"n_tasks": 250, "n_ok": 250, "n_zero_evidence": 240, "n_with_yes": 3, "mean_plain": 0.1, "max_plain": 1.0,
                 "mean_outcome": 0.01, "max_outcome": 0.2}}}}))

    # annotations: 2,000 trajectories rated by 3 annotators, pairs within tasks, criteria for 500
    ann_dir = work / "data" / "bench" / "annotations"
    ann_dir.mkdir(parents=True, exist_ok=True)
    rated = g.sample(min(2000, len(g)), random_state=seed)
    recs = [{"meta": {"illustrative": True, "description": "synthetic benchmark annotations"}}]
    for tid, v in zip(rated["trajectory_id"], rated["gcpc_plain"].fillna(0), strict=True):
        for a in ("A1", "A2", "A3"):
            for q in ("Q1", "Q1b"):
                recs.append({"question": q, "annotator": a, "trajectory": tid, "rating": int(np.clip(round(10 * v + rng.normal(0, 2)), 0, 10))})
    by_task = rated.groupby("task_id")["trajectory_id"].apply(list)
    for task, ids in by_task.items():
        for x, y in zip(ids[::2], ids[1::2], strict=False):
            for a in ("A1", "A2", "A3"):
                recs.append({"question": "Q2", "annotator": a, "task_id": task, "a": x, "b": y, "preferred": str(rng.choice(["a", "b", "tie"]))})
    for tid in rated["trajectory_id"][:500]:
        for i in range(8):
            for a in ("A1", "A2", "A3"):
                recs.append({"question": "Q3", "annotator": a, "trajectory": tid, "item_id": f"i{i:02d}",
                             "label": str(rng.choice(["Yes", "No", "Abstain"], p=[0.6, 0.3, 0.1]))})
    with (ann_dir / "annotations.jsonl").open("w", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    return {"trajectories": len(traj), "metric_rows": len(metrics), "label_rows": len(labels), "tasks": len(tasks),
            "annotation_records": len(recs) - 1, "rejudge_label_rows": len(item_labels)}


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its ended children (the stages' forked parts, gcpc.analysis.parallel)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _load() -> list[float] | None:
    """1-, 5- and 15-minute load averages: timings on a shared machine read against them."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def run(n: int, resamples: int, seed: int) -> dict:
    import importlib

    from gcpc.analysis.parallel import worker_count

    load0 = _load()

    stages = [("analyze (RQ1)", "gcpc.analysis.__main__"), ("figures (RQ1, Figure 4)", "gcpc.report.__main__"),
              ("rq2", "gcpc.analysis.rq2"), ("rq3", "gcpc.analysis.rq3"), ("rq4", "gcpc.analysis.rq4"),
              ("rq5", "gcpc.analysis.rq5"), ("item validity", "gcpc.analysis.item_validity"), ("floors", "gcpc.analysis.floors"),
              ("report", "gcpc.report.build")]
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="gcpc-bench-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        sizes = synthesize(n, seed, work)
        t_synth = time.perf_counter() - t0
        params = {"data": {"name": "bench", "root": "data/bench"}, "generator": {"provider": "synthetic", "model": "bench-v1"},
                  "judge": {"provider": "synthetic", "model": "bench-v1"}, "scoring": {"pass_propagation": True, "endpoint": True},
                  "analysis": {"bootstrap": {"n_resamples": resamples, "seed": 0, "ci": 0.95}, "rq3": {"ambiguous": "order"}}}
        (work / "params.yaml").write_text(yaml.safe_dump(params))
        timings, cpu = {}, {}
        os.chdir(work)
        argv = sys.argv
        try:
            for name, module in stages:
                mod = importlib.import_module(module)
                sys.argv = [module]
                t, c = time.perf_counter(), _cpu_seconds()
                rc = mod.main()
                timings[name] = round(time.perf_counter() - t, 3)
                cpu[name] = round(_cpu_seconds() - c, 3)
                if rc not in (0, None):
                    raise SystemExit(f"stage {name} failed with exit code {rc}")
            rq3 = json.loads(Path("data/processed/analyze/rq3.json").read_text())
            report_lines = len(Path("figures/report.md").read_text().splitlines())
        finally:
            sys.argv = argv
            os.chdir(cwd)
    total = round(sum(timings.values()), 3)
    return {
        "benchmark": "analysis stages on synthetic scored trajectories",
        "command": f"python bench/bench_analysis.py --n {n} --resamples {resamples}",
        "n_trajectories": n, "bootstrap_resamples": resamples, "seed": seed, "inputs": sizes,
        "rq3_pairs": rq3["pairing"]["n_pairs"], "report_lines": report_lines,
        "synthetic_input_build_s": round(t_synth, 3), "stage_seconds": timings, "total_analysis_s": total,
        # CPU seconds per stage of this process (all its threads) and of the processes it forked for independent
        # parts (GCPC_ANALYSIS_WORKERS): steadier than wall time on a shared machine
        "stage_cpu_seconds": cpu, "total_analysis_cpu_s": round(sum(cpu.values()), 3),
        "load_average": {"start": load0, "end": _load()},
        "analysis_workers": worker_count(),  # processes per stage for independent parts; GCPC_ANALYSIS_WORKERS=1: one
        "target_s": TARGET_S, "meets_target": total < TARGET_S,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "not_included": "rejudge and controls (their cost is judge calls, see the providers benchmark)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "analysis.json")
    args = parser.parse_args()
    result = run(args.n, args.resamples, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("stage_seconds", "total_analysis_s", "stage_cpu_seconds", "total_analysis_cpu_s",
                                             "load_average", "meets_target")}, indent=2))
    print(f"-> {args.out}" + ("" if result["meets_target"] else "  (target not met)"))
    return 0  # a missed speed target is a result (meets_target in the file), not a failure to measure


if __name__ == "__main__":
    raise SystemExit(main())
