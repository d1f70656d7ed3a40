"""Thresholds on score differences compare exact ratios (issue 23, item 3): 0.8 − 0.7 is 0.10, not
0.10000000000000009, so RQ3's "Δ > +0.10" share, the noise floor's shares, Wilcoxon's ties and RQ5's
per-task ties do not depend on which two scores happened to meet."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from gcpc.analysis.rq3 import noise_floor, rq3
from gcpc.analysis.rq5 import pair_diagnosis, same_task_pairs
from gcpc.analysis.common import resolve_analysis
from gcpc.analysis.stats import exact_differences, exact_mean, signed_rank_test

CFG = {"match_on": ["benchmark", "task_id", "harness", "model"], "ambiguous": "exclude", "threshold": 0.10}
# (with, without): every Δ is exactly ±0.10, which is not beyond the ±0.10 threshold
SCORES = [(0.8, 0.7), (0.5, 0.4), (0.3, 0.2), (0.7, 0.6), (0.2, 0.3), (0.6, 0.7), (0.9, 0.8), (0.1, 0.2)]


def test_exact_differences_of_ratios():
    a = np.array([0.8, 0.5, 2 / 3, 0.3, np.nan])
    b = np.array([0.7, 0.4, 1 / 6, 0.1 + 0.2, 0.1])
    d = exact_differences(a, b)
    assert d[0] == d[1] == 0.1 and not (d[:2] > 0.10).any()
    assert d[2] == 0.5 and d[3] == 0.0 and np.isnan(d[4])
    assert 0.8 - 0.7 > 0.10  # the float subtraction the comparison used before
    assert exact_mean([0.1, 0.2, -0.3]) == 0.0 and np.mean([0.1, 0.2, -0.3]) != 0.0
    big = np.array([Fraction(k, 997) for k in range(998)], dtype=object).astype(float)
    assert all(Fraction(x) == Fraction(float(Fraction(k, 997) - Fraction(1, 997)))
               for k, x in enumerate(exact_differences(big, np.full(998, 1 / 997))))


def _frames():
    meta, metrics = [], []
    for t, (sw, so) in enumerate(SCORES):
        for cond, v, out in (("with_skills", sw, "PASS"), ("without_skills", so, "FAIL")):
            tid = f"b/{cond}/t{t}"
            meta.append({"trajectory_id": tid, "benchmark": "b", "task_id": f"t{t}", "harness": "cc", "model": "m",
                         "condition": cond, "outcome": out, "trial": f"t{t}__{cond}"})
            metrics.append({"trajectory_id": tid, "benchmark": "b", "task_id": f"t{t}", "outcome": out, "arm": "gcpc",
                            "gcpc_plain": v, "gcpc_outcome": v, "zero_evidence": False, "provider": "heuristic",
                            "judge_model": "h"})
    return pd.DataFrame(metrics), pd.DataFrame(meta)


def test_rq3_shares_count_a_delta_of_exactly_the_threshold_as_not_beyond_it():
    m, meta = _frames()
    res = rq3(m, meta, {"rq3": CFG, "bootstrap": {"n_resamples": 10}})
    e = res["arms"]["gcpc"]["gcpc_plain"]["all"]
    assert e["n"] == len(SCORES)
    assert e["share_above"] == 0.0 and e["share_below"] == 0.0  # before: 0.8 − 0.7 and 0.9 − 0.8 counted above
    # every |Δ| is 0.10: one tie group for Wilcoxon, as scipy ranks the exact values
    from scipy.stats import wilcoxon

    exact = [1 if sw > so else -1 for sw, so in SCORES]
    assert e["wilcoxon"]["p_value"] == pytest.approx(wilcoxon(np.array(exact) / 10).pvalue)
    assert e["wilcoxon"]["p_value"] == signed_rank_test(np.array(exact, dtype=float) / 10)["p_value"]


def test_noise_floor_shares_are_exact():
    rows = []
    for i, (a, b) in enumerate(SCORES):
        for p, v in ((1, a), (2, b)):
            rows.append({"trajectory_id": f"x{i}", "task_id": "t", "role": "repeat", "pass": p, "status": "ok", "gcpc_plain": v,
                         "gcpc_outcome": v, "zero_evidence": False})
    nf = noise_floor(pd.DataFrame(rows), {"scores": ["gcpc_plain"], "zero_evidence_score": None}, 0.10)["scores"]["gcpc_plain"]
    assert nf["share_above"] == 0.0 and nf["share_below"] == 0.0 and nf["share_abs_above"] == 0.0
    assert nf["mean_abs"] == pytest.approx(0.1)


def test_rq5_pairs_that_cancel_are_a_tie_per_task():
    # one task, every PASS x FAIL pair: Δ = 0.8 − 0.7 and 0.4 − 0.5 cancel exactly (a float mean is 5.6e−17 > 0)
    v = pd.DataFrame({"trajectory_id": list("abcd"), "task_id": ["t"] * 4, "outcome": ["PASS", "PASS", "FAIL", "FAIL"],
                      "value": [0.8, 0.4, 0.7, 0.5]})
    pairs = same_task_pairs(v)
    assert sorted(pairs["delta"].tolist()) == [-0.3, -0.1, 0.1, 0.3]
    m = pd.DataFrame([{"trajectory_id": t, "benchmark": "terminal-bench-2", "task_id": "t", "outcome": o, "arm": "gcpc",
                       "gcpc_plain": x, "gcpc_outcome": x, "zero_evidence": False, "provider": "p", "judge_model": "m"}
                      for t, o, x in zip(v["trajectory_id"], v["outcome"], v["value"], strict=True)])
    cfg = {**resolve_analysis({"rq5": {"pairs_per_task": None}}), "scores": ["gcpc_plain"]}
    e = pair_diagnosis(m, cfg)["benchmarks"]["terminal-bench-2"]["arms"]["gcpc"]["gcpc_plain"]
    assert e["by_task"]["tied"] == 1 and e["by_task"]["higher"] == 0
