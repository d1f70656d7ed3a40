"""One zero-evidence rule (issue 23, item 4): finalize decides it with `zero_evidence_reason` (every item
Abstain; for Holistic and TICK, which cannot abstain, an action-free log only under the extension `action_free_zero_evidence`) and every analysis reads
that decision: RQ1 and RQ4 / Table 3 exclude the same TICK trajectories, and the rejudge scores mark them too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gcpc.analysis.common import zero_evidence_ids, zero_evidence_mask
from gcpc.analysis.rejudge import score_judgments
from gcpc.analysis.rq1 import rq1
from gcpc.analysis.rq4 import rq4
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.models import ItemLabel, Judgment
from gcpc.scoring.metrics import zero_evidence_reason

FAST = {"bootstrap": {"n_resamples": 30, "seed": 0, "ci": 0.95}}


def _tick_tables(n_tasks: int = 6, per_task: int = 4):
    """A TICK arm (Yes/No answers, never Abstain): one action-free log per task, which finalize marks zero-evidence."""
    rng = np.random.default_rng(3)
    metrics, labels = [], []
    for t in range(n_tasks):
        for k in range(per_task):
            tid, outcome = f"t{t}-{k}", ("PASS" if k % 2 == 0 else "FAIL")
            idle = k == 0  # an action-free PASS log: TICK still answers Yes/No about it
            answers = ["Yes"] * 3 if idle else [str(rng.choice(["Yes", "No"], p=[0.7, 0.3] if outcome == "PASS" else [0.4, 0.6]))
                                                for _ in range(3)]
            for i, lab in enumerate(answers):
                labels.append({"trajectory_id": tid, "arm": "tick", "item_id": f"q{i}", "route": "judge", "label_plain": lab})
            metrics.append({"trajectory_id": tid, "task_id": f"task{t}", "outcome": outcome, "arm": "tick", "arm_kind": "tick",
                            "condition": "c", "provider": "heuristic", "judge_model": "h",
                            "gcpc_plain": answers.count("Yes") / 3, "gcpc_outcome": None, "zero_evidence": idle,
                            "zero_evidence_reason": "action-free log: no tool output or file content to judge from" if idle else None})
    return pd.DataFrame(metrics).astype({"gcpc_plain": float, "gcpc_outcome": float}), pd.DataFrame(labels)


def test_rq4_excludes_the_zero_evidence_rows_rq1_excludes():
    metrics, labels = _tick_tables()
    assert zero_evidence_ids(metrics, "tick") == frozenset(f"t{t}-0" for t in range(6))
    assert zero_evidence_mask(metrics.drop(columns="zero_evidence")).sum() == 0
    r1 = rq1(metrics, {**FAST, "scores": ["gcpc_plain"]})
    e1 = r1["arms"]["tick"]["gcpc_plain"]
    assert e1["n"] == 18 and e1["n_zero_evidence"] == 6
    r4 = rq4(metrics, labels, r1, {**FAST, "scores": ["gcpc_plain"]})
    plain = r4["panel_c"]["abstain_as_no"]["tick"]["plain"]["standard"]
    # before: Table 3 kept the six action-free logs (only "all items Abstain" counted), 24 rows and another AUC
    assert plain["auc"]["n"] == e1["n"] and plain["auc"]["auc"] == e1["auc"]
    assert plain["separation"]["n_undefined"] == 6


def _traj(tid: str, events: list[Event]) -> Trajectory:
    return Trajectory(trajectory_id=tid, benchmark="b", task_id="t", harness="h", model="m", condition="without_skills",
                      source="j", trial="t__1", outcome=Outcome(status="PASS", reward=1.0), events=events, source_path=f"jobs/j/{tid}")


def _event(i: int, kind: EventKind, text: str) -> Event:
    return Event(index=i, kind=kind, text=text, source=SourceRef(path="log", line=i + 1))


def test_rejudge_scores_apply_the_same_rule():
    idle = _traj("idle", [_event(0, EventKind.AGENT_MESSAGE, "I will do it.")])
    busy = _traj("busy", [_event(0, EventKind.TOOL_CALL, "ls"), _event(1, EventKind.TOOL_OUTPUT, "a.txt")])
    base = dict(benchmark="b", task_id="t", checklist_hash="", provider="heuristic", model="h", request_key=None, status="ok",
                evidence_gate=False)
    tick = [Judgment(trajectory_id=t.trajectory_id, arm="tick", kind="tick", **base,
                     labels=[ItemLabel(item_id="q0", route="judge", label="Yes")]) for t in (idle, busy)]
    hol = [Judgment(trajectory_id=t.trajectory_id, arm="holistic", kind="holistic", score=7.0, **base) for t in (idle, busy)]
    trajs = {t.trajectory_id: t for t in (idle, busy)}
    for js in (tick, hol):
        # the paper's setting (default): arms that cannot abstain are never zero-evidence
        rows, _ = score_judgments(js, trajs, {}, "repeat", 2)
        assert {r["trajectory_id"]: r["zero_evidence"] for r in rows} == {"idle": False, "busy": False}
        # the extension `action_free_zero_evidence`: the action-free log is, in the rejudge scores as in finalize
        rows, _ = score_judgments(js, trajs, {"action_free_zero_evidence": True}, "repeat", 2)
        got = {r["trajectory_id"]: r["zero_evidence"] for r in rows}
        assert got == {"idle": True, "busy": False}
        assert got == {t.trajectory_id: zero_evidence_reason(js[0].kind, js[0].labels, t.events, action_free=True) is not None
                       for t in (idle, busy)}


def test_action_free_rule_is_an_extension_off_by_default():
    """Issue 35, item 5: the paper excludes trajectories whose criteria are all Abstain; Holistic and TICK cannot
    abstain, so by default they are never zero-evidence (before, an action-free log was, by the project's reading).
    `scoring.action_free_zero_evidence: true` is the named extension that restores that reading; floors keep it."""
    import pytest
    import yaml

    from gcpc.scoring.finalize import finalize_tables
    from gcpc.scoring.metrics import action_free_rule

    idle = _traj("idle", [_event(0, EventKind.AGENT_MESSAGE, "I will do it.")])
    busy = _traj("busy", [_event(0, EventKind.TOOL_CALL, "ls"), _event(1, EventKind.TOOL_OUTPUT, "a.txt")])
    base = dict(benchmark="b", task_id="t", checklist_hash="", provider="heuristic", model="h", request_key=None, status="ok",
                evidence_gate=False)
    js = [Judgment(trajectory_id=t.trajectory_id, arm="tick", kind="tick", **base,
                   labels=[ItemLabel(item_id="q0", route="judge", label="Yes")]) for t in (idle, busy)]
    js += [Judgment(trajectory_id=t.trajectory_id, arm="holistic", kind="holistic", score=7.0, **base) for t in (idle, busy)]
    for kind in ("tick", "holistic"):
        assert zero_evidence_reason(kind, [], idle.events) is None
        assert zero_evidence_reason(kind, [], idle.events, action_free=True) == "action-free log: no tool output or file content to judge from"
    assert zero_evidence_reason("floor", [], idle.events) is not None  # floors (no model) read the log either way
    for cfg, want in (({}, set()), ({"action_free_zero_evidence": False}, set()),
                      ({"action_free_zero_evidence": True}, {("holistic", "idle"), ("tick", "idle")})):
        metrics, *_ = finalize_tables([idle, busy], js, cfg)
        assert set(zip(metrics.loc[metrics["zero_evidence"], "arm"], metrics.loc[metrics["zero_evidence"], "trajectory_id"])) == want
    with pytest.raises(ValueError, match="scoring.action_free_zero_evidence must be true or false"):
        action_free_rule({"action_free_zero_evidence": "yes"})
    root = Path(__file__).resolve().parents[1]
    for name in ("params.yaml", "conf/config.yaml"):
        assert yaml.safe_load((root / name).read_text(encoding="utf-8"))["scoring"]["action_free_zero_evidence"] is False
