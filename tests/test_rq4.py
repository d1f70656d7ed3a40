"""RQ4: the endpoint x propagation 2 x 2 recomputed with gcpc.scoring.metrics, the Abstain recode,
schema falsification input, and the evidence-replacement / idle-agent control helpers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from gcpc.analysis.controls import evidence_replacements, idle_trajectories, perturb_quote, replace_in_events
from gcpc.analysis.rq4 import item_labels_by_trajectory, recomputed_scores, rq4, schema_falsification, table_latex, table_markdown
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.models import ItemLabel, Judgment
from gcpc.llm.schemas import Evidence
from gcpc.scoring.metrics import score_trajectory

FAST = {"bootstrap": {"n_resamples": 40, "seed": 0, "ci": 0.95}}


def _tables(seed: int = 0, n_tasks: int = 6, per_task: int = 6):
    """labels.parquet- and metrics.parquet-shaped frames built with the scoring functions themselves."""
    rng = np.random.default_rng(seed)
    label_rows, metric_rows = [], []
    for t in range(n_tasks):
        for k in range(per_task):
            tid = f"t{t}-{k}"
            outcome = "PASS" if k % 2 == 0 else "FAIL"
            labels = []
            for i in range(5):
                route = ["assertion", "assertion", "generated", "judge", "assertion"][i]
                lab = str(rng.choice(["Yes", "No", "Abstain"], p=[0.5, 0.25, 0.25] if outcome == "PASS" else [0.3, 0.4, 0.3]))
                if t == 0 and k == 1:
                    lab = "Abstain"  # a zero-evidence trajectory
                labels.append(ItemLabel(item_id=f"i{i}", route=route, label=lab))
                label_rows.append({"trajectory_id": tid, "arm": "gcpc", "item_id": f"i{i}", "route": route, "label_plain": lab})
            label_rows.append({"trajectory_id": tid, "arm": "gcpc", "item_id": "endpoint", "route": "endpoint", "label_plain": None})
            s = score_trajectory(labels, outcome)
            metric_rows.append({"trajectory_id": tid, "task_id": f"task{t}", "outcome": outcome, "arm": "gcpc", "condition": "c",
                                "provider": "heuristic", "judge_model": "h", "gcpc_plain": s.gcpc_plain, "gcpc_outcome": s.gcpc_outcome,
                                "zero_evidence": s.zero_evidence})
    return pd.DataFrame(metric_rows).astype({"gcpc_plain": float}), pd.DataFrame(label_rows)


def test_two_by_two_corners_reproduce_finalize_scores():
    metrics, labels = _tables()
    items = item_labels_by_trajectory(labels, "gcpc")
    outcomes = dict(zip(metrics.trajectory_id, metrics.outcome, strict=True))
    on_on = recomputed_scores(items, outcomes, endpoint=True, propagation=True)
    off_off = recomputed_scores(items, outcomes, endpoint=False, propagation=False)
    m = metrics.set_index("trajectory_id")
    for tid in m.index:
        assert on_on[tid] == pytest.approx(m.at[tid, "gcpc_outcome"])
        if np.isnan(m.at[tid, "gcpc_plain"]):
            assert off_off[tid] is None
        else:
            assert off_off[tid] == pytest.approx(m.at[tid, "gcpc_plain"])


def test_hand_case_of_each_cell_and_abstain_recode():
    labs = [ItemLabel(item_id="a", route="assertion", label="No"), ItemLabel(item_id="b", route="generated", label="Yes"),
            ItemLabel(item_id="c", route="judge", label="Abstain")]
    items, outcomes = {"x": labs}, {"x": "PASS"}
    assert recomputed_scores(items, outcomes, endpoint=True, propagation=True)["x"] == pytest.approx(3 / 3)   # a->Yes, +endpoint Yes
    assert recomputed_scores(items, outcomes, endpoint=True, propagation=False)["x"] == pytest.approx(2 / 3)  # a No, b Yes, endpoint Yes
    assert recomputed_scores(items, outcomes, endpoint=False, propagation=True)["x"] == pytest.approx(2 / 2)
    assert recomputed_scores(items, outcomes, endpoint=False, propagation=False)["x"] == pytest.approx(1 / 2)
    assert recomputed_scores(items, outcomes, endpoint=False, propagation=False, abstain_as_no=True,
                             outcome_step=False)["x"] == pytest.approx(1 / 3)


def test_rq4_panels(tmp_path):
    metrics, labels = _tables(seed=1)
    rq1_result = {"arms": {"gcpc": {"gcpc_plain": {"auc": 0.6, "ci_low": 0.5, "ci_high": 0.7, "n": 36, "n_pass": 18, "n_fail": 18, "n_tasks": 6}}}}
    audit = tmp_path / "transfer.json"
    audit.write_text(json.dumps({"provider": "heuristic", "benchmarks": [{"label": "SB", "audit": {"provider": "p", "model": "m", "schemes": {
        "full": {"coverage": 0.8, "n_requirements": 10}, "irrelevant": {"coverage": 0.0, "n_requirements": 10}}}}]}))
    controls = {"judge": "heuristic/h", "scope": "all_events", "idle_outcome": "FAIL", "arms": {"gcpc": {
        "evidence_replacement": {"n": 10, "share_no": 0.3, "share_no_or_abstain": 0.5, "n_skipped": 1},
        "idle": {"n_ok": 6, "n_zero_evidence": 6, "n_with_yes": 0, "mean_plain": None, "mean_outcome": 0.0, "max_outcome": 0.0}}}}
    # the named variant: zero-evidence scored 0 (the default exclusion is tested below)
    res = rq4(metrics, labels, rq1_result, {**FAST, "zero_evidence_score": 0.0}, scoring={}, controls=controls,
              schema=schema_falsification([tmp_path / "missing.json", audit]))
    cells = res["panel_b"]["gcpc"]
    assert len(cells) == 4
    on = cells["endpoint on · propagation on"]
    m = metrics.assign(v=metrics.gcpc_outcome, y=metrics.outcome.eq("PASS"))
    assert on["separation"] == pytest.approx(m.loc[m.y, "v"].mean() - m.loc[~m.y, "v"].mean())
    assert on["auc"] == pytest.approx(roc_auc_score(m.y, m.v))
    assert on["ci_low"] <= on["separation"] <= on["ci_high"]
    off = cells["endpoint off · propagation off"]
    assert off["n_undefined"] == 1  # the all-Abstain log, filled with 0.0
    rec = res["panel_c"]["abstain_as_no"]["gcpc"]["plain"]["abstain_as_no"]["auc"]
    yes = labels[labels.route != "endpoint"].groupby("trajectory_id")["label_plain"].apply(lambda s: (s == "Yes").mean())
    assert rec["auc"] == pytest.approx(roc_auc_score(metrics.set_index("trajectory_id").outcome.eq("PASS").loc[yes.index], yes))
    assert [r["scheme"] for r in res["panel_c"]["schema_falsification"]["rows"]] == ["full", "irrelevant"]
    assert res["panel_c"]["schema_falsification"]["rows"][0]["benchmark"] == "SB"
    md = table_markdown(res)
    assert "evidence replaced: share → No" in md and "30.0%" in md and "schema: irrelevant" in md
    assert table_latex(res).strip().endswith(r"\end{tabular}")
    res2 = rq4(metrics, labels, rq1_result, FAST, controls=None, schema=schema_falsification([tmp_path / "missing.json"]))
    assert res2["panel_c"]["evidence_replacement"]["available"] is False
    assert "no synthesis category-audit output found" in res2["panel_c"]["schema_falsification"]["reason"]


@pytest.mark.parametrize("quote, expected, rule", [
    ("total_revenue: 12345.67", "total_revenue: 12345.68", "number"),
    ("rows=9", "rows=8", "number"),
    ("Restart=on-failure enabled", "Restart=on-success disabled", "boolean"),
    ("status: OK", "status: FAILED", "boolean"),
    ('wrote "summary"', 'wrote "summarz"', "literal"),
    ("/root/output/report.csv", "/root/output/reporu.csv", "token"),
])
def test_perturb_quote_rules(quote, expected, rule):
    assert perturb_quote(quote) == (expected, rule)
    assert perturb_quote("x -") is None


def _event(i: int, kind: EventKind, text: str) -> Event:
    return Event(index=i, kind=kind, text=text, source=SourceRef(path="log", line=i + 1))


def _traj(events: list[Event], tid: str = "b/j/t__1") -> Trajectory:
    return Trajectory(trajectory_id=tid, benchmark="b", task_id="t", harness="h", model="m", condition="without_skills",
                      source="j", trial="t__1", outcome=Outcome(status="PASS", reward=1.0), events=events, source_path="jobs/j/t__1")


def test_replace_in_events_scope_and_whitespace():
    events = [_event(0, EventKind.AGENT_MESSAGE, "total: 42"), _event(1, EventKind.TOOL_OUTPUT, "total:   42\nok"),
              _event(2, EventKind.FILE_CONTENT, "total: 42")]
    out, n = replace_in_events(events, "total: 42", "total: 43", {1}, "all_events")
    assert n == 2 and out[0].text == "total: 42" and out[1].text == "total: 43\nok" and out[2].text == "total: 43"
    out, n = replace_in_events(events, "total: 42", "total: 43", {1}, "cited_event")
    assert n == 1 and out[2].text == "total: 42"


def test_evidence_replacements_and_idle_logs():
    events = [_event(0, EventKind.SYSTEM, "init"), _event(1, EventKind.AGENT_MESSAGE, "start"),
              _event(2, EventKind.TOOL_CALL, "cat out.txt"), _event(3, EventKind.TOOL_OUTPUT, "count=17")]
    traj = _traj(events)
    j = Judgment(trajectory_id=traj.trajectory_id, benchmark="b", task_id="t", arm="gcpc", checklist_hash="h", provider="p",
                 model="m", request_key="k", status="ok", evidence_gate=True, labels=[
                     ItemLabel(item_id="i1", route="generated", label="Yes", evidence=[Evidence(event_index=3, quote="count=17")]),
                     ItemLabel(item_id="i2", route="generated", label="Yes"),
                     ItemLabel(item_id="i3", route="judge", label="No", evidence=[Evidence(event_index=3, quote="count=17")])])
    todo, skipped = evidence_replacements([j], {traj.trajectory_id: traj}, "all_events", None, 0)
    assert len(todo) == 1 and skipped[0]["item_id"] == "i2" and "no quoted evidence" in skipped[0]["skipped"]
    perturbed, rec = todo[0]
    assert perturbed.trajectory_id == "b/j/t__1#replace:i1" and perturbed.events[3].text == "count=18"
    assert rec["rule"] == "number" and rec["n_replaced"] == 1 and traj.events[3].text == "count=17"
    capped = evidence_replacements([j, j], {traj.trajectory_id: traj}, "all_events", 1, 0)
    # max_items caps the Yes items considered (4 here); the 3 left out are listed with their reason
    assert len(capped[0]) + len([s for s in capped[1] if not s["skipped"].startswith("not sampled")]) == 1
    assert [s["skipped"] for s in capped[1] if s["skipped"].startswith("not sampled")] == ["not sampled (max_items=1, seed=0)"] * 3
    idle = idle_trajectories([traj])
    assert [e.kind for e in idle[0].events] == [EventKind.SYSTEM, EventKind.AGENT_MESSAGE]
    assert idle[0].outcome.status == "FAIL" and idle[0].trajectory_id == "idle/b/t"


def test_schema_falsification_reads_the_audit_stage_coverage(tmp_path):
    cov = tmp_path / "coverage.json"
    cov.write_text(json.dumps({"provider": "heuristic", "model": "h1", "schemes": {
        "full": {"coverage": 0.82, "n_requirements": 50}, "reduced": {"coverage": 0.68, "n_requirements": 50},
        "irrelevant": {"coverage": 0.01, "n_requirements": 50}, "permuted": {"coverage": 0.82, "n_requirements": 50}}}))
    res = schema_falsification([cov, tmp_path / "transfer.json"], "demo")
    assert res["available"] and res["source"] == str(cov)
    assert [(r["benchmark"], r["scheme"], r["coverage"], r["provider"], r["model"]) for r in res["rows"]] == [
        ("demo", "full", 0.82, "heuristic", "h1"), ("demo", "reduced", 0.68, "heuristic", "h1"),
        ("demo", "irrelevant", 0.01, "heuristic", "h1"), ("demo", "permuted", 0.82, "heuristic", "h1")]
    (tmp_path / "broken.json").write_text("{")
    assert "invalid JSON" in schema_falsification([tmp_path / "broken.json"])["reason"]
    (tmp_path / "other.json").write_text(json.dumps({"x": 1}))
    assert "no 'schemes'" in schema_falsification([tmp_path / "other.json"])["reason"]


def test_rq4_panel_b_excludes_zero_evidence_from_the_outcome_free_cell_only():
    """§4.1: the exclusion is for outcome-free analyses; a cell whose score reads the outcome (endpoint or
    propagation on) keeps the zero-evidence log, to which the outcome step gives a defined score (issue 35,
    item 1; before, it left every cell)."""
    metrics, labels = _tables(seed=1)
    rq1_result = {"arms": {}}
    res = rq4(metrics, labels, rq1_result, FAST, scoring={})
    ze = set(metrics.loc[metrics["zero_evidence"].astype(bool), "trajectory_id"])
    assert len(ze) == 1
    kept = metrics[~metrics["trajectory_id"].isin(ze)]
    for name, cell in res["panel_b"]["gcpc"].items():
        if cell["endpoint"]:
            assert cell["n"] == len(metrics) and cell["n_undefined"] == 0, name
        elif cell["pass_propagation"]:  # kept, though still undefined (so dropped) on FAIL, where nothing is propagated
            ze_outcome = metrics.loc[metrics["trajectory_id"].isin(ze), "outcome"].item()
            assert cell["n"] == len(metrics) - (ze_outcome == "FAIL") and cell["n_undefined"] == (ze_outcome == "FAIL"), name
        else:
            assert cell["n"] == len(kept) and cell["n_undefined"] == 1, name
    on = res["panel_b"]["gcpc"]["endpoint on · propagation on"]
    y = metrics.outcome.eq("PASS")
    assert on["separation"] == pytest.approx(metrics.loc[y, "gcpc_outcome"].mean() - metrics.loc[~y, "gcpc_outcome"].mean())
    recode = res["panel_c"]["abstain_as_no"]["gcpc"]
    assert recode["outcome"]["standard"]["auc"]["n"] == len(metrics)
    assert recode["plain"]["standard"]["auc"]["n"] == len(kept)


def test_real_idle_floor_reads_action_free_logs_on_plain_gcpc():
    metrics, labels = _tables(seed=1)
    metrics = metrics.assign(n_tool_calls=[0 if i < 3 else 5 for i in range(len(metrics))])
    res = rq4(metrics, labels, {"arms": {}}, FAST, scoring={})
    real = res["panel_c"]["real_idle"]
    idle = metrics.iloc[:3]
    e = real["arms"]["gcpc"]
    assert real["available"] and e["n"] == 3
    decided = idle.loc[~idle["zero_evidence"].astype(bool), "gcpc_plain"].dropna()
    assert e["n_decided"] == len(decided) and e["mean_plain"] == pytest.approx(decided.mean())
    assert e["n_with_credit"] == int((decided > 0).sum())
    assert "real action-free logs (plain GCPC)" in table_markdown(res)


@pytest.mark.parametrize("seed", range(3))
def test_label_counts_equal_per_label_models_in_every_setting(seed):
    """The array path (LabelCounts) gives exactly the ItemLabel + apply_official_outcome scores."""
    from gcpc.analysis.rq4 import LabelCounts
    from gcpc.scoring.metrics import is_zero_evidence

    metrics, labels = _tables(seed=seed)
    outcomes = dict(zip(metrics.trajectory_id, metrics.outcome, strict=True))
    outcomes["t1-0"] = "other"  # a non-binary outcome is left out by both
    items = item_labels_by_trajectory(labels, "gcpc")
    counts = LabelCounts(labels, "gcpc")
    assert counts.trajectory_ids == list(items)
    assert counts.zero_evidence_ids() == frozenset(t for t, labs in items.items() if is_zero_evidence(labs))
    for endpoint in (True, False):
        for prop in (True, False):
            for abstain_as_no in (True, False):
                for step in (True, False):
                    kw = dict(endpoint=endpoint, propagation=prop, abstain_as_no=abstain_as_no, outcome_step=step)
                    want = recomputed_scores(items, outcomes, **kw)
                    got = counts.scores(outcomes, **kw)
                    assert list(got) == list(want) and "t1-0" not in got
                    assert got == want  # exact floats and None


def test_label_counts_reject_unknown_label():
    from gcpc.analysis.rq4 import LabelCounts

    _, labels = _tables()
    labels.loc[0, "label_plain"] = "Maybe"
    with pytest.raises(ValueError, match="label_plain.*Maybe"):
        LabelCounts(labels, "gcpc")
