"""Finalize stage library: the official-outcome step, its variants, and the per-(trajectory, arm) tables.

Outputs (data/processed/finalize/):
* metrics.parquet / .csv - one row per (trajectory, arm). Columns kept for analysis:
  trajectory_id, benchmark, task_id, harness, model, condition, outcome, arm, n_items, n_yes, n_no,
  n_abstain, n_downgraded, gcpc_plain, gcpc_outcome, perfect, evidence_coverage, zero_evidence.
  Added: arm_kind, gcpc_plain_ungated (labels before the evidence gate), gcpc_per_test and
  perfect_per_test (per-test propagation variant; NaN unless scoring.per_test_propagation is on),
  n_truth (assertion items whose per-test results give a truth) and holistic_score (raw 0-10).
  Holistic arms have no items: gcpc_plain = score / 10 (= gcpc_plain_ungated), perfect = score 10
  (PASS/FAIL rows only, like every arm), n_* = 0, and gcpc_outcome, gcpc_per_test, evidence_coverage
  are undefined (NaN).
  zero_evidence / zero_evidence_reason: every item Abstain (checklist-like arms; the paper's rule, which
  never marks Holistic or TICK, arms that cannot abstain); for floor arms, and for Holistic and TICK under
  the extension `scoring.action_free_zero_evidence: true`, a log with no tool output or file content.
  Such rows stay in the table (with their scores) and every outcome-free analysis excludes them (§4.1).
  Floor arms (kind floor, no model) likewise: gcpc_plain is the floor score in [0, 1], perfect is
  undefined; zero evidence is read off the log, as for Holistic and TICK.
* variants.parquet - the same judgments in long form, one row per (trajectory, arm, variant) with
  variant in plain / plain_ungated / outcome / per_test: score, perfect and Yes/No/Abstain counts.
* labels.parquet - one row per item label (plus the endpoint item), with the per-test truth.
* judge_accuracy.json - agreement of plain judge labels with per-test results (accuracy.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from gcpc.corpus.models import EVIDENCE_KINDS, EventKind, Trajectory
from gcpc.io import iter_models, read_models, write_csv, write_json, write_jsonl, write_parquet
from gcpc.judging.models import Judgment
from gcpc.scoring.accuracy import compact_accuracy, judge_accuracy
from gcpc.scoring.metrics import (
    apply_official_outcome,
    apply_per_test,
    per_test_truth,
    score_trajectory,
    score_variants,
    TrajectoryScores,
    VariantScores,
    action_free_rule,
    zero_evidence_reason,
)

META = ("benchmark", "task_id", "harness", "model", "condition")
HOLISTIC_MAX = 10.0
FLOAT_COLUMNS = ("gcpc_plain", "gcpc_outcome", "evidence_coverage", "gcpc_plain_ungated", "gcpc_per_test", "holistic_score")


def _settings(cfg: dict[str, Any]) -> dict[str, bool]:
    return {"pass_propagation": bool(cfg.get("pass_propagation", True)), "endpoint": bool(cfg.get("endpoint", True)),
            "per_test": bool(cfg.get("per_test_propagation", False)), "action_free": action_free_rule(cfg)}


def _holistic_row(j: Judgment, outcome: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if j.score is None:
        raise ValueError(f"judgments for arm '{j.arm}': holistic judgment of {j.trajectory_id} has no score")
    rescaled = j.score / HOLISTIC_MAX
    perfect = (j.score == HOLISTIC_MAX) if outcome in ("PASS", "FAIL") else None
    row = {"n_items": 0, "n_yes": 0, "n_no": 0, "n_abstain": 0, "n_downgraded": 0, "gcpc_plain": rescaled,
           "gcpc_outcome": None, "perfect": perfect, "evidence_coverage": None, "zero_evidence": False,
           "gcpc_plain_ungated": rescaled, "gcpc_per_test": None, "perfect_per_test": None, "n_truth": 0,
           "holistic_score": j.score}
    long = [{"variant": v, "score": rescaled if v.startswith("plain") else None,
             "perfect": (j.score == HOLISTIC_MAX) if v.startswith("plain") else None,
             "n_yes": 0, "n_no": 0, "n_abstain": 0} for v in ("plain", "plain_ungated", "outcome", "per_test")]
    return row, long


def _floor_row(j: Judgment) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Floor arms (no model): the floor score is gcpc_plain; nothing is labelled, no outcome variant."""
    if j.score is None:
        raise ValueError(f"judgments for arm '{j.arm}': floor judgment of {j.trajectory_id} has no score")
    row = {"n_items": 0, "n_yes": 0, "n_no": 0, "n_abstain": 0, "n_downgraded": 0, "gcpc_plain": j.score,
           "gcpc_outcome": None, "perfect": None, "evidence_coverage": None, "zero_evidence": False,
           "gcpc_plain_ungated": j.score, "gcpc_per_test": None, "perfect_per_test": None, "n_truth": 0, "holistic_score": None}
    long = [{"variant": v, "score": j.score if v.startswith("plain") else None, "perfect": None,
             "n_yes": 0, "n_no": 0, "n_abstain": 0} for v in ("plain", "plain_ungated", "outcome", "per_test")]
    return row, long


def _checklist_row(j: Judgment, traj: Trajectory, s: dict[str, bool]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    outcome = traj.outcome.status
    scores = score_trajectory(j.labels, outcome, pass_propagation=s["pass_propagation"], endpoint=s["endpoint"])
    variants = score_variants(j.labels, outcome, test_results=traj.test_results, pass_propagation=s["pass_propagation"],
                              endpoint=s["endpoint"], per_test=s["per_test"])
    row = {**scores.model_dump(), "gcpc_plain_ungated": variants["plain_ungated"].score,
           "gcpc_per_test": variants["per_test"].score, "perfect_per_test": variants["per_test"].perfect,
           "n_truth": sum(per_test_truth(lab, traj.test_results) is not None for lab in j.labels), "holistic_score": None}
    return row, [v.model_dump() for v in variants.values()]


def _label_rows(j: Judgment, traj: Trajectory, s: dict[str, bool]) -> list[dict[str, Any]]:
    outcome = traj.outcome.status
    binary = outcome in ("PASS", "FAIL")
    after = apply_official_outcome(j.labels, outcome, pass_propagation=s["pass_propagation"], endpoint=s["endpoint"]) if binary else None
    per_test = apply_per_test(after, traj.test_results) if after is not None and s["per_test"] else None
    after_by_id = {lab.item_id: lab.label for lab in after} if after else {}
    per_test_by_id = {lab.item_id: lab.label for lab in per_test} if per_test else {}
    rows = []
    for lab in j.labels:
        rows.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "arm_kind": j.kind, "item_id": lab.item_id, "route": lab.route,
                     "text": lab.text, "label_plain": lab.label, "label_outcome": after_by_id.get(lab.item_id),
                     "label_per_test": per_test_by_id.get(lab.item_id), "truth_per_test": per_test_truth(lab, traj.test_results),
                     "raw_label": lab.raw_label, "downgraded": lab.downgraded, "downgrade_reason": lab.downgrade_reason,
                     "n_evidence": len(lab.evidence)})
    if after and after[-1].route == "endpoint":
        rows.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "arm_kind": j.kind, "item_id": after[-1].item_id,
                     "route": "endpoint", "text": None, "label_plain": None, "label_outcome": after[-1].label,
                     "label_per_test": per_test[-1].label if per_test else None, "truth_per_test": None, "raw_label": None,
                     "downgraded": False, "downgrade_reason": None, "n_evidence": 0})
    return rows


def finalize(trajectories: list[Trajectory], judgments: list[Judgment], cfg: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    metrics, labels, _, excluded = finalize_tables(trajectories, judgments, cfg)
    return metrics, labels, excluded


def finalize_tables(trajectories: list[Trajectory], judgments: list[Judgment], cfg: dict[str, Any]
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    """(metrics, labels, variants, exclusions) for judgments of any arm kind."""
    by_id = {t.trajectory_id: t for t in trajectories}
    s = _settings(cfg)
    metric_rows, label_rows, variant_rows, excluded = [], [], [], []
    for j in sorted(judgments, key=lambda j: (j.arm, j.trajectory_id)):
        traj = by_id.get(j.trajectory_id)
        if traj is None:
            raise ValueError(f"judgments for arm '{j.arm}': unknown trajectory {j.trajectory_id} (ingest and judge outputs disagree)")
        if j.status != "ok":
            excluded.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "reason": f"judge {j.status}: {j.error}"})
            continue
        outcome = traj.outcome.status
        row, long = (_holistic_row(j, outcome) if j.kind == "holistic" else _floor_row(j) if j.kind == "floor"
                     else _checklist_row(j, traj, s))
        reason = zero_evidence_reason(j.kind, j.labels, traj.events, action_free=s["action_free"])
        row.update(zero_evidence=reason is not None, zero_evidence_reason=reason)
        meta = {k: getattr(traj, k) for k in META}
        meta["n_tool_calls"] = sum(e.kind == EventKind.TOOL_CALL for e in traj.events)  # 0: an action-free log (RQ4 idle rows)
        metric_rows.append({"trajectory_id": j.trajectory_id, **meta, "outcome": outcome, "arm": j.arm, "arm_kind": j.kind,
                            "provider": j.provider, "judge_model": j.model, "checklist_hash": j.checklist_hash, **row})
        variant_rows += [{"trajectory_id": j.trajectory_id, "task_id": traj.task_id, "condition": traj.condition, "outcome": outcome,
                          "arm": j.arm, "arm_kind": j.kind, **v} for v in long]
        label_rows += _label_rows(j, traj, s)
    # an arm with zero judged trajectories (all failed, or a tasks-only corpus) still has the columns
    metrics = pd.DataFrame(metric_rows) if metric_rows else pd.DataFrame(columns=_metric_columns())
    for col in FLOAT_COLUMNS:
        if col in metrics:
            metrics[col] = metrics[col].astype("float64")
    variants = pd.DataFrame(variant_rows) if variant_rows else pd.DataFrame(
        columns=["trajectory_id", "task_id", "condition", "outcome", "arm", "arm_kind", *VariantScores.model_fields])
    if "score" in variants:
        variants["score"] = variants["score"].astype("float64")
    return metrics, pd.DataFrame(label_rows), variants, excluded


def _metric_columns() -> list[str]:
    return ["trajectory_id", *META, "outcome", "arm", "arm_kind", "provider", "judge_model", "checklist_hash",
            *dict.fromkeys([*TrajectoryScores.model_fields, "gcpc_plain_ungated", "gcpc_per_test", "perfect_per_test",
                            "n_truth", "holistic_score"])]


def _finite(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _mean(frame: pd.DataFrame, col: str) -> float | None:
    if col not in frame or not frame[col].notna().any():
        return None
    return _finite(round(float(frame[col].astype("float64").mean()), 6))


def summary(metrics: pd.DataFrame, excluded: list[dict[str, Any]], accuracy: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compact DVC metrics: per arm and outcome, mean scores and evidence figures; judge accuracy."""
    out: dict[str, Any] = {"n_excluded": len(excluded)}
    for arm, frame in metrics.groupby("arm", sort=True):
        arm_out: dict[str, Any] = {"n_trajectories": int(len(frame)), "n_zero_evidence": int(frame["zero_evidence"].astype(bool).sum())}
        for outcome, g in frame.groupby("outcome", sort=True):
            arm_out[str(outcome)] = {
                "n": int(len(g)),
                "gcpc_plain_mean": _mean(g, "gcpc_plain"),
                "gcpc_outcome_mean": _mean(g, "gcpc_outcome"),
                "gcpc_per_test_mean": _mean(g, "gcpc_per_test"),
                "evidence_coverage_mean": _mean(g, "evidence_coverage"),
                "perfect_share": _finite(round(float(g["perfect"].dropna().astype("float64").mean()), 6)) if g["perfect"].notna().any() else None,
            }
        out[str(arm)] = arm_out
    if accuracy is not None:
        out["judge_accuracy"] = compact_accuracy(accuracy)
    return out


def scoring_view(traj: Trajectory) -> Trajectory:
    """The trajectory as scoring reads it: its events reduced to the two facts scoring reads, how many tool calls
    (`n_tool_calls`) and whether an evidence event has text (`log_has_evidence`). Finalize held every log
    whole, ~0.6 MiB per kept trajectory at paper scale (7.9 GiB at 20,818; issue 36), for these two facts."""
    calls = [e for e in traj.events if e.kind == EventKind.TOOL_CALL]
    evidence = next((e for e in traj.events if e.kind in EVIDENCE_KINDS and e.text.strip()), None)
    # one tool-call event, listed once per call (a list of references: only the count is read)
    events = [calls[0].model_copy(update={"text": ""})] * len(calls) if calls else []
    if evidence is not None:
        events.append(evidence.model_copy(update={"text": "x"}))
    return traj.model_copy(update={"events": events})


def run(params: dict[str, Any], ingest_dir: Path, judge_root: Path, out_dir: Path, metrics_path: Path) -> pd.DataFrame:
    trajectories = [scoring_view(t) for t in iter_models(ingest_dir / "trajectories.jsonl", Trajectory)]
    arms = sorted((params.get("arm") or {}).keys())
    judgments: list[Judgment] = []
    for arm in arms:
        path = judge_root / arm / "judgments.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path}: judgments for configured arm '{arm}' are missing (run the judge stage)")
        judgments.extend(read_models(path, Judgment))
    metrics, labels, variants, excluded = finalize_tables(trajectories, judgments, params.get("scoring", {}))
    accuracy = judge_accuracy(judgments, {t.trajectory_id: t for t in trajectories})
    out_dir.mkdir(parents=True, exist_ok=True)
    write_parquet(out_dir / "metrics.parquet", metrics)
    write_csv(metrics, out_dir / "metrics.csv", float_format="%.6f")
    write_parquet(out_dir / "labels.parquet", labels)
    write_parquet(out_dir / "variants.parquet", variants)
    write_json(out_dir / "judge_accuracy.json", accuracy)
    write_jsonl(out_dir / "exclusions.jsonl", excluded)
    write_json(metrics_path, summary(metrics, excluded, accuracy))
    return metrics
