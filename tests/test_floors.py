"""Floor arms, RQ1 beside the floors, and item-level validity.

* each floor computed by hand on a fixture trajectory (mini-swe-agent-like return codes, a timeout,
  a file read, a final call without output);
* floors never read the outcome: an outcome-stripped twin (no verdict, no per-test results, other
  run metadata) gets identical judgments;
* Cohen's κ against scikit-learn's cohen_kappa_score; agreement split by test outcome by hand;
* the best floor is the one with the highest AUC on the arm's own trajectories, and the paired ΔAUC
  equals the difference of scikit-learn AUCs there.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from gcpc.analysis.floors import floor_comparison, floors_latex, floors_markdown, verdict
from gcpc.analysis.item_validity import item_validity, kappa, report_lines, validity_latex, validity_markdown
from gcpc.analysis.stats import paired_delta_auc
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.floor_arm import FLOORS, load_patterns
from gcpc.judging.stage import ARM_KINDS, arm_spec, judge_arm

ROOT = Path(__file__).resolve().parents[1]
FLOOR_ARMS = ("floor_exit0", "floor_steps", "floor_log_length", "floor_clean_tail")
BOOT = {"n_resamples": 300, "seed": 0, "ci": 0.95}


def floor_params(**over) -> dict:
    arms = {}
    for name in FLOOR_ARMS:
        cfg = yaml.safe_load((ROOT / "conf" / "arm" / f"{name}.yaml").read_text())[name]
        arms[name] = cfg | {"template": str(ROOT / cfg["template"])} | over
    return {"arm": arms, "judging": {"max_event_chars": 4000}}


def ev(i: int, kind: EventKind, text: str, tool: str | None = "bash", is_error: bool = False) -> Event:
    return Event(index=i, kind=kind, text=text, tool=tool, is_error=is_error, source=SourceRef(path="agent.log", line=i + 1))


C, O = EventKind.TOOL_CALL, EventKind.TOOL_OUTPUT
# (event, header exactly as render_log writes it) - the headers are what a judge sees, written out by hand
FIXTURE = [
    (ev(0, EventKind.SYSTEM, "[task prompt]\nMake a.py print ok.", tool=None), "[0] SYSTEM:"),
    (ev(1, EventKind.AGENT_MESSAGE, "THOUGHT: look first", tool=None), "[1] AGENT_MESSAGE:"),
    (ev(2, C, "ls /app"), "[2] TOOL_CALL (bash):"),
    (ev(3, O, "<returncode>0</returncode>\n<output>\na.py\n</output>"), "[3] TOOL_OUTPUT (bash):"),
    (ev(4, C, "python a.py"), "[4] TOOL_CALL (bash):"),
    # a non-zero return code without the error mark: the floor reads the code the judge sees
    (ev(5, O, "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nValueError: bad\n</output>"),
     "[5] TOOL_OUTPUT (bash):"),
    (ev(6, C, "sleep 999"), "[6] TOOL_CALL (bash):"),
    (ev(7, O, "The last command <command>sleep 999</command> timed out", is_error=True), "[7] TOOL_OUTPUT (bash, error):"),
    (ev(8, C, "cat a.py", tool="Read"), "[8] TOOL_CALL (Read):"),
    (ev(9, EventKind.FILE_CONTENT, "print('ok')", tool="Read"), "[9] FILE_CONTENT (Read):"),
    (ev(10, C, "python a.py"), "[10] TOOL_CALL (bash):"),
    (ev(11, O, "<returncode>0</returncode>\n<output>\nok\n</output>"), "[11] TOOL_OUTPUT (bash):"),
    (ev(12, C, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), "[12] TOOL_CALL (bash):"),  # never answered
]
EVENTS = [e for e, _ in FIXTURE]


def trajectory(events=EVENTS, *, tid="b/run/t1", outcome=Outcome(status="PASS", reward=1.0), tests=None, model="org/model-x",
               harness="mini-swe-agent", task="t") -> Trajectory:
    return Trajectory(trajectory_id=tid, benchmark="b", task_id=task, harness=harness, model=model, condition="without_skills",
                      source="run", trial=tid, outcome=outcome, test_results=tests if tests is not None else {"t::a": "passed"},
                      events=list(events), source_path=f"runs/{tid}")


def judge_floors(trajs, **over):
    params = floor_params(**over)
    return {name: judge_arm(arm_spec(params, name), trajs, llm_cfg={}, client=None) for name in FLOOR_ARMS}


def test_each_floor_by_hand_on_the_fixture_trajectory():
    got = {name: js[0] for name, js in judge_floors([trajectory()]).items()}
    # 6 tool calls (2, 4, 6, 8, 10, 12); outputs 3 and 11 exited 0, 5 returned 1, 7 timed out, 12 has none
    assert got["floor_exit0"].score == pytest.approx(2 / 6)
    assert got["floor_steps"].score == pytest.approx(1 / 7)
    chars = sum(len(header) + 1 + len(e.text) for e, header in FIXTURE) + 2 * (len(FIXTURE) - 1) + 1
    assert got["floor_log_length"].floor["log_chars"] == chars
    assert got["floor_log_length"].score == pytest.approx(1 / (1 + chars / 1000))
    # last 3 evidence events: 7 (timed out), 9 (file), 11 (ok) -> an error in the tail
    assert got["floor_clean_tail"].score == 0.0 and got["floor_clean_tail"].floor["tail_error_events"] == [7]
    two = judge_floors([trajectory()], tail_events=2)["floor_clean_tail"][0]
    assert two.score == 1.0 and two.floor["n_tail"] == 2
    for j in got.values():
        assert j.status == "ok" and j.kind == "floor" and j.provider == "none" and not j.labels and j.request_key is None
        assert j.model == f"floor:{yaml.safe_load((ROOT / 'conf/arm' / f'{j.arm}.yaml').read_text())[j.arm]['feature']}"


def test_clean_tail_reads_error_patterns_and_needs_something_to_end_on():
    quiet = [ev(0, C, "make"), ev(1, O, "gcc: error: x.c: No such file or directory")]  # no mark, no return code
    assert judge_floors([trajectory(quiet)])["floor_clean_tail"][0].score == 0.0
    assert judge_floors([trajectory(quiet[:1])])["floor_clean_tail"][0].score == 0.0  # nothing displayed at all
    ok = [ev(0, C, "make"), ev(1, O, "built 3 targets")]
    assert judge_floors([trajectory(ok)])["floor_clean_tail"][0].score == 1.0
    nothing = judge_floors([trajectory([ev(0, EventKind.SYSTEM, "agent never started", tool=None)])])
    assert nothing["floor_exit0"][0].score == 0.0 and nothing["floor_steps"][0].score == 1.0


def test_floors_never_read_the_outcome_or_run_metadata():
    """An outcome-stripped twin (no verdict, no per-test results, other harness/model/source) scores the same.
    Run metadata printed in the log is redacted before any arm, floors included, reads it."""
    leaky = [*EVENTS, ev(13, O, "launched mini-swe-agent with org/model-x", is_error=False)]
    full = trajectory(leaky, outcome=Outcome(status="FAIL", reward=0.0, reason="tests failed"),
                      tests={"t::a": "failed", "t::b": "passed"})
    stripped = trajectory([e.model_copy(update={"text": e.text.replace("mini-swe-agent", "[run metadata redacted]")
                                                .replace("org/model-x", "[run metadata redacted]")}) for e in leaky],
                          outcome=Outcome(status="other"), tests={}, model="unknown", harness="unknown")
    a, b = judge_floors([full]), judge_floors([stripped])
    for name in FLOOR_ARMS:
        assert a[name][0].model_dump() == b[name][0].model_dump(), name
    assert not ARM_KINDS["floor"].uses_model


def test_floor_config_errors_are_named(tmp_path):
    params = floor_params()
    params["arm"]["floor_exit0"]["feature"] = "vibes"
    with pytest.raises(ValueError, match="floor_exit0.*feature"):
        judge_arm(arm_spec(params, "floor_exit0"), [trajectory()], llm_cfg={}, client=None)
    bad = tmp_path / "error_patterns.txt"
    bad.write_text("# comment\n(unclosed\n")
    with pytest.raises(ValueError, match=r"error_patterns.txt:2"):
        load_patterns(bad)
    assert set(FLOORS) == {"exit0_share", "steps", "log_length", "clean_tail"}


# --------------------------------------------------------------------------- item validity


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    truth = rng.choice(["Yes", "No"], size=40, p=[0.6, 0.4])
    label = np.where(rng.random(40) < 0.7, truth, rng.choice(["Yes", "No"], size=40))
    assert kappa(truth, label) == pytest.approx(cohen_kappa_score(truth, label), abs=1e-12)


def test_kappa_edge_cases_match_scikit_learn():
    assert kappa(["Yes", "No", "Yes"], ["Yes", "No", "Yes"]) == pytest.approx(cohen_kappa_score(["Yes", "No", "Yes"], ["Yes", "No", "Yes"]))
    assert kappa(["Yes", "No"], ["Yes", "Yes"]) == pytest.approx(cohen_kappa_score(["Yes", "No"], ["Yes", "Yes"]))  # 0: all Yes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score(["Yes", "Yes"], ["Yes", "Yes"]))
    assert kappa(["Yes", "Yes"], ["Yes", "Yes"]) is None  # undefined, as scikit-learn says (NaN)


def _labels_frame():
    """Two tasks of benchmark b1 (one arm gated, one not), one task of b2; truth x label counts known."""
    rows, meta = [], []
    spec = {  # trajectory: (benchmark, task, [(route, truth, label), ...])
        "r1": ("b1", "t1", [("assertion", "Yes", "Yes"), ("assertion", "Yes", "Yes"), ("assertion", "No", "Yes"),
                            ("assertion", "No", "No"), ("assertion", "Yes", "Abstain"), ("generated", None, "Yes"),
                            ("judge", None, "No"), ("assertion", None, "Yes")]),
        "r2": ("b1", "t2", [("assertion", "Yes", "No"), ("assertion", "No", "Yes"), ("assertion", "No", "Abstain"),
                            ("generated", None, "Abstain")]),
        "r3": ("b2", "t3", [("assertion", "Yes", "Yes"), ("assertion", "No", "No")]),
    }
    for arm in ("gate_on", "gate_off"):
        for tid, (bench, task, items) in spec.items():
            for n, (route, truth, label) in enumerate(items):
                rows.append({"trajectory_id": tid, "arm": arm, "item_id": f"i{n}", "route": route, "label_plain": label,
                             "truth_per_test": truth})
            rows.append({"trajectory_id": tid, "arm": arm, "item_id": "endpoint", "route": "endpoint", "label_plain": None,
                         "truth_per_test": None})
    for tid, (bench, task, items) in spec.items():
        meta.append({"trajectory_id": tid, "benchmark": bench, "task_id": task})
        rows.append({"trajectory_id": tid, "arm": "tick", "item_id": "q01", "route": "judge", "label_plain": "Yes", "truth_per_test": None})
    return pd.DataFrame(rows), pd.DataFrame(meta)


def test_item_validity_by_hand_per_benchmark_and_pooled():
    labels, metrics = _labels_frame()
    res = item_validity(labels, metrics, {"bootstrap": BOOT})
    assert set(res["benchmarks"]) == {"b1", "b2", "all"} and res["not_applicable"] == {"tick": "the arm labels no assertion-route items"}
    b1 = res["benchmarks"]["b1"]["gate_on"]
    # b1 decided (truth, label): YY YY NY NN | YN NY -> 3 agree of 6; abstain 2 of 8 items with truth
    assert (b1["n"], b1["n_decided"], b1["n_abstain"]) == (8, 6, 2)
    assert b1["agreement"]["estimate"] == pytest.approx(3 / 6)
    assert b1["abstain_share"]["estimate"] == pytest.approx(2 / 8)
    assert b1["agreement_tests_passed"]["estimate"] == pytest.approx(2 / 3)  # YY YY YN
    assert b1["agreement_tests_failed"]["estimate"] == pytest.approx(1 / 3)  # NY NN NY: a Yes where tests failed
    truth, label = ["Yes", "Yes", "No", "No", "Yes", "No"], ["Yes", "Yes", "Yes", "No", "No", "Yes"]
    assert b1["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(truth, label))
    assert b1["n_assertion_items_without_truth"] == 1 and b1["n_tasks"] == 2
    assert b1["routes"]["generated"] == {"n": 2, "share": pytest.approx(2 / 12), "labels": {"Yes": 1, "No": 0, "Abstain": 1}}
    pooled = res["benchmarks"]["all"]["gate_off"]
    assert pooled["n_decided"] == 8 and pooled["agreement"]["estimate"] == pytest.approx(5 / 8) and pooled["n_tasks"] == 3
    for stat in ("agreement", "kappa", "agreement_tests_passed", "agreement_tests_failed"):
        e = pooled[stat]
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"], stat
    md, tex = validity_markdown(res), validity_latex(res)
    assert "| b1 | gate_on | 8 | 6 | 0.500 |" in md and "0.333" in md and tex.startswith(r"\begin{tabular}")


def test_item_validity_leaves_out_zero_evidence_pairs_as_every_analysis_does():
    labels, meta = _labels_frame()
    allabstain = pd.DataFrame([{"trajectory_id": "r4", "arm": "gate_on", "item_id": f"i{n}", "route": "assertion", "label_plain": "Abstain",
                                "truth_per_test": "No"} for n in range(3)])
    labels = pd.concat([labels, allabstain], ignore_index=True)
    rows = [m | {"arm": a, "zero_evidence": False} for m in meta.to_dict("records") for a in ("gate_on", "gate_off", "tick")]
    rows.append({"trajectory_id": "r4", "benchmark": "b2", "task_id": "t4", "arm": "gate_on", "zero_evidence": True})
    metrics = pd.DataFrame(rows)
    paper = item_validity(labels, metrics, {"bootstrap": BOOT})
    assert paper["zero_evidence_excluded"] == {"n_trajectory_arms": 1, "n_items": 3, "n_items_with_truth": 3}
    assert paper["benchmarks"]["b2"]["gate_on"]["n"] == 2 and paper["benchmarks"]["b2"]["gate_on"]["n_abstain"] == 0
    assert paper["benchmarks"]["b2"]["gate_on"]["routes"]["n_items"] == 5  # route shares describe the whole checklists
    scored = item_validity(labels, metrics, {"bootstrap": BOOT, "zero_evidence_score": 0.0})
    assert scored["benchmarks"]["b2"]["gate_on"]["n"] == 5 and scored["benchmarks"]["b2"]["gate_on"]["n_abstain"] == 3
    assert "excluded, as in every analysis" in validity_markdown(paper)
    # the report's sentence also gives the Abstain share over every labelled item, zero-evidence logs included
    routes = paper["benchmarks"]["b2"]["gate_on"]["routes"]
    n_abstain = sum(routes[r]["labels"]["Abstain"] for r in ("assertion", "generated", "judge"))
    line = next(x for x in report_lines(paper) if x.startswith("- `b2` / `gate_on`"))
    assert n_abstain >= 3 and f"Abstain over all 5 labelled items {100 * n_abstain / 5:.1f}% ({n_abstain})" in line


def test_item_validity_of_an_arm_set_without_item_labels_is_empty_not_a_crash():
    # arm=holistic (or a floor set) writes no item labels: the stage reports nothing to check
    labels = pd.DataFrame({c: pd.Series([], dtype=object)
                           for c in ("trajectory_id", "arm", "item_id", "route", "label_plain", "truth_per_test")})
    metrics = pd.DataFrame({"trajectory_id": ["r1"], "benchmark": ["b"], "task_id": ["t"], "arm": ["holistic"],
                            "zero_evidence": [False]})
    result = item_validity(labels, metrics, {})
    assert result["benchmarks"] == {} and result["not_applicable"] == {}
    assert result["zero_evidence_excluded"]["n_items"] == 0 and "(none)" in validity_markdown(result)


def test_item_validity_names_a_trajectory_missing_from_metrics():
    labels, metrics = _labels_frame()
    with pytest.raises(ValueError, match="r3 is not in the metrics table"):
        item_validity(labels, metrics[metrics["trajectory_id"] != "r3"], {"bootstrap": BOOT})


# --------------------------------------------------------------------------- RQ1 beside the floors


def _metrics(seed: int = 0) -> pd.DataFrame:
    """30 trajectories over 10 tasks; one judge arm (two trajectories unscored), three floors of known quality."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(30):
        passed = n % 3 != 0
        base = {"trajectory_id": f"r{n:02d}", "task_id": f"t{n % 10}", "benchmark": "b", "condition": "c",
                "outcome": "PASS" if passed else "FAIL", "zero_evidence": False}
        strong = float(passed) * 0.6 + rng.random() * 0.6
        weak = rng.random()
        rows.append(base | {"arm": "floor_strong", "arm_kind": "floor", "judge_model": "floor:strong", "gcpc_plain": strong})
        rows.append(base | {"arm": "floor_weak", "arm_kind": "floor", "judge_model": "floor:weak", "gcpc_plain": weak})
        rows.append(base | {"arm": "floor_const", "arm_kind": "floor", "judge_model": "floor:const", "gcpc_plain": 0.5})
        if n < 28:
            rows.append(base | {"arm": "judge", "arm_kind": "checklist", "judge_model": "m", "gcpc_plain": float(passed) * 0.2 + rng.random()})
    rows.append({"trajectory_id": "x", "task_id": "t0", "benchmark": "b", "condition": "c", "outcome": "other", "zero_evidence": False,
                 "arm": "judge", "arm_kind": "checklist", "judge_model": "m", "gcpc_plain": 1.0})
    return pd.DataFrame(rows)


def test_each_arm_against_the_best_floor_on_its_own_trajectories():
    m = _metrics()
    res = floor_comparison(m, {"bootstrap": BOOT})
    assert res["available"] and set(res["floors"]) == {"floor_strong", "floor_weak", "floor_const"}
    assert res["floors"]["floor_const"]["auc"] == 0.5 and res["floors"]["floor_strong"]["feature"] == "strong"
    e = res["arms"]["judge"]
    ids = sorted(m.loc[(m["arm"] == "judge") & (m["outcome"] != "other"), "trajectory_id"])
    assert e["n"] == 28 and len(ids) == 28
    sub = {a: m[(m["arm"] == a) & m["trajectory_id"].isin(ids)].sort_values("trajectory_id") for a in ("judge", "floor_strong", "floor_weak")}
    y = sub["judge"]["outcome"].eq("PASS").to_numpy()
    aucs = {a: roc_auc_score(y, s["gcpc_plain"].to_numpy()) for a, s in sub.items()}
    assert e["best_floor"] == max(("floor_strong", "floor_weak"), key=aucs.get)
    assert e["auc"] == pytest.approx(aucs["judge"]) and e["best_floor_auc"] == pytest.approx(aucs[e["best_floor"]])
    assert e["delta"]["delta"] == pytest.approx(aucs["judge"] - aucs[e["best_floor"]])
    frame = sub["judge"][["trajectory_id", "task_id", "gcpc_plain"]].assign(_pass=y, f=sub[e["best_floor"]]["gcpc_plain"].to_numpy())
    direct = paired_delta_auc(frame, "gcpc_plain", "f", "_pass", "task_id", n_resamples=300, seed=0)
    assert (e["delta"]["ci_low"], e["delta"]["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))
    assert e["verdict"] == verdict(e["delta"]) and e["sentence"].startswith("`judge` ")
    assert "floor_const" in e["deltas"]
    md = floors_markdown(res)
    assert "| judge |" in md and e["best_floor"] in md and floors_latex(res).count(r"\begin{tabular}") == 2


def test_verdict_reads_the_interval():
    assert verdict({"ci_low": 0.01, "ci_high": 0.2}) == "beats"
    assert verdict({"ci_low": -0.2, "ci_high": -0.01}) == "below"
    assert verdict({"ci_low": -0.1, "ci_high": 0.1}) == "not_distinguishable"
    assert verdict({"ci_low": None, "ci_high": None}) == "n/a"


def test_no_floor_arm_is_reported_not_available():
    m = _metrics()
    res = floor_comparison(m[m["arm_kind"] != "floor"], {"bootstrap": BOOT})
    assert res["available"] is False and "no floor arm" in res["reason"]
    assert "not available" in floors_markdown(res)


def test_floor_stage_builds_no_provider_and_leaves_an_empty_call_store(tmp_path):
    """The judge stage of a floor arm never constructs the configured provider (an unknown one here would fail)."""
    from gcpc.io import write_jsonl
    from gcpc.judging.stage import run as judge_run

    ingest = tmp_path / "ingest"
    write_jsonl(ingest / "trajectories.jsonl", [trajectory()])
    params = floor_params() | {"judge": {"provider": "no-such-provider", "model": "m"}}
    js = judge_run(params, "floor_exit0", ingest, tmp_path / "synth", tmp_path / "out", progress=False)
    assert [j.score for j in js] == [pytest.approx(2 / 6)]
    assert (tmp_path / "out" / "llm_calls.jsonl").read_text() == ""
    assert (tmp_path / "out" / "judgments.jsonl").exists() and not (tmp_path / "out" / "usage_summary.json").exists()


def test_judge_stage_streams_chunks_and_sorts_an_unsorted_input(tmp_path):
    """Chunked judging writes judgments sorted by trajectory id even when the input file is not."""
    from gcpc.io import iter_jsonl, write_jsonl
    from gcpc.judging.stage import run as judge_run

    ingest = tmp_path / "ingest"
    ids = ["b/run/t3", "b/run/t1", "b/run/t4", "b/run/t2", "b/run/t0"]
    write_jsonl(ingest / "trajectories.jsonl", [trajectory(tid=t) for t in ids])
    params = floor_params() | {"judge": {"provider": "no-such-provider", "model": "m"}}
    whole = judge_run(params, "floor_steps", ingest, tmp_path / "synth", tmp_path / "whole", progress=False, chunk=100)
    from gcpc.judging.stage import judge_stage

    counts = judge_stage(params, "floor_steps", ingest, tmp_path / "synth", tmp_path / "parts", progress=False, chunk=2)
    assert [j.trajectory_id for j in whole] == sorted(ids)
    assert (counts.ok, counts.written) == (sum(j.status == "ok" for j in whole), len(ids))
    assert (tmp_path / "parts" / "judgments.jsonl").read_bytes() == (tmp_path / "whole" / "judgments.jsonl").read_bytes()
    assert [j["trajectory_id"] for j in iter_jsonl(tmp_path / "parts" / "judgments.jsonl")] == sorted(ids)


def test_cluster_cell_counts_equal_per_cluster_cell_counts():
    """The one-pass per-cluster truth x label counts equal cell_counts on each cluster's rows."""
    from gcpc.analysis.item_validity import cell_counts, cluster_cell_counts
    from gcpc.analysis.stats import cluster_codes

    rng = np.random.default_rng(0)
    n = 600
    rows = pd.DataFrame({"task": rng.choice([f"t{i}" for i in range(13)], n),
                         "truth_per_test": rng.choice(["Yes", "No", None, ""], n, p=[0.5, 0.35, 0.1, 0.05]),
                         "label_plain": rng.choice(["Yes", "No", "Abstain", "Maybe"], n, p=[0.4, 0.3, 0.25, 0.05])})
    codes, k = cluster_codes(rows["task"])
    want = np.stack([cell_counts(rows.loc[codes == c, "truth_per_test"], rows.loc[codes == c, "label_plain"]) for c in range(k)])
    np.testing.assert_array_equal(cluster_cell_counts(rows["truth_per_test"], rows["label_plain"], codes, k), want)
