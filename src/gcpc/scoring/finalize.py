"""Finalize stage library: official-outcome step and the per-(trajectory, arm) metrics table."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from gcpc.corpus.models import Trajectory
from gcpc.io import read_models, write_json, write_jsonl
from gcpc.judging.models import Judgment
from gcpc.scoring.metrics import apply_official_outcome, score_trajectory

META = ("benchmark", "task_id", "harness", "model", "condition")


def finalize(trajectories: list[Trajectory], judgments: list[Judgment], cfg: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    by_id = {t.trajectory_id: t for t in trajectories}
    propagation = bool(cfg.get("pass_propagation", True))
    endpoint = bool(cfg.get("endpoint", True))
    metric_rows, label_rows, excluded = [], [], []
    for j in sorted(judgments, key=lambda j: (j.arm, j.trajectory_id)):
        traj = by_id.get(j.trajectory_id)
        if traj is None:
            raise ValueError(f"judgments for arm '{j.arm}': unknown trajectory {j.trajectory_id} (ingest and judge outputs disagree)")
        if j.status != "ok":
            excluded.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "reason": f"judge {j.status}: {j.error}"})
            continue
        outcome = traj.outcome.status
        scores = score_trajectory(j.labels, outcome, pass_propagation=propagation, endpoint=endpoint)
        meta = {k: getattr(traj, k) for k in META}
        metric_rows.append({"trajectory_id": j.trajectory_id, **meta, "outcome": outcome, "arm": j.arm,
                            "provider": j.provider, "judge_model": j.model, "checklist_hash": j.checklist_hash,
                            **scores.model_dump()})
        after = apply_official_outcome(j.labels, outcome, pass_propagation=propagation, endpoint=endpoint) if outcome in ("PASS", "FAIL") else None
        after_by_id = {lab.item_id: lab.label for lab in after} if after else {}
        for lab in j.labels:
            label_rows.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "item_id": lab.item_id, "route": lab.route,
                               "label_plain": lab.label, "label_outcome": after_by_id.get(lab.item_id), "raw_label": lab.raw_label,
                               "downgraded": lab.downgraded, "downgrade_reason": lab.downgrade_reason})
        if after and after[-1].route == "endpoint":
            label_rows.append({"trajectory_id": j.trajectory_id, "arm": j.arm, "item_id": after[-1].item_id, "route": "endpoint",
                               "label_plain": None, "label_outcome": after[-1].label, "raw_label": None,
                               "downgraded": False, "downgrade_reason": None})
    metrics = pd.DataFrame(metric_rows)
    for col in ("gcpc_plain", "gcpc_outcome", "evidence_coverage"):
        if col in metrics:
            metrics[col] = metrics[col].astype("float64")
    return metrics, pd.DataFrame(label_rows), excluded


def _finite(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def summary(metrics: pd.DataFrame, excluded: list[dict[str, Any]]) -> dict[str, Any]:
    """Compact DVC metrics: per arm and outcome, mean scores and evidence figures."""
    out: dict[str, Any] = {"n_excluded": len(excluded)}
    for arm, frame in metrics.groupby("arm", sort=True):
        arm_out: dict[str, Any] = {"n_trajectories": int(len(frame)), "n_zero_evidence": int(frame["zero_evidence"].sum())}
        for outcome, g in frame.groupby("outcome", sort=True):
            arm_out[str(outcome)] = {
                "n": int(len(g)),
                "gcpc_plain_mean": _finite(round(float(g["gcpc_plain"].mean()), 6)) if g["gcpc_plain"].notna().any() else None,
                "gcpc_outcome_mean": _finite(round(float(g["gcpc_outcome"].mean()), 6)) if g["gcpc_outcome"].notna().any() else None,
                "evidence_coverage_mean": _finite(round(float(g["evidence_coverage"].mean()), 6)),
                "perfect_share": _finite(round(float(g["perfect"].astype("float64").mean()), 6)) if g["perfect"].notna().any() else None,
            }
        out[str(arm)] = arm_out
    return out


def run(params: dict[str, Any], ingest_dir: Path, judge_root: Path, out_dir: Path, metrics_path: Path) -> pd.DataFrame:
    trajectories = read_models(ingest_dir / "trajectories.jsonl", Trajectory)
    arms = sorted((params.get("arm") or {}).keys())
    judgments: list[Judgment] = []
    for arm in arms:
        path = judge_root / arm / "judgments.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path}: judgments for configured arm '{arm}' are missing (run the judge stage)")
        judgments.extend(read_models(path, Judgment))
    metrics, labels, excluded = finalize(trajectories, judgments, params.get("scoring", {}))
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics.to_parquet(out_dir / "metrics.parquet", index=False)
    metrics.to_csv(out_dir / "metrics.csv", index=False, lineterminator="\n", float_format="%.6f")
    labels.to_parquet(out_dir / "labels.parquet", index=False)
    write_jsonl(out_dir / "exclusions.jsonl", excluded)
    write_json(metrics_path, summary(metrics, excluded))
    return metrics
