"""Per-test verifier results: matching, per-test propagation, scoring variants, judge accuracy, the metrics table."""

import math

import pytest

from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.models import ItemLabel, Judgment
from gcpc.scoring.accuracy import compact_accuracy, judge_accuracy
from gcpc.scoring.finalize import finalize_tables, summary
from gcpc.scoring.metrics import apply_per_test, per_test_truth, score_variants, verifier_test_status

CTRF = {  # Harbor CTRF: parametrized cases collapsed, ids with file and class
    "test_outputs.py::TestA::test_ok": "passed",
    "test_outputs.py::test_param": "failed",
    "test_outputs.py::test_skipped": "skipped",
}
TB1 = {"test_hello_file_exists": "passed", "test_hello_content": "failed"}  # Terminal-Bench parser_results: bare names


@pytest.mark.parametrize(("ref", "results", "expected"), [
    ("test_outputs.py::TestA::test_ok", CTRF, "passed"),                      # exact id
    ("test_outputs.py::test_param[case-1]", CTRF, "failed"),                  # parametrized ref, collapsed result
    ("test_outputs.py::test_skipped", CTRF, None),                            # skipped says nothing
    ("test_outputs.py::test_absent", CTRF, None),                             # no result
    ("test_outputs.py::test_x", {"test_outputs.py::test_x[a]": "passed", "test_outputs.py::test_x[b]": "passed"}, "passed"),
    ("test_outputs.py::test_x", {"test_outputs.py::test_x[a]": "passed", "test_outputs.py::test_x[b]": "failed"}, "failed"),
    ("test_hello_file_exists", TB1, "passed"),                                # bare names
    ("tests/test_outputs.py::test_hello_content", TB1, "failed"),             # file-qualified ref, bare result
    ("other_file.py::test_ok", CTRF, None),                                   # both name a file, files differ
    ("test_ok", {"test_outputs.py::TestA::test_ok": "error"}, "failed"),      # bare ref, qualified result; error = failed
])
def test_verifier_test_status_matching(ref, results, expected):
    assert verifier_test_status(ref, results) == expected


def lab(item_id, label, route="assertion", refs=(), raw=None, downgraded=False):
    return ItemLabel(item_id=item_id, route=route, label=label, raw_label=raw or label, test_refs=list(refs), downgraded=downgraded)


def test_per_test_truth_needs_every_reference_unless_one_failed():
    assert per_test_truth(lab("a", "No", refs=["test_hello_file_exists"]), TB1) == "Yes"
    assert per_test_truth(lab("a", "Yes", refs=["test_hello_file_exists", "test_missing"]), TB1) is None
    assert per_test_truth(lab("a", "Yes", refs=["test_missing", "test_hello_content"]), TB1) == "No"
    assert per_test_truth(lab("a", "Yes", route="generated", refs=["test_hello_content"]), TB1) is None
    assert per_test_truth(lab("a", "Yes", refs=[]), TB1) is None


def test_per_test_propagation_on_pass_and_fail_alike():
    labels = [lab("a", "Abstain", refs=["test_hello_file_exists"]), lab("b", "Yes", refs=["test_hello_content"]),
              lab("c", "No", route="generated"), lab("d", "No", refs=["test_unknown"])]
    assert [x.label for x in apply_per_test(labels, TB1)] == ["Yes", "No", "No", "No"]
    fail = score_variants(labels, "FAIL", test_results=TB1, per_test=True)
    # per-test: Yes, No, No, No + endpoint No -> 1/5; official outcome alone (FAIL): Yes 1 / decided 4 (+ endpoint) -> 1/4
    assert fail["per_test"].score == pytest.approx(1 / 5)
    assert fail["outcome"].score == pytest.approx(1 / 4)
    passed = score_variants(labels, "PASS", test_results=TB1, per_test=True)
    # on PASS, PASS propagation sets assertion items Yes, then a referenced test's own failure wins (b -> No)
    assert [passed["per_test"].n_yes, passed["per_test"].n_no] == [3, 2]
    off = score_variants(labels, "FAIL", test_results=TB1, per_test=False)
    assert off["per_test"].score is None and off["per_test"].perfect is None
    other = score_variants(labels, "other", test_results=TB1, per_test=True)
    assert other["outcome"].score is None and other["per_test"].score is None and other["plain"].score == pytest.approx(1 / 3)


def test_ungated_variant_uses_the_labels_before_the_gate():
    labels = [lab("a", "Abstain", route="judge", raw="Yes", downgraded=True), lab("b", "No", route="judge")]
    v = score_variants(labels, "FAIL")
    assert v["plain"].score == 0.0 and v["plain_ungated"].score == 0.5


def traj(tid, outcome, results):
    return Trajectory(trajectory_id=tid, benchmark="b", task_id="t", harness="h", model="m", condition="c", source="s", trial=tid,
                      outcome=Outcome(status=outcome), test_results=results,
                      events=[Event(index=0, kind=EventKind.TOOL_OUTPUT, text="x", source=SourceRef(path="p", line=1))],
                      source_path="p")


def judgment(tid, arm, labels=(), kind="checklist", score=None):
    return Judgment(trajectory_id=tid, benchmark="b", task_id="t", arm=arm, kind=kind, checklist_hash="h", provider="heuristic",
                    model="m", request_key="k", status="ok", evidence_gate=True, labels=list(labels), score=score)


def test_judge_accuracy_counts_abstain_apart():
    trajs = {"t1": traj("t1", "FAIL", TB1), "t2": traj("t2", "PASS", {"test_hello_file_exists": "passed", "test_hello_content": "passed"})}
    js = [
        judgment("t1", "gcpc", [lab("a", "Yes", refs=["test_hello_file_exists"]), lab("b", "Yes", refs=["test_hello_content"]),
                                lab("c", "Abstain", refs=["test_hello_content"], raw="No", downgraded=True),
                                lab("d", "Yes", refs=["test_nope"]), lab("e", "Yes", route="generated")]),
        judgment("t2", "gcpc", [lab("a", "Yes", refs=["test_hello_file_exists"]), lab("b", "Abstain", refs=["test_hello_content"])]),
        judgment("t1", "tick", [lab("q01", "Yes", route="judge")], kind="tick"),
    ]
    acc = judge_accuracy(js, trajs)
    g = acc["arms"]["gcpc"]
    assert g["n_assertion_items"] == 6 and g["n_assertion_items_without_truth"] == 1
    p = g["plain"]
    assert (p["n"], p["n_decided"], p["n_abstain"], p["n_agree"]) == (5, 3, 2, 2)
    assert p["agreement"] == pytest.approx(2 / 3) and p["abstain_share"] == pytest.approx(2 / 5)
    assert p["confusion"]["No"] == {"Yes": 1, "No": 0, "Abstain": 1}
    assert p["truth_yes"]["agreement"] == 1.0 and p["truth_no"]["agreement"] == 0.0
    r = g["raw"]  # before the gate, c's No counts and agrees
    assert (r["n_decided"], r["n_agree"]) == (4, 3)
    assert g["by_outcome"]["PASS"]["n"] == 2 and g["by_outcome"]["FAIL"]["n"] == 3
    assert acc["arms"]["tick"]["applicable"] is False
    assert compact_accuracy(acc) == {"gcpc": {"n_items": 5, "agreement": pytest.approx(2 / 3), "abstain_share": pytest.approx(0.4),
                                              "agreement_raw": 0.75}}


KEPT_COLUMNS = ["trajectory_id", "benchmark", "task_id", "harness", "model", "condition", "outcome", "arm", "n_items", "n_yes", "n_no",
                "n_abstain", "n_downgraded", "gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage", "zero_evidence"]


def test_metrics_table_keeps_its_columns_and_adds_variants_and_holistic_rows():
    trajs = [traj("t1", "FAIL", TB1), traj("t2", "other", {})]
    js = [judgment("t1", "gcpc", [lab("a", "Abstain", refs=["test_hello_file_exists"]), lab("b", "Yes", route="judge")]),
          judgment("t2", "gcpc", [lab("a", "Yes", refs=["test_hello_file_exists"])]),
          judgment("t1", "holistic", kind="holistic", score=7.0), judgment("t2", "holistic", kind="holistic", score=10.0)]
    metrics, labels, variants, excluded = finalize_tables(trajs, js, {"per_test_propagation": True})
    assert not excluded
    assert set(KEPT_COLUMNS) <= set(metrics.columns)
    assert {"arm_kind", "gcpc_plain_ungated", "gcpc_per_test", "perfect_per_test", "n_truth", "holistic_score"} <= set(metrics.columns)
    row = metrics.set_index(["arm", "trajectory_id"])
    g = row.loc[("gcpc", "t1")]
    assert g["gcpc_plain"] == 1.0 and g["gcpc_outcome"] == pytest.approx(0.5) and g["gcpc_per_test"] == pytest.approx(2 / 3)
    assert g["n_truth"] == 1
    h = row.loc[("holistic", "t1")]
    assert h["gcpc_plain"] == pytest.approx(0.7) and h["holistic_score"] == 7.0 and math.isnan(h["gcpc_outcome"])
    assert h["n_items"] == 0 and not h["zero_evidence"] and math.isnan(h["evidence_coverage"]) and h["perfect"] is False
    assert row.loc[("holistic", "t2")]["perfect"] is None  # non-binary outcome, like every arm
    assert len(variants) == 4 * len(js) and set(variants["variant"]) == {"plain", "plain_ungated", "outcome", "per_test"}
    v = variants.set_index(["arm", "trajectory_id", "variant"])["score"]
    assert v[("gcpc", "t1", "per_test")] == pytest.approx(2 / 3) and math.isnan(v[("gcpc", "t2", "outcome")])
    lab_rows = labels[labels["arm"] == "gcpc"].set_index(["trajectory_id", "item_id"])
    assert lab_rows.loc[("t1", "a")]["truth_per_test"] == "Yes" and lab_rows.loc[("t1", "a")]["label_per_test"] == "Yes"
    assert lab_rows.loc[("t1", "endpoint")]["label_outcome"] == "No"
    s = summary(metrics, excluded)
    assert s["holistic"]["FAIL"]["gcpc_plain_mean"] == pytest.approx(0.7) and s["holistic"]["FAIL"]["gcpc_outcome_mean"] is None
