"""RQ5: is GCPC reliable and does it transfer?

* Three-pass reliability: Krippendorff's alpha across repeated judging passes of one arm
  (data/processed/rejudge): nominal on item labels (units = trajectory x item) and interval on
  plain GCPC and GCPC with official outcome (units = trajectories), each with a task-clustered
  bootstrap CI. A deterministic provider gives identical passes, hence alpha = 1 by construction;
  the result says so.
* Judge swap: Spearman's rho between the primary judge and a second judge on the same arm, for plain
  GCPC and for GCPC with official outcome, with task-clustered CIs. If the second judge is the same
  deterministic provider, rho = 1 by construction; the result says so.
* The transfer table (checklist synthesis across benchmarks) is built by the synthesis stage; this
  analysis records where it is and the report embeds it when present.
* Same-task PASS/FAIL pair diagnosis, per benchmark (Terminal-Bench rows flagged), paper §4.5: one
  pair per task (`analysis.rq5.pairs_per_task`, seeded), drawn from decidable trajectories only
  (zero-evidence logs excluded); Δ = score(PASS) − score(FAIL); counts higher / lower / tied, median Δ,
  and the exact two-sided sign test (binomial, p = 1/2) on untied pairs, with the Abstain share of the items judged
  in the paired trajectories (the paper's SWE-bench pairs: 58 of 74 tied, 42.1 % Abstain). With `pairs_per_task: null`
  every PASS x FAIL pair counts and the test is also given with one vote per task (the sign of its mean Δ).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pandas as pd

from gcpc.analysis.common import (
    ANALYZE,
    FIGURES,
    METRICS,
    REJUDGE,
    active_scores,
    first_existing,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_share,
    jsonable,
    judge_identity,
    latex_table,
    markdown_table,
    outcome_free_values,
    resolve_analysis,
    with_method_arm,
    write_csv,
    write_result_files,
    zero_evidence_count_text,
    zero_evidence_counts,
    zero_evidence_text,
)
from gcpc.analysis.stats import (UndefinedStatistic, alpha_bootstrap, clustered_spearman_bootstrap, exact_differences, exact_mean,
                               reliability_matrix, sign_test)
from gcpc.analysis.parallel import run_parts

LABEL_CODES = {"Yes": 0.0, "No": 1.0, "Abstain": 2.0}
BY_CONSTRUCTION_ALPHA = ("the judge is a deterministic provider: the passes are identical by construction, so alpha = 1 "
                         "says nothing about an LLM judge's reliability")
BY_CONSTRUCTION_RHO = ("both judges are the same deterministic provider: the scores are identical by construction, so "
                       "rho = 1 says nothing about agreement between different LLM judges")


def _fill(frame: pd.DataFrame, score: str, zes: float | None) -> pd.Series:
    return outcome_free_values(frame, score, zes)


def _alpha(frame: pd.DataFrame, unit: list[str], value: str, level: str, boot: dict[str, Any],
           codes: dict[str, float] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"level": level, "n_records": int(len(frame))}
    if frame.empty:
        e.update(alpha=None, ci_low=None, ci_high=None, skipped="no records")
        return e
    data, keys = reliability_matrix(frame.rename(columns={"pass": "_coder"}), unit, "_coder", value, codes=codes)
    tasks = keys.merge(frame.drop_duplicates(unit)[unit + ["task_id"]], on=unit, how="left")["task_id"]
    e.update(n_units=int(keys.shape[0]), n_passes=int(data.shape[0]))
    try:
        r = alpha_bootstrap(data, tasks.to_numpy(), level, n_resamples=boot["n_resamples"], seed=boot["seed"], ci=boot["ci"])
    except UndefinedStatistic as exc:
        e.update(alpha=None, ci_low=None, ci_high=None, skipped=str(exc))
        return e
    e.update(alpha=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, n_tasks=r.n_clusters, n_valid=r.n_valid)
    return e


def reliability(scores: pd.DataFrame | None, item_labels: pd.DataFrame | None, summary: dict[str, Any] | None,
                cfg: dict[str, Any]) -> dict[str, Any]:
    if scores is None:
        return {"available": False, "reason": "no repeated judging output (run the rejudge stage)"}
    boot, zes = cfg["bootstrap"], cfg["zero_evidence_score"]
    rep = scores[(scores["role"] == "repeat") & (scores["status"] == "ok")].copy()
    out: dict[str, Any] = {"available": True, "arm": (summary or {}).get("arm"), "judge": (summary or {}).get("primary_judge"),
                           "n_passes": int(rep["pass"].nunique()), "scores": {}}
    if summary and summary.get("deterministic_primary"):
        out["by_construction"] = BY_CONSTRUCTION_ALPHA
    for score in cfg["scores"]:
        if score not in rep.columns or rep[score].isna().all():
            continue
        rep["_v"] = _fill(rep, score, zes)
        out["scores"][score] = _alpha(rep.dropna(subset=["_v"]), ["trajectory_id"], "_v", "interval", boot)
    if item_labels is not None and len(item_labels):
        il = item_labels[item_labels["role"] == "repeat"]
        out["item_labels"] = _alpha(il, ["trajectory_id", "item_id"], "label", "nominal", boot, codes=LABEL_CODES)
    return out


def judge_swap(scores: pd.DataFrame | None, summary: dict[str, Any] | None, cfg: dict[str, Any]) -> dict[str, Any]:
    if scores is None:
        return {"available": False, "reason": "no judge-swap output (run the rejudge stage)"}
    boot, zes = cfg["bootstrap"], cfg["zero_evidence_score"]
    ok = scores[scores["status"] == "ok"]
    first = ok[(ok["role"] == "repeat") & (ok["pass"] == 1)]
    swap = ok[ok["role"] == "swap"]
    if swap.empty:
        return {"available": False, "reason": "the second judge scored no trajectory"}
    out: dict[str, Any] = {"available": True, "arm": (summary or {}).get("arm"),
                           "primary_judge": (summary or {}).get("primary_judge"), "swap_judge": (summary or {}).get("swap_judge"),
                           "swap_source": (summary or {}).get("swap_source"), "scores": {}}
    if summary and summary.get("deterministic_swap_identical"):
        out["by_construction"] = BY_CONSTRUCTION_RHO
    for score in cfg["scores"]:
        if score not in ok.columns or ok[score].isna().all():
            continue
        a = first.assign(_a=_fill(first, score, zes))[["trajectory_id", "task_id", "outcome", "_a"]]
        b = swap.assign(_b=_fill(swap, score, zes))[["trajectory_id", "_b"]]
        j = a.merge(b, on="trajectory_id").dropna(subset=["_a", "_b"])
        e: dict[str, Any] = {"n": int(len(j)), "n_tasks": int(j["task_id"].nunique()) if len(j) else 0,
                             "mean_abs_diff": float((j["_a"] - j["_b"]).abs().mean()) if len(j) else None}
        if len(j) < 3:
            e.update(rho=None, ci_low=None, ci_high=None, skipped=f"{len(j)} trajectories scored by both judges (need 3)")
        else:
            try:
                r = clustered_spearman_bootstrap(j["_a"].to_numpy(), j["_b"].to_numpy(), j["task_id"].to_numpy(),
                                                 n_resamples=boot["n_resamples"], seed=boot["seed"], ci=boot["ci"])
                e.update(rho=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, n_valid=r.n_valid)
            except UndefinedStatistic as exc:
                e.update(rho=None, ci_low=None, ci_high=None, skipped=str(exc))
        out["scores"][score] = e
    return out


def same_task_pairs(values: pd.DataFrame, per_task: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Within-task (PASS, FAIL) pairs of decidable trajectories: task_id, pass_id, fail_id, delta = PASS − FAIL.

    ``values`` holds only decidable rows (a defined, non-zero-evidence score). Paper §4.5: one pair per
    task (``per_task`` 1), so a task with many trajectories does not count many times; the PASS and
    the FAIL side are drawn with a generator seeded by (seed, task), so adding a task never changes
    another task's pair. ``per_task`` None keeps every PASS × FAIL combination. Pairs run in task
    order, PASS-major, each side in trajectory-id order (one sort, then array slices per task).
    """
    import zlib

    columns = ["task_id", "pass_id", "fail_id", "delta"]
    v = values[values["outcome"].isin(["PASS", "FAIL"])].sort_values(["task_id", "trajectory_id"], kind="mergesort")
    if v.empty:
        return pd.DataFrame(columns=columns)
    tasks = v["task_id"].to_numpy()
    ids = v["trajectory_id"].to_numpy()
    passed = (v["outcome"] == "PASS").to_numpy()
    value = v["value"].to_numpy(float)
    starts = np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1]])
    ends = np.r_[starts[1:], len(tasks)]
    out_task, out_pass, out_fail, out_delta = [], [], [], []
    for a, b in zip(starts, ends):
        p = a + np.flatnonzero(passed[a:b])
        f = a + np.flatnonzero(~passed[a:b])
        if not len(p) or not len(f):
            continue
        if per_task is not None:
            rng = np.random.default_rng([int(seed), zlib.crc32(str(tasks[a]).encode("utf-8"))])
            picked = np.sort(rng.choice(len(p) * len(f), size=min(int(per_task), len(p) * len(f)), replace=False))
            pi, fi = p[picked // len(f)], f[picked % len(f)]  # combination k is (k // |FAIL|, k % |FAIL|)
        else:
            pi, fi = np.repeat(p, len(f)), np.tile(f, len(p))
        out_task.append(tasks[pi])
        out_pass.append(ids[pi])
        out_fail.append(ids[fi])
        out_delta.append(exact_differences(value[pi], value[fi]))  # exact: a tie is 0, never ±1e-17
    if not out_task:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame({"task_id": np.concatenate(out_task), "pass_id": np.concatenate(out_pass),
                         "fail_id": np.concatenate(out_fail), "delta": np.concatenate(out_delta)})


def _tasks_with_both(frame: pd.DataFrame) -> set[str]:
    both = None
    for outcome in ("PASS", "FAIL"):  # tasks with at least one row of each outcome, without a per-task Python set
        tasks = set(frame.loc[frame["outcome"] == outcome, "task_id"].dropna().unique().tolist())
        both = tasks if both is None else both & tasks
    return {str(k) for k in both or set()}


def _pair_abstain(frame: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, Any]:
    """The Abstain share of the items judged in the paired trajectories (each trajectory once), the log-only
    limitation the paper reports beside its SWE-bench pairs; None for an arm without items (floors, holistic)."""
    if "n_abstain" not in frame.columns or "n_items" not in frame.columns:
        return {"abstain_share": None, "n_items_in_pairs": 0}
    ids = set(pairs["pass_id"]) | set(pairs["fail_id"]) if len(pairs) else set()
    sub = frame[frame["trajectory_id"].isin(ids)].drop_duplicates("trajectory_id")
    n_items = int(sub["n_items"].fillna(0).sum())
    n_abstain = int(sub["n_abstain"].fillna(0).sum())
    return {"abstain_share": n_abstain / n_items if n_items else None, "n_items_in_pairs": n_items}


def pair_diagnosis(metrics: pd.DataFrame, cfg: dict[str, Any]) -> dict[str, Any]:
    prefix = str(cfg["rq5"]["tb_benchmark_prefix"]).lower()
    n_per_task = cfg["rq5"].get("pairs_per_task")
    n_per_task = None if n_per_task is None else int(n_per_task)
    pair_seed = int(cfg["rq5"].get("pair_seed", 0))
    zes = cfg["zero_evidence_score"]
    m = with_method_arm(metrics, cfg["default_variants"])
    m = m[m["outcome"].isin(["PASS", "FAIL"])]
    out: dict[str, Any] = {"tb_benchmark_prefix": prefix, "benchmarks": {}}
    for bench, gb in m.groupby("benchmark", sort=True):
        be: dict[str, Any] = {"terminal_bench": str(bench).lower().startswith(prefix), "arms": {}}
        for arm, ga in gb.groupby("arm", sort=True):
            for score in cfg["scores"]:
                if score not in ga.columns or ga[score].isna().all():
                    continue
                vals = ga.assign(value=_fill(ga, score, zes))[["trajectory_id", "task_id", "outcome", "value"]].dropna(subset=["value"])
                pairs = same_task_pairs(vals, n_per_task, pair_seed)
                e = sign_test(pairs["delta"].to_numpy(dtype=float))
                e["n_tasks"] = int(pairs["task_id"].nunique()) if len(pairs) else 0
                # tasks with a PASS and a FAIL trajectory, but no decidable pair once zero-evidence logs are excluded
                e["n_tasks_undecidable"] = len(_tasks_with_both(ga) - _tasks_with_both(vals))
                e["pairs_per_task"] = n_per_task
                per_task = pairs.groupby("task_id")["delta"].agg(exact_mean) if len(pairs) else pd.Series(dtype=float)
                e["by_task"] = sign_test(per_task.to_numpy(dtype=float))
                e.update(_pair_abstain(ga, pairs))
                be["arms"].setdefault(str(arm), {})[score] = e
        out["benchmarks"][str(bench)] = be
    out["n_terminal_bench"] = sum(1 for b in out["benchmarks"].values() if b["terminal_bench"])
    if not out["n_terminal_bench"]:
        out["note"] = (f"no benchmark named '{prefix}*' in this corpus: the Terminal-Bench diagnosis is not available here; "
                       "the same diagnosis is reported for the benchmarks present")
    return out


def transfer_table(paths: list[str]) -> dict[str, Any]:
    path = first_existing(paths)
    if path is None:
        return {"available": False, "reason": "transfer table not found (looked for " + ", ".join(paths) + "); "
                                              "it is built by the synthesis transfer stage"}
    return {"available": True, "path": str(path)}


def rq5(metrics: pd.DataFrame, cfg: dict[str, Any] | None = None, *, rejudge_scores: pd.DataFrame | None = None,
        rejudge_labels: pd.DataFrame | None = None, rejudge_summary: dict[str, Any] | None = None) -> dict[str, Any]:
    c = resolve_analysis(cfg)
    c["scores"] = active_scores(metrics, c)
    # three independent parts, side by side where there are cores (gcpc.analysis.parallel); the longest first
    parts = run_parts({"judge_swap": lambda: judge_swap(rejudge_scores, rejudge_summary, c),
                       "reliability": lambda: reliability(rejudge_scores, rejudge_labels, rejudge_summary, c),
                       "pair_diagnosis": lambda: pair_diagnosis(metrics, c)})
    result = {"config": {k: c[k] for k in ("scores", "zero_evidence_score", "bootstrap", "rq5")},
              "judges": judge_identity(with_method_arm(metrics, c["default_variants"])),
              "reliability": parts["reliability"],
              "judge_swap": parts["judge_swap"],
              "transfer": transfer_table(list(c["rq5"]["transfer_table"])),
              "pair_diagnosis": parts["pair_diagnosis"],
              "zero_evidence_counts": zero_evidence_counts(with_method_arm(metrics, c["default_variants"]))}
    return jsonable(result)


# --------------------------------------------------------------------------- tables

HEADER = ["Check", "Arm / benchmark", "Score", "Estimate", "CI", "Detail"]


def table_rows(result: dict[str, Any]) -> tuple[list[list[str]], list[tuple[str, int]]]:
    rows: list[list[str]] = []
    panels = [("Three-pass reliability (Krippendorff's α across passes)", 0)]
    rel = result["reliability"]
    if rel.get("available"):
        for score, e in rel["scores"].items():
            rows.append([f"α interval ({rel['n_passes']} passes)", str(rel.get("arm")), score, fmt(e.get("alpha")),
                         fmt_ci(e.get("ci_low"), e.get("ci_high")), e.get("skipped") or f"{e.get('n_units')} trajectories; {rel.get('judge')}"])
        if rel.get("item_labels"):
            e = rel["item_labels"]
            rows.append([f"α nominal ({rel['n_passes']} passes)", str(rel.get("arm")), "item labels", fmt(e.get("alpha")),
                         fmt_ci(e.get("ci_low"), e.get("ci_high")), e.get("skipped") or f"{e.get('n_units')} items; {rel.get('judge')}"])
    else:
        rows.append(["α", "-", "-", "n/a", "", rel.get("reason", "")])
    panels.append(("Judge swap (Spearman ρ, primary vs second judge)", len(rows)))
    sw = result["judge_swap"]
    if sw.get("available"):
        for score, e in sw["scores"].items():
            rows.append(["ρ judge swap", str(sw.get("arm")), score, fmt(e.get("rho")), fmt_ci(e.get("ci_low"), e.get("ci_high")),
                         e.get("skipped") or f"n={e['n']}; {sw.get('primary_judge')} vs {sw.get('swap_judge')}"])
    else:
        rows.append(["ρ judge swap", "-", "-", "n/a", "", sw.get("reason", "")])
    panels.append(("Same-task PASS/FAIL pairs: Δ = PASS − FAIL", len(rows)))
    for bench, b in sorted(result["pair_diagnosis"]["benchmarks"].items()):
        tag = f"{bench}{' (Terminal-Bench)' if b['terminal_bench'] else ''}"
        for arm, per in sorted(b["arms"].items()):
            for score, e in per.items():
                rows.append(["pair diagnosis", f"{tag} · {arm}", score, fmt(e.get("median_delta")), "",
                             f"higher {e['higher']} / lower {e['lower']} / tied {e['tied']} of {e['n']} decidable pairs "
                             f"({_per_task_text(e.get('pairs_per_task'))}), {e['n_tasks']} tasks, "
                             f"{e.get('n_tasks_undecidable', 0)} tasks without a decidable pair; "
                             + (f"Abstain {fmt_share(e['abstain_share'])} of {e['n_items_in_pairs']} items in the paired "
                                "trajectories; " if e.get("abstain_share") is not None else "")
                             + f"sign test p {fmt_p(e.get('p_value'))}"
                             + ("" if e.get("pairs_per_task") == 1 else f" (per task p {fmt_p(e['by_task'].get('p_value'))})")])
    return rows, panels


def _per_task_text(per_task: int | None) -> str:
    return "every pair per task" if per_task is None else f"{per_task} per task"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _note(result: dict[str, Any]) -> str:
    parts = []
    for key in ("reliability", "judge_swap"):
        if result[key].get("by_construction"):
            parts.append(_sentence(result[key]["by_construction"]))
    pd_ = result["pair_diagnosis"]
    if pd_.get("note"):
        parts.append(_sentence(pd_["note"]))
    tr = result["transfer"]
    parts.append(f"Transfer table: {tr['path']}." if tr.get("available") else f"Transfer table not available: {tr['reason']}.")
    level = int(round(100 * result["config"]["bootstrap"]["ci"]))
    parts.append(f"CIs: {level}% task-clustered bootstrap. Sign test: exact two-sided binomial test on untied pairs. "
                 f"{zero_evidence_text(result['config']['zero_evidence_score'])}; "
                 f"{zero_evidence_count_text(result.get('zero_evidence_counts') or {}, result['config']['zero_evidence_score'])}.")
    return " ".join(parts)


def table_markdown(result: dict[str, Any]) -> str:
    rows, panels = table_rows(result)
    starts = {i: t for t, i in panels}
    body: list[list[str]] = []
    for i, r in enumerate(rows):
        if i in starts:
            body.append([f"*{starts[i]}*", "", "", "", "", ""])
        body.append(r)
    return markdown_table(HEADER, body, "lllrll", title="RQ5: reliability, judge swap and same-task pairs", note=_note(result))


def table_latex(result: dict[str, Any]) -> str:
    rows, panels = table_rows(result)
    return latex_table(HEADER, rows, "lllrcl", panels=panels)


def compact(result: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rel = result["reliability"]
    if rel.get("available"):
        out["alpha"] = {s: e.get("alpha") for s, e in rel["scores"].items()}
    sw = result["judge_swap"]
    if sw.get("available"):
        out["swap_rho"] = {s: e.get("rho") for s, e in sw["scores"].items()}
    return jsonable(out)


# --------------------------------------------------------------------------- stage

RESULT = ANALYZE / "rq5.json"
PAIRS = ANALYZE / "rq5_pairs.csv"
TABLE_MD = FIGURES / "rq5_table.md"
FIGURE = FIGURES / "rq5_reliability"


def run(params: dict[str, Any]) -> dict[str, Any]:
    from gcpc.analysis.figures import rq5_figure, save_figure

    c = resolve_analysis(params.get("analysis"), params.get("arm"))
    metrics = pd.read_parquet(METRICS)
    rs = pd.read_parquet(REJUDGE / "scores.parquet") if (REJUDGE / "scores.parquet").exists() else None
    rl = pd.read_parquet(REJUDGE / "item_labels.parquet") if (REJUDGE / "item_labels.parquet").exists() else None
    summ = json.loads((REJUDGE / "summary.json").read_text(encoding="utf-8")) if (REJUDGE / "summary.json").exists() else None
    result = rq5(metrics, c, rejudge_scores=rs, rejudge_labels=rl, rejudge_summary=summ)
    write_result_files("rq5", result, compact(result), table_markdown(result), table_latex(result), TABLE_MD.stem)
    primary = with_method_arm(metrics, c["default_variants"])
    primary = primary[(primary["arm"] == c["primary_arm"]) & primary["outcome"].isin(["PASS", "FAIL"])]
    frames = []
    if len(primary):
        for bench, g in primary.groupby("benchmark", sort=True):
            per_task = c["rq5"].get("pairs_per_task")
            p = same_task_pairs(g.assign(value=_fill(g, "gcpc_plain", c["zero_evidence_score"]))
                                [["trajectory_id", "task_id", "outcome", "value"]].dropna(subset=["value"]),
                                None if per_task is None else int(per_task), int(c["rq5"].get("pair_seed", 0)))
            frames.append(p.assign(benchmark=bench))
    pairs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["task_id", "pass_id", "fail_id", "delta", "benchmark"])
    PAIRS.parent.mkdir(parents=True, exist_ok=True)
    write_csv(pairs, PAIRS)  # = to_csv(index=False, float_format='%.6g'), byte for byte
    save_figure(rq5_figure(result, rs, pairs, c), FIGURE)
    return result


def main() -> int:
    from gcpc.params import load_params, stage_args

    args = stage_args("RQ5: reliability, judge swap, transfer, same-task pairs")
    if not METRICS.exists():
        print(f"{METRICS}: not found (run finalize first)", file=sys.stderr)
        return 2
    result = run(load_params(args.params))
    print(f"rq5: reliability {'available' if result['reliability'].get('available') else 'not available'}, "
          f"{len(result['pair_diagnosis']['benchmarks'])} benchmark(s) in the pair diagnosis -> {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["judge_swap", "pair_diagnosis", "reliability", "rq5", "same_task_pairs", "table_latex", "table_markdown"]
