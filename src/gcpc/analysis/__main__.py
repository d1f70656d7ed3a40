"""`python -m gcpc.analysis`: the `analyze` stage (RQ1). Paths are fixed here; logic lives in rq1.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from gcpc.analysis.rq1 import (
    compact_metrics,
    roc_points,
    rq1,
    rq1_condition_latex,
    rq1_condition_markdown,
    rq1_paired_latex,
    rq1_paired_markdown,
    rq1_table_latex,
    rq1_table_markdown,
)
from gcpc.io import write_json, write_text
from gcpc.analysis.common import resolve_analysis, write_csv
from gcpc.params import load_params, stage_args

INPUT = Path("data/processed/finalize/metrics.parquet")
OUT_DIR = Path("data/processed/analyze")
RESULT = OUT_DIR / "rq1.json"
ROC = OUT_DIR / "roc.csv"
METRICS = Path("metrics/rq1.json")
TABLE_MD = Path("figures/rq1_table.md")
TABLE_TEX = Path("figures/rq1_table.tex")
PAIRED_MD = Path("figures/rq1_paired.md")
PAIRED_TEX = Path("figures/rq1_paired.tex")
CONDITION_MD = Path("figures/rq1_by_condition.md")
CONDITION_TEX = Path("figures/rq1_by_condition.tex")


def main() -> int:
    args = stage_args("RQ1: AUC of checklist scores vs official outcome")
    params = load_params(args.params)
    cfg = dict(params.get("analysis") or {})
    cfg["primary_arm"] = resolve_analysis(cfg, params.get("arm"))["primary_arm"]
    if not INPUT.exists():
        print(f"{INPUT}: not found (run the finalize stage first)", file=sys.stderr)
        return 2
    metrics = pd.read_parquet(INPUT)
    result = rq1(metrics, cfg)
    write_json(RESULT, result)
    write_json(METRICS, compact_metrics(result))
    write_text(TABLE_MD, rq1_table_markdown(result))
    write_text(TABLE_TEX, rq1_table_latex(result))
    write_text(PAIRED_MD, rq1_paired_markdown(result))
    write_text(PAIRED_TEX, rq1_paired_latex(result))
    write_text(CONDITION_MD, rq1_condition_markdown(result))
    write_text(CONDITION_TEX, rq1_condition_latex(result))
    ROC.parent.mkdir(parents=True, exist_ok=True)
    write_csv(roc_points(metrics, cfg), ROC)  # = to_csv(index=False, float_format='%.6g'), byte for byte
    print(f"rq1: {result['n_trajectories']} trajectories, {result['n_tasks']} tasks, "
          f"{result['n_excluded_other']} excluded as other -> {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
