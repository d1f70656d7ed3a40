"""RQ3: pairing rules, exclusions with reasons, Δ by outcome transition, Wilcoxon, noise floor."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from gcpc.analysis.rq3 import TRANSITIONS, delta_summary, form_pairs, noise_floor, read_pairs, rq3, table_latex, table_markdown

CFG = {"match_on": ["benchmark", "task_id", "harness", "model"], "ambiguous": "exclude", "threshold": 0.10}


def _meta(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([{"trajectory_id": f"b/{job}/{trial}", "benchmark": "b", "task_id": task, "harness": "cc", "model": model,
                          "condition": cond, "outcome": out, "trial": trial, "source_path": f"jobs/{job}/{trial}"}
                         for job, trial, task, model, cond, out in rows])


BASE = [("with", "t1__a", "t1", "m1", "with_skills", "PASS"), ("without", "t1__b", "t1", "m1", "without_skills", "FAIL"),
        ("with", "t2__a", "t2", "m1", "with_skills", "FAIL"), ("without", "t2__b", "t2", "m1", "without_skills", "FAIL"),
        ("with", "t3__a", "t3", "m1", "with_skills", "PASS"), ("without", "t3__b", "t3", "m2", "without_skills", "PASS"),
        ("with", "t4__a", "t4", "m1", "with_skills", "other"), ("without", "t4__b", "t4", "m1", "without_skills", "PASS"),
        ("selfgen", "t5__a", "t5", "m1", "self_generated", "PASS"), ("without", "t5__b", "t5", "m1", "without_skills", "FAIL")]


def test_automatic_pairing_and_exclusions():
    pairs, excluded = form_pairs(_meta(BASE), CFG, None)
    assert sorted(zip(pairs["with_id"], pairs["without_id"], pairs["transition"])) == [
        ("b/with/t1__a", "b/without/t1__b", "FAIL→PASS"), ("b/with/t2__a", "b/without/t2__b", "FAIL→FAIL")]
    reasons = " | ".join(e["reason"] for e in excluded)
    assert "self-generated" in reasons and "non-binary outcome (with: other, without: PASS)" in reasons
    # t3 differs in model: no pair and no exclusion (nothing to match), as documented


def test_ambiguous_groups_exclude_or_pair_in_trial_order():
    rows = BASE[:2] + [("with", "t1__c", "t1", "m1", "with_skills", "FAIL"), ("without", "t1__d", "t1", "m1", "without_skills", "PASS"),
                       ("without", "t1__e", "t1", "m1", "without_skills", "PASS")]
    pairs, excluded = form_pairs(_meta(rows), CFG, None)
    assert pairs.empty and "ambiguous: 2 with-skills and 3 without-skills" in excluded[0]["reason"]
    pairs, excluded = form_pairs(_meta(rows), {**CFG, "ambiguous": "order"}, None)
    assert list(zip(pairs["with_id"], pairs["without_id"])) == [("b/with/t1__a", "b/without/t1__b"), ("b/with/t1__c", "b/without/t1__d")]
    assert excluded == [{"trajectory_id": "b/without/t1__e", "group": {"benchmark": "b", "task_id": "t1", "harness": "cc", "model": "m1"},
                         "reason": "no partner left in trial order"}]


def test_explicit_pairs_are_checked():
    explicit = [("jobs/with/t1__a", "jobs/without/t1__b"),    # fine, given as paths
                ("b/without/t2__b", "b/with/t2__a"),          # fine, ids in the other order
                ("jobs/with/t3__a", "jobs/without/t3__b"),    # differs in model
                ("jobs/with/t1__a", "jobs/without/t2__b"),    # differs in task
                ("jobs/with/ghost", "jobs/without/t1__b"),    # excluded at ingest
                ("jobs/selfgen/t5__a", "jobs/without/t5__b"),  # self-generated
                ("jobs/with/t4__a", "jobs/without/t4__b")]    # non-binary outcome
    pairs, excluded = form_pairs(_meta(BASE), CFG, explicit, {"jobs/with/ghost": "duplicate: same log as x"})
    assert list(zip(pairs["with_id"], pairs["without_id"])) == [("b/with/t1__a", "b/without/t1__b"), ("b/with/t2__a", "b/without/t2__b")]
    reasons = [e["reason"] for e in excluded]
    assert reasons == ["differs in model", "differs in task_id", "'jobs/with/ghost' excluded at ingest: duplicate: same log as x",
                       "self-generated skills are excluded", "non-binary outcome (with: other, without: PASS)"]
    _, excluded = form_pairs(_meta(BASE), CFG, [explicit[0], ("jobs/with/t1__a", "jobs/without/t1__b")])
    assert excluded[0]["reason"] == "a trajectory of this pair is already in an earlier pair"


def test_read_pairs_formats(tmp_path):
    (tmp_path / "roles.json").write_text(json.dumps({"matched_pairs": [["x/a", "x/b"]]}))
    (tmp_path / "manifest.json").write_text(json.dumps({"pairs": [{"with_skills": "w", "without_skills": "wo", "pair_id": "A"}]}))
    (tmp_path / "pairs.csv").write_text("with_skills,without_skills\nw1,wo1\n")
    (tmp_path / "bad.json").write_text(json.dumps({"other": []}))
    assert read_pairs(tmp_path / "roles.json") == [("x/a", "x/b")]
    assert read_pairs(tmp_path / "manifest.json") == [("w", "wo")]
    assert read_pairs(tmp_path / "pairs.csv") == [("w1", "wo1")]
    with pytest.raises(ValueError, match="matched_pairs"):
        read_pairs(tmp_path / "bad.json")


def test_delta_summary_against_numpy_and_scipy():
    d = np.array([0.3, 0.15, -0.2, 0.05, 0.0, 0.4, -0.12, 0.25])
    s = delta_summary(d, 0.10)
    assert s["median"] == pytest.approx(np.median(d)) and s["mean"] == pytest.approx(d.mean())
    assert s["share_above"] == pytest.approx(4 / 8) and s["share_below"] == pytest.approx(2 / 8)
    assert s["wilcoxon"]["p_value"] == pytest.approx(wilcoxon(d[d != 0]).pvalue)


def _metrics_for(meta: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    m = meta.copy()
    m["arm"] = "gcpc"
    m["gcpc_plain"] = np.round(rng.random(len(m)), 2)
    m["gcpc_outcome"] = np.round(rng.random(len(m)), 2)
    m["zero_evidence"] = False
    m["provider"], m["judge_model"] = "heuristic", "h"
    return m


def test_rq3_deltas_by_transition_and_noise_floor():
    rows = []
    outs = [("PASS", "PASS"), ("PASS", "FAIL"), ("FAIL", "PASS"), ("FAIL", "FAIL")]
    for t in range(12):
        ow, owo = outs[t % 4]
        rows += [("with", f"t{t}__a", f"t{t}", "m", "with_skills", ow), ("without", f"t{t}__b", f"t{t}", "m", "without_skills", owo)]
    meta = _meta(rows)
    m = _metrics_for(meta)
    m.loc[0, "gcpc_plain"] = np.nan
    m.loc[0, "zero_evidence"] = True  # zero-evidence: scored 0.0 in the named variant
    scores = pd.DataFrame([{"trajectory_id": tid, "task_id": "t", "role": "repeat", "pass": p, "status": "ok",
                            "gcpc_plain": v + (0.2 if (p == 2 and i % 3 == 0) else 0.0), "gcpc_outcome": v, "zero_evidence": False}
                           for i, (tid, v) in enumerate(zip(m["trajectory_id"], m["gcpc_outcome"], strict=True)) for p in (1, 2)])
    res = rq3(m, meta, {"rq3": CFG, "bootstrap": {"n_resamples": 10}, "zero_evidence_score": 0.0}, rejudge_scores=scores,
              rejudge_summary={"arm": "gcpc", "primary_judge": "x/y", "deterministic_primary": False})
    assert res["pairing"]["n_pairs"] == 12 and res["transition_counts"] == {t: 3 for t in TRANSITIONS}
    vals = m.set_index("trajectory_id")["gcpc_plain"].fillna(0.0)
    for t in TRANSITIONS:
        ow_wo = t.split("→")  # without -> with
        d = [vals[f"b/with/t{i}__a"] - vals[f"b/without/t{i}__b"] for i in range(12) if (outs[i % 4][1], outs[i % 4][0]) == tuple(ow_wo)]
        e = res["arms"]["gcpc"]["gcpc_plain"]["transitions"][t]
        assert e["n"] == 3 and e["median"] == pytest.approx(np.median(d))
    nf = res["noise_floor"]["scores"]["gcpc_plain"]
    assert nf["n"] == 24 and nf["share_above"] == pytest.approx(8 / 24) and nf["share_below"] == 0.0
    assert res["noise_floor"]["scores"]["gcpc_outcome"]["abs_p95"] == 0.0
    md = table_markdown(res)
    assert "FAIL→PASS" in md and "retest noise floor (gcpc)" in md and "(automatic pairing" in md
    assert nf["mean_abs"] == pytest.approx(8 * 0.2 / 24)  # the paper's noise floor: mean |Δ| between passes
    # default (paper §4): the pair with the zero-evidence side is excluded and counted
    res0 = rq3(m, meta, {"rq3": CFG, "bootstrap": {"n_resamples": 10}}, rejudge_scores=scores,
               rejudge_summary={"arm": "gcpc", "primary_judge": "x/y", "deterministic_primary": False})
    e0 = res0["arms"]["gcpc"]["gcpc_plain"]
    assert e0["all"]["n"] == 11 and e0["all"]["n_excluded"] == 1 and e0["n_unscored_pairs"] == 1
    assert table_latex(res).count(r"\\") >= 10


def test_noise_floor_unavailable_and_deterministic_note():
    assert noise_floor(None, {"scores": ["gcpc_plain"], "zero_evidence_score": 0.0}, 0.1)["available"] is False
    scores = pd.DataFrame([{"trajectory_id": "a", "role": "repeat", "pass": p, "status": "ok", "gcpc_plain": 0.5, "zero_evidence": False}
                           for p in (1, 2, 3)])
    nf = noise_floor(scores, {"scores": ["gcpc_plain"], "zero_evidence_score": 0.0}, 0.1, {"deterministic_primary": True})
    assert nf["scores"]["gcpc_plain"]["n"] == 3 and "by construction" in nf["note"]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ambiguous", ["order", "exclude"])
def test_vectorized_automatic_pairing_equals_group_by_group(seed, ambiguous):
    """The one-sort pairing gives the same pairs and exclusions, in the same order, as the group loop."""
    from gcpc.analysis.rq3 import WITH, WITHOUT, _automatic_pairs, _automatic_pairs_by_group

    rng = np.random.default_rng(seed)
    n = 400
    meta = pd.DataFrame({
        "trajectory_id": [f"tr{i:04d}" for i in rng.permutation(n)],
        "benchmark": rng.choice(["sb", "tb1"], n), "task_id": [f"t{k}" for k in rng.integers(0, 25, n)],
        "harness": "h", "model": rng.choice(["m1", "m2", None], n),
        "condition": rng.choice([WITH, WITHOUT], n),
        "trial": [None if rng.random() < 0.1 else f"r{k}" for k in rng.integers(0, 4, n)],
    })
    keys = ["benchmark", "task_id", "harness", "model"]
    fast = _automatic_pairs(meta, keys, ambiguous)
    slow = _automatic_pairs_by_group(meta, keys, ambiguous)
    assert fast[0] == slow[0] and len(fast[0]) > 3
    assert json.dumps(fast[1], default=str) == json.dumps(slow[1], default=str) and fast[1]


def test_form_pairs_rejects_duplicate_trajectory_ids():
    meta = pd.DataFrame({"trajectory_id": ["a", "a"], "benchmark": "b", "task_id": "t", "harness": "h", "model": "m",
                         "condition": ["with_skills", "without_skills"], "outcome": "PASS", "trial": "r"})
    with pytest.raises(ValueError, match="appears more than once"):
        form_pairs(meta, {"match_on": ["benchmark", "task_id", "harness", "model"], "ambiguous": "order"}, None)
