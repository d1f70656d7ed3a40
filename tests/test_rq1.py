"""Tests for the RQ1 analysis and the `analyze` stage entry point."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import roc_auc_score

from gcpc.analysis.rq1 import compact_metrics, roc_points, rq1, rq1_table_latex, rq1_table_markdown

FAST = {"bootstrap": {"n_resamples": 60, "seed": 0, "ci": 0.95}}


def make_metrics(n_tasks=12, per_task=6, arms=("gcpc", "baseline"), seed=0) -> pd.DataFrame:
    """Finalize-shaped table: one row per (trajectory, arm), with zero-evidence and 'other' rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        for k in range(per_task):
            traj = f"traj-{t:02d}-{k}"
            cond = "with_skills" if k % 2 else "without_skills"
            outcome = rng.choice(["PASS", "FAIL", "other"], p=[0.45, 0.45, 0.10])
            for arm in arms:
                n_items = int(rng.integers(3, 8))
                zero = rng.random() < 0.12
                if zero:
                    n_yes = n_no = 0
                else:
                    p = 0.7 if outcome == "PASS" else 0.4
                    n_yes = int(rng.binomial(n_items, p))
                    n_no = int(rng.integers(0, n_items - n_yes + 1))
                n_abstain = n_items - n_yes - n_no
                decided = n_yes + n_no
                plain = n_yes / decided if decided else math.nan
                passed = outcome == "PASS"
                rows.append({
                    "trajectory_id": traj, "benchmark": "demo", "task_id": f"task-{t:02d}", "harness": "h",
                    "model": "m", "condition": cond, "outcome": str(outcome), "arm": arm,
                    "n_items": n_items, "n_yes": n_yes, "n_no": n_no, "n_abstain": n_abstain, "n_downgraded": 0,
                    "gcpc_plain": plain, "gcpc_outcome": (n_yes + passed) / (n_items + 1),
                    "perfect": bool(n_yes == n_items and passed), "evidence_coverage": decided / n_items,
                    "zero_evidence": bool(decided == 0),
                })
    return pd.DataFrame(rows)


def _assert_no_nan(obj, path="$"):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _assert_no_nan(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _assert_no_nan(v, f"{path}[{i}]")
    elif isinstance(obj, float):
        assert math.isfinite(obj), f"non-finite at {path}"


def test_rq1_auc_matches_sklearn_on_filtered_data():
    m = make_metrics()
    res = rq1(m, FAST)
    kept = m[m["outcome"].isin(["PASS", "FAIL"])]
    assert res["n_excluded_other"] == m.drop_duplicates("trajectory_id")["outcome"].eq("other").sum() > 0
    for arm in ("gcpc", "baseline"):
        arm_rows = kept[kept["arm"] == arm]
        # paper §4.1: zero-evidence trajectories are excluded from outcome-free analyses (plain GCPC) by
        # default; the outcome-using score is defined for them and keeps them (issue 35, item 1)
        for score, sub in (("gcpc_plain", arm_rows[~arm_rows["zero_evidence"]]), ("gcpc_outcome", arm_rows)):
            y = sub["outcome"].eq("PASS")
            e = res["arms"][arm][score]
            assert e["auc"] == pytest.approx(roc_auc_score(y, sub[score]), abs=1e-12)
            assert e["n"] == len(sub) and e["n_pass"] == y.sum() and e["n_fail"] == (~y).sum()
            assert e["n_tasks"] == sub["task_id"].nunique()
            assert e["ci_low"] <= e["auc"] <= e["ci_high"]
            assert e["n_zero_evidence"] == arm_rows["zero_evidence"].sum() > 0
            assert e["n_dropped"] == e["n_zero_evidence_excluded"] == (e["n_zero_evidence"] if score == "gcpc_plain" else 0)
            assert e["n_filled"] == 0
        sub = arm_rows[~arm_rows["zero_evidence"]]
        for cond, e in res["by_condition"][arm]["gcpc_plain"].items():
            cs = sub[sub["condition"] == cond]
            assert e["auc"] == pytest.approx(roc_auc_score(cs["outcome"].eq("PASS"), cs["gcpc_plain"]))
    listed = {(r["trajectory_id"], r["arm"]) for r in res["zero_evidence_excluded"]}
    assert listed == set(zip(kept.loc[kept["zero_evidence"], "trajectory_id"], kept.loc[kept["zero_evidence"], "arm"]))
    assert all(r["reason"] for r in res["zero_evidence_excluded"])


def test_rq1_zero_evidence_scored_variant_fills_plain_only():
    """The named variant `zero_evidence_score: 0.0` scores undefined plain GCPC 0 and keeps every row."""
    m = make_metrics(seed=6)
    kept = m[m["outcome"].isin(["PASS", "FAIL"]) & (m["arm"] == "gcpc")]
    res = rq1(m, {**FAST, "zero_evidence_score": 0.0})
    e = res["arms"]["gcpc"]["gcpc_plain"]
    assert e["n"] == len(kept) and e["n_filled"] == kept["gcpc_plain"].isna().sum() > 0
    assert e["auc"] == pytest.approx(roc_auc_score(kept["outcome"].eq("PASS"), kept["gcpc_plain"].fillna(0.0)))
    assert res["zero_evidence_excluded"] == []


def test_rq1_zero_evidence_fill_and_drop():
    m = make_metrics(seed=1)
    kept = m[m["outcome"].isin(["PASS", "FAIL"]) & (m["arm"] == "gcpc")]
    filled = rq1(m, {**FAST, "zero_evidence_score": 0.5})["arms"]["gcpc"]["gcpc_plain"]
    assert filled["auc"] == pytest.approx(roc_auc_score(kept["outcome"].eq("PASS"), kept["gcpc_plain"].fillna(0.5)))
    dropped = rq1(m, {**FAST, "zero_evidence_score": None})["arms"]["gcpc"]["gcpc_plain"]
    k2 = kept.dropna(subset=["gcpc_plain"])
    assert dropped["n"] == len(k2) and dropped["n_dropped"] == kept["gcpc_plain"].isna().sum()
    assert dropped["auc"] == pytest.approx(roc_auc_score(k2["outcome"].eq("PASS"), k2["gcpc_plain"]))


def test_rq1_json_has_no_nan_and_is_deterministic():
    m = make_metrics(seed=2)
    # a condition with a single class must be skipped with a reason, not produce NaN
    m.loc[m["condition"] == "with_skills", "outcome"] = "PASS"
    res = rq1(m, FAST)
    text = json.dumps(res, allow_nan=False, sort_keys=True)
    _assert_no_nan(res)
    e = res["by_condition"]["gcpc"]["gcpc_plain"]["with_skills"]
    assert e["auc"] is None and "single class" in e["skipped"]
    assert json.dumps(rq1(m, FAST), allow_nan=False, sort_keys=True) == text
    compact = compact_metrics(res)
    json.dumps(compact, allow_nan=False)
    assert set(compact["gcpc"]["gcpc_outcome"]) == {"auc", "ci_low", "ci_high"}
    assert compact["n_trajectories"] == res["n_trajectories"]


def test_rq1_deltas():
    m = make_metrics(seed=3)
    res = rq1(m, FAST)
    within = {(d["arm"], d["a"], d["b"]): d for d in res["deltas"]["within_arm"]}
    d = within[("gcpc", "gcpc_outcome", "gcpc_plain")]
    arm = res["arms"]["gcpc"]
    # paired on the rows both scores have: the outcome-using AUC there leaves out the zero-evidence rows it keeps alone
    shared = m[m["outcome"].isin(["PASS", "FAIL"]) & (m["arm"] == "gcpc") & ~m["zero_evidence"]]
    assert d["n"] == arm["gcpc_plain"]["n"] == len(shared) < arm["gcpc_outcome"]["n"]
    assert d["delta"] == pytest.approx(roc_auc_score(shared["outcome"].eq("PASS"), shared["gcpc_outcome"]) - arm["gcpc_plain"]["auc"])
    between = res["deltas"]["between_arms"]
    assert {(b["score"], b["a"], b["b"]) for b in between} == {
        ("gcpc_plain", "baseline", "gcpc"), ("gcpc_outcome", "baseline", "gcpc")}


def test_tables_and_roc_points():
    m = make_metrics(seed=4)
    res = rq1(m, FAST)
    md = rq1_table_markdown(res)
    assert md.count("\n| gcpc") == 2 and "95% CI" in md
    tex = rq1_table_latex(res)
    assert r"gcpc\_plain" in tex and tex.strip().endswith(r"\end{tabular}")
    roc = roc_points(m, FAST)
    assert list(roc.columns) == ["arm", "score", "curve", "fpr", "tpr", "threshold"]
    assert set(zip(roc["arm"], roc["score"])) == {(a, s) for a in ("gcpc", "baseline")
                                                   for s in ("gcpc_plain", "gcpc_outcome")}
    # one named series per arm x score (the DVC plot colours by `curve`), in words with n
    assert roc.groupby(["arm", "score"])["curve"].nunique().eq(1).all() and roc["curve"].nunique() == 4
    assert any(c.startswith("gcpc (log only), n=") for c in roc["curve"])  # no arm_kind column: arms by id
    kinds = roc_points(m.assign(arm_kind=m["arm"].map({"gcpc": "checklist", "baseline": "holistic"})), FAST)
    assert {c.split(", n=")[0] for c in kinds["curve"]} == {"GCPC (log only)", "GCPC + official outcome", "Holistic 0–10",
                                                           "Holistic 0–10 + official outcome"}
    for _, g in roc.groupby(["arm", "score"]):
        assert g["fpr"].iloc[0] == 0 and g["tpr"].iloc[-1] == 1
        assert g["fpr"].is_monotonic_increasing


def test_missing_column_is_reported():
    with pytest.raises(ValueError, match="gcpc_plain"):
        rq1(make_metrics().drop(columns=["gcpc_plain"]), FAST)


def test_analysis_stage_writes_outputs(tmp_path, monkeypatch):
    from gcpc.analysis import __main__ as stage

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data/processed/finalize").mkdir(parents=True)
    make_metrics(seed=5).to_parquet("data/processed/finalize/metrics.parquet")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"analysis": {
        "scores": ["gcpc_plain", "gcpc_outcome"], "bootstrap": {"n_resamples": 40, "seed": 1, "ci": 0.9},
        "zero_evidence_score": 0.0}}))
    monkeypatch.setattr("sys.argv", ["gcpc.analysis"])
    assert stage.main() == 0
    full = json.loads((tmp_path / "data/processed/analyze/rq1.json").read_text())
    assert full["config"]["bootstrap"] == {"n_resamples": 40, "seed": 1, "ci": 0.9}
    compact = json.loads((tmp_path / "metrics/rq1.json").read_text())
    assert compact["gcpc"]["gcpc_plain"]["auc"] == full["arms"]["gcpc"]["gcpc_plain"]["auc"]
    for p in ("figures/rq1_table.md", "figures/rq1_table.tex", "data/processed/analyze/roc.csv"):
        assert (tmp_path / p).stat().st_size > 0
    first = {p: (tmp_path / p).read_bytes() for p in ("metrics/rq1.json", "data/processed/analyze/roc.csv")}
    assert stage.main() == 0
    assert first == {p: (tmp_path / p).read_bytes() for p in first}


def test_tables_name_the_log_only_score_for_what_it_holds_in_each_arm_kind():
    """A floor's or Holistic's `gcpc_plain` column is not plain GCPC: the Score cell says what it is (issue 28)."""
    from gcpc.analysis.rq1 import _table_rows, score_name

    entry = {"auc": 0.6, "ci_low": 0.5, "ci_high": 0.7, "n": 10, "n_pass": 5, "n_fail": 5, "n_tasks": 2}
    result = {"config": {"scores": ["gcpc_plain", "gcpc_outcome"], "bootstrap": {"ci": 0.95}},
              "arm_kinds": {"gcpc": "checklist", "floor_steps": "floor", "holistic": "holistic", "tick": "tick"},
              "arms": {a: {"gcpc_plain": entry} for a in ("gcpc", "floor_steps", "holistic", "tick")}}
    cells = {row[0]: row[1] for row in _table_rows(result)[0]}
    assert cells == {"floor_steps": "floor feature", "gcpc": "gcpc_plain", "holistic": "0–10 / 10", "tick": "YES share"}
    assert score_name(result, "gcpc", "gcpc_outcome") == "gcpc_outcome"
    assert score_name({}, "unknown_arm", "gcpc_plain") == "gcpc_plain"
