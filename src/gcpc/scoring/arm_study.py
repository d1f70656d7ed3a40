"""Every judging arm on one corpus, outside DVC: AUC against PASS/FAIL per arm and judge accuracy.

    python -m gcpc.scoring.arm_study --data terminal-bench-1 --harness mini-swe-agent --min-agent-steps 1 --out DIR

Composes the configuration from conf/ exactly as `dvc exp run` would (Hydra; `data=<name>`,
`arm=<arms>`, plus `scoring.per_test_propagation=true` so the per-test variant is reported), then
runs the stage library functions in order into DIR: ingest (then keeps the trajectories of the
given harness that show at least N agent steps, i.e. tool calls; the others are written to the
exclusions with the reason), synthesis, the judge stage of every arm, finalize. It writes
DIR/study.json and DIR/study.md:

* per arm and score (gcpc_plain, gcpc_outcome, gcpc_per_test): AUC against the official outcome
  with a task-clustered bootstrap CI (analysis.bootstrap settings), over the PASS/FAIL trajectories
  the arm scored, and over the trajectories every arm scored (so arms are compared on the same
  runs). As in RQ1, zero-evidence trajectories are excluded (or scored `analysis.zero_evidence_score`, a variant);
  a score an arm does not produce (holistic: the outcome variants) is reported as not produced;
* judge accuracy (finalize's judge_accuracy.json): plain labels of assertion-route items against
  per-test verifier results;
* the floors (gcpc.analysis.floors): AUC of each outcome-blind floor arm and each judge arm's paired
  ΔAUC against the best floor on its own trajectories;
* item-level validity (gcpc.analysis.item_validity): agreement and Cohen's κ of assertion-route labels
  with per-test results, task-clustered CIs, split by test outcome, and the generated-route share;
* an audit of the judge-visible logs: how many trajectories' rendered logs contain their own
  harness or model string (the log text itself, e.g. a launch command, not the metadata fields).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from gcpc.analysis.common import zero_evidence_text

from gcpc.corpus import population
from gcpc.corpus.population import agent_steps  # noqa: F401 (re-exported)
from gcpc.corpus.ingest import corpora_from_params, ingest, merge_results, write_outputs
from gcpc.corpus.models import EventKind, Exclusion, Trajectory
from gcpc.corpus.render import render_log
from gcpc.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[3]
SCORES = ("gcpc_plain", "gcpc_outcome", "gcpc_per_test")


def compose_params(data: str, arms: str, overrides: list[str] | None = None, conf_dir: Path = ROOT / "conf") -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None):
        cfg = compose(config_name="config",
                      overrides=[f"data={data}", f"arm={arms}", "++scoring.per_test_propagation=true", *(overrides or [])])
    params = OmegaConf.to_container(cfg, resolve=True)
    params["arm"] = {k: v | {"template": str((ROOT / v["template"]).resolve())} for k, v in params["arm"].items()}
    return params


def select(result: Any, *, harness: str | None, min_agent_steps: int) -> Any:
    """The ingest result restricted to one harness and to runs with at least `min_agent_steps` tool calls:
    the data config's `population` filter (gcpc.corpus.population), which `dvc exp run` applies at ingest."""
    return population.apply(result, {"harness": harness, "min_agent_steps": min_agent_steps})


def metadata_in_log(trajectories: list[Trajectory], max_chars: int) -> dict[str, int]:
    """How many judge-visible logs (after run-metadata redaction, as every arm sees them) still contain
    the run's own harness or model string."""
    from gcpc.judging.spec import redact_run_metadata

    out = {"n": len(trajectories), "harness_in_log": 0, "model_in_log": 0}
    for t in trajectories:
        text = render_log(redact_run_metadata(t).events, max_chars=max_chars).lower()
        out["harness_in_log"] += bool(t.harness and t.harness != "unknown" and t.harness.lower() in text)
        out["model_in_log"] += bool(t.model and t.model != "unknown" and t.model.lower() in text)
    return out


def _auc(rows: pd.DataFrame, score: str, boot: dict[str, Any], zero_evidence_score: float | None) -> dict[str, Any]:
    from gcpc.analysis.stats import auc_statistic, clustered_bootstrap

    rows = rows[rows["outcome"].isin(["PASS", "FAIL"])].copy()
    entry: dict[str, Any] = {"n": int(len(rows)), "n_pass": int((rows["outcome"] == "PASS").sum()), "n_tasks": int(rows["task_id"].nunique())}
    entry["n_fail"] = entry["n"] - entry["n_pass"]
    values = rows[score].astype("float64")
    if len(rows) and values.isna().all():
        return entry | {"auc": None, "ci_low": None, "ci_high": None, "not_produced": True}
    from gcpc.analysis.common import outcome_free_values

    rows[score] = outcome_free_values(rows, score, zero_evidence_score)
    entry["n_zero_evidence_excluded" if zero_evidence_score is None else "n_undefined_filled"] = int(
        rows["zero_evidence"].fillna(False).astype(bool).sum() if zero_evidence_score is None else values.isna().sum())
    rows = rows[rows[score].notna()]
    entry.update(n=int(len(rows)), n_pass=int((rows["outcome"] == "PASS").sum()), n_tasks=int(rows["task_id"].nunique()))
    entry["n_fail"] = entry["n"] - entry["n_pass"]
    rows["_pass"] = rows["outcome"].eq("PASS")
    if entry["n_pass"] == 0 or entry["n_fail"] == 0:
        return entry | {"auc": None, "ci_low": None, "ci_high": None, "skipped": "single class"}
    res = clustered_bootstrap(rows[[score, "_pass", "task_id"]], "task_id", auc_statistic(score, "_pass"),
                              n_resamples=int(boot["n_resamples"]), seed=int(boot["seed"]), ci=float(boot["ci"]))
    return entry | {"auc": round(res.estimate, 4), "ci_low": round(res.ci_low, 4), "ci_high": round(res.ci_high, 4),
                    "n_resamples": res.n_resamples, "n_valid": res.n_valid}


def auc_table(metrics: pd.DataFrame, analysis: dict[str, Any]) -> dict[str, Any]:
    boot = {"n_resamples": 2000, "seed": 0, "ci": 0.95} | (analysis.get("bootstrap") or {})
    zes = analysis.get("zero_evidence_score")
    arms = sorted(metrics["arm"].unique())
    common = set.intersection(*(set(metrics.loc[metrics["arm"] == a, "trajectory_id"]) for a in arms)) if arms else set()
    out: dict[str, Any] = {"bootstrap": boot, "zero_evidence_score": zes, "n_common": len(common), "arms": {}}
    for arm in arms:
        rows = metrics[metrics["arm"] == arm]
        out["arms"][arm] = {
            "scored": {s: _auc(rows, s, boot, zes) for s in SCORES},
            "common": {s: _auc(rows[rows["trajectory_id"].isin(common)], s, boot, zes) for s in SCORES},
        }
    return out


def _fmt(e: dict[str, Any]) -> str:
    if e.get("not_produced"):
        return "not produced"
    if e.get("auc") is None:
        return "n/a"
    return f"{e['auc']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"


def markdown(study: dict[str, Any]) -> str:
    aucs = study["auc"]
    level = round(100 * aucs["bootstrap"]["ci"])
    lines = [f"# Arm study: {study['data']} ({study['command']})", "",
             f"Trajectories judged: {study['n_trajectories']} ({study['outcomes']}), tasks: {study['n_tasks']}; "
             f"scored by every arm: {aucs['n_common']}. AUC vs official PASS with {level}% task-clustered bootstrap CI "
             f"({aucs['bootstrap']['n_resamples']} resamples, seed {aucs['bootstrap']['seed']}). "
             f"{zero_evidence_text(aucs['zero_evidence_score'])}.", ""]
    for population in ("scored", "common"):
        lines += [f"## AUC over the trajectories {'each arm scored' if population == 'scored' else 'every arm scored'}", "",
                  "| arm | n (pass/fail) | tasks | plain | with official outcome | per-test propagation |", "|---|---|---|---|---|---|"]
        for arm, e in aucs["arms"].items():
            p = e[population]["gcpc_plain"]
            lines.append(f"| {arm} | {p['n']} ({p['n_pass']}/{p['n_fail']}) | {p['n_tasks']} | "
                         + " | ".join(_fmt(e[population][s]) for s in SCORES) + " |")
        lines.append("")
    lines += ["## Judge accuracy: assertion-route items vs per-test verifier results", "",
              "| arm | items with truth | decided | agreement | Abstain | agreement before the gate | truth Yes: agree | truth No: agree |",
              "|---|---|---|---|---|---|---|---|"]
    for arm, e in study["judge_accuracy"]["arms"].items():
        if not e.get("applicable"):
            continue
        p, r = e["plain"], e["raw"]
        lines.append(f"| {arm} | {p['n']} | {p['n_decided']} | {p['agreement']} | {p['n_abstain']} ({p['abstain_share']}) | "
                     f"{r['agreement']} | {p['truth_yes']['agreement']} ({p['truth_yes']['n_decided']}) | "
                     f"{p['truth_no']['agreement']} ({p['truth_no']['n_decided']}) |")
    if "floors" in study:
        from gcpc.analysis.floors import floors_markdown
        from gcpc.analysis.item_validity import validity_markdown

        lines += ["", "## Outcome-blind floors", "", floors_markdown(study["floors"]).rstrip(),
                  "", "## Item-level validity", "", validity_markdown(study["item_validity"]).rstrip()]
    audit = study["metadata_in_log"]
    lines += ["", f"Judge-visible logs containing the run's own harness string: {audit['harness_in_log']} of {audit['n']}; "
                  f"model string: {audit['model_in_log']} of {audit['n']}."]
    return "\n".join(lines) + "\n"


def run_study(data: str, out: Path, *, arms: str = "all", harness: str | None = None, min_agent_steps: int = 0,
              overrides: list[str] | None = None, command: str = "", progress: bool = False) -> dict[str, Any]:
    from gcpc.judging.stage import run as judge_run
    from gcpc.scoring.finalize import run as finalize_run
    from gcpc.synthesis.generate import SynthesisSettings
    from gcpc.synthesis.stage import synthesize_all

    params = compose_params(data, arms, overrides)
    corpus = merge_results([ingest(cfg, ROOT) for cfg in corpora_from_params(params["data"])])
    result = select(corpus, harness=harness, min_agent_steps=min_agent_steps)
    write_outputs(result, out / "ingest")
    used_tasks = {(t.benchmark, t.task_id) for t in result.trajectories}
    tasks = [t for t in result.tasks if (t.benchmark, t.task_id) in used_tasks]
    settings = SynthesisSettings.from_params(params["synthesis"] | {"prompts_dir": str(ROOT / params["synthesis"].get("prompts_dir", "prompts"))})
    synthesize_all(tasks, params["generator"], settings, out / "synthesize", progress=progress)
    judgments = {arm: judge_run(params, arm, out / "ingest", out / "synthesize", out / "judge" / arm, progress=progress)
                 for arm in params["arm"]}
    metrics = finalize_run(params, out / "ingest", out / "judge", out / "finalize", out / "finalize.json")
    accuracy = json.loads((out / "finalize" / "judge_accuracy.json").read_text())
    from gcpc.analysis.floors import floor_comparison
    from gcpc.analysis.item_validity import item_validity

    analysis = params.get("analysis") or {}
    labels = pd.read_parquet(out / "finalize" / "labels.parquet")
    study = {
        "command": command, "data": data, "arms": list(params["arm"]), "harness": harness, "min_agent_steps": min_agent_steps,
        "judge": {k: params["judge"].get(k) for k in ("provider", "model")},
        "n_trajectories": len(result.trajectories), "n_tasks": len(used_tasks),
        "outcomes": {k: int(v) for k, v in sorted(pd.Series([t.outcome.status for t in result.trajectories]).value_counts().items())},
        "judged": {arm: {s: sum(j.status == s for j in js) for s in ("ok", "skipped", "failed")} for arm, js in judgments.items()},
        "auc": auc_table(metrics, params.get("analysis") or {}),
        "judge_accuracy": accuracy,
        "floors": floor_comparison(metrics, analysis),
        "item_validity": item_validity(labels, metrics, analysis),
        "metadata_in_log": metadata_in_log(result.trajectories, int(params.get("judging", {}).get("max_event_chars", 4000))),
    }
    write_json(out / "study.json", study)
    write_text(out / "study.md", markdown(study))
    return study


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a conf/data config name, e.g. terminal-bench-1")
    parser.add_argument("--arms", default="all", help="a conf/arm config name (default: all)")
    parser.add_argument("--harness", default=None, help="keep only trajectories of this harness")
    parser.add_argument("--min-agent-steps", type=int, default=0, help="keep only trajectories with at least this many tool calls")
    parser.add_argument("--out", required=True, type=Path, help="output folder (created)")
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides, e.g. llm@judge=replay")
    from gcpc.params import parse_args

    args = parse_args(parser, argv, overrides=False)
    command = "python -m gcpc.scoring.arm_study " + " ".join(sys.argv[1:] if argv is None else argv)
    study = run_study(args.data, args.out, arms=args.arms, harness=args.harness, min_agent_steps=args.min_agent_steps,
                      overrides=args.overrides, command=command, progress=False)
    print(markdown(study))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
