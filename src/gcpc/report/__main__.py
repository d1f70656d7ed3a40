"""`python -m gcpc.report`: the `figures` stage; renders the RQ1 figures (Figure 4, forest, scores by outcome)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from gcpc.analysis.common import judge_identity, with_method_arm
from gcpc.params import load_params, stage_args
from gcpc.analysis.parallel import run_parts
from gcpc.analysis.figures import fig4, forest_plot, judge_label, save_figure, score_by_outcome_plot

METRICS = Path("data/processed/finalize/metrics.parquet")
RQ1 = Path("data/processed/analyze/rq1.json")
FIG_DIR = Path("figures")


def main() -> int:
    args = stage_args("Render RQ1 figures")
    params = load_params(args.params)
    for path in (METRICS, RQ1):
        if not path.exists():
            print(f"{path}: not found (run the finalize and analyze stages first)", file=sys.stderr)
            return 2
    result = json.loads(RQ1.read_text(encoding="utf-8"))
    metrics = pd.read_parquet(METRICS)
    # Same config the numbers were computed with, so the plot cannot disagree with the table.
    methods = with_method_arm(metrics, result["config"].get("default_variants", []))
    # three independent figures, drawn side by side where there are cores (gcpc.analysis.parallel); the longest first
    drawn = run_parts({
        "score_by_outcome": lambda: save_figure(score_by_outcome_plot(methods, result["config"]), FIG_DIR / "score_by_outcome"),
        "rq1_auc_forest": lambda: save_figure(forest_plot(result, judge_label(params)), FIG_DIR / "rq1_auc_forest"),
        "fig4_auc": lambda: save_figure(fig4(result, judge_identity(methods)), FIG_DIR / "fig4_auc"),
    })
    written = [*drawn["rq1_auc_forest"], *drawn["score_by_outcome"], *drawn["fig4_auc"]]
    print("report: wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
