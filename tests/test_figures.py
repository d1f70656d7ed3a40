"""Tests for the RQ1 figures: they render, and two renders are byte-identical."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import yaml

from gcpc.analysis.rq1 import rq1
from gcpc.report.figures import forest_plot, judge_label, save_figure, score_by_outcome_plot

FAST = {"bootstrap": {"n_resamples": 30, "seed": 0, "ci": 0.95}}


def make_metrics(n_tasks=8, per_task=5, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        for k in range(per_task):
            outcome = ["PASS", "FAIL", "other"][int(rng.choice(3, p=[0.45, 0.45, 0.1]))]
            for arm in ("gcpc", "baseline"):
                n_items = 5
                n_yes = int(rng.binomial(n_items, 0.7 if outcome == "PASS" else 0.4))
                zero = rng.random() < 0.1
                n_yes, n_no = (0, 0) if zero else (n_yes, n_items - n_yes)
                rows.append({
                    "trajectory_id": f"tr{t}-{k}", "task_id": f"task{t}", "condition": "with_skills" if k % 2 else
                    "without_skills", "outcome": outcome, "arm": arm, "n_items": n_items,
                    "gcpc_plain": n_yes / n_items if not zero else math.nan,
                    "gcpc_outcome": (n_yes + (outcome == "PASS")) / (n_items + 1), "zero_evidence": zero,
                })
    return pd.DataFrame(rows)


def test_judge_label_tolerates_absence():
    assert judge_label({}) is None
    assert judge_label({"judge": {"provider": "anthropic", "model": "claude"}}) == "anthropic/claude"
    assert judge_label({"llm": {"judge": {"provider": "openai", "model": "gpt"}}, "judge": {"model": "x"}}) == "openai/gpt"
    assert judge_label({"llm": {"judge": None}}) is None


def test_figures_are_byte_deterministic(tmp_path):
    m = make_metrics()
    res = rq1(m, FAST)
    outputs = []
    for run in ("a", "b"):
        paths = save_figure(forest_plot(res, "anthropic/claude"), tmp_path / run / "rq1_auc_forest")
        paths += save_figure(score_by_outcome_plot(m, res["config"]), tmp_path / run / "score_by_outcome")
        outputs.append([p.read_bytes() for p in paths])
    assert [p.name for p in paths] == ["rq1_auc_forest.png", "rq1_auc_forest.pdf",
                                       "score_by_outcome.png", "score_by_outcome.pdf"]
    for a, b in zip(*outputs, strict=True):
        assert len(a) > 1000 and a == b
    assert outputs[0][0].startswith(b"\x89PNG") and outputs[0][1].startswith(b"%PDF")
    assert b"CreationDate" not in outputs[0][1]


def test_forest_plot_handles_undefined_auc():
    res = rq1(make_metrics(seed=1), FAST)
    res["arms"]["gcpc"]["gcpc_plain"].update(auc=None, ci_low=None, ci_high=None, skipped="single class")
    fig = forest_plot(res, None)
    assert fig.axes[0].get_title() == "RQ1: checklist score AUC"


def test_report_stage_end_to_end(tmp_path, monkeypatch):
    from gcpc.analysis import __main__ as analyze
    from gcpc.report import __main__ as report

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data/processed/finalize").mkdir(parents=True)
    make_metrics(seed=2).to_parquet("data/processed/finalize/metrics.parquet")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"analysis": {"bootstrap": {"n_resamples": 20}}}))
    monkeypatch.setattr("sys.argv", ["stage"])
    assert analyze.main() == 0
    assert json.loads((tmp_path / "data/processed/analyze/rq1.json").read_text())["config"]["bootstrap"]["seed"] == 0
    assert report.main() == 0
    for name in ("rq1_auc_forest", "score_by_outcome"):
        for ext in (".png", ".pdf"):
            assert (tmp_path / "figures" / f"{name}{ext}").stat().st_size > 0
