"""The arm study helpers: trajectory selection, AUC per arm on own and common trajectories, log audit."""

import pandas as pd
import pytest

from gcpc.corpus.ingest import IngestResult
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.scoring.arm_study import agent_steps, auc_table, markdown, metadata_in_log, select

SRC = SourceRef(path="p", line=1)


def traj(tid, harness="mini-swe-agent", calls=1, launch=""):
    events = [Event(index=0, kind=EventKind.SYSTEM, text=f"[agent launch] {launch}", source=SRC)]
    events += [Event(index=i + 1, kind=EventKind.TOOL_CALL, text="ls", source=SRC) for i in range(calls)]
    return Trajectory(trajectory_id=tid, benchmark="b", task_id="t", harness=harness, model="anthropic/claude-x", condition="c",
                      source="s", trial=tid, outcome=Outcome(status="PASS"), events=events, source_path=f"runs/{tid}")


def test_select_keeps_the_harness_and_runs_with_agent_steps_and_lists_the_rest():
    result = IngestResult(trajectories=[traj("a"), traj("b", calls=0), traj("c", harness="openhands")])
    kept = select(result, harness="mini-swe-agent", min_agent_steps=1)
    assert [t.trajectory_id for t in kept.trajectories] == ["a"]
    assert sorted(e.reason for e in kept.exclusions) == ["population filter: 0 agent steps (< 1)",
                                                         "population filter: harness 'openhands' is not mini-swe-agent"]
    assert agent_steps(traj("x", calls=3)) == 3


def test_metadata_audit_reads_the_log_as_judges_see_it():
    leaky = traj("a", launch="mini -m anthropic/claude-x -t 'task'")
    assert "anthropic/claude-x" in leaky.events[0].text  # the raw log names the model...
    audit = metadata_in_log([leaky, traj("b")], max_chars=4000)
    assert audit == {"n": 2, "harness_in_log": 0, "model_in_log": 0}  # ...the judge-visible log does not


def test_auc_table_per_arm_on_own_and_common_trajectories():
    rows = []
    for n, (outcome, score) in enumerate([("PASS", 0.9), ("PASS", 0.8), ("FAIL", 0.1), ("FAIL", None), ("PASS", 0.7), ("FAIL", 0.75)]):
        task = f"t{n % 3}"
        rows.append({"trajectory_id": f"r{n}", "task_id": task, "outcome": outcome, "arm": "gcpc", "gcpc_plain": score,
                     "gcpc_outcome": 1.0 if outcome == "PASS" else 0.0, "gcpc_per_test": None})
        if n < 5:  # holistic scored one run fewer
            rows.append({"trajectory_id": f"r{n}", "task_id": task, "outcome": outcome, "arm": "holistic", "gcpc_plain": 0.5,
                         "gcpc_outcome": None, "gcpc_per_test": None})
    table = auc_table(pd.DataFrame(rows), {"bootstrap": {"n_resamples": 200, "seed": 0, "ci": 0.95}, "zero_evidence_score": 0.0})
    assert table["n_common"] == 5
    g = table["arms"]["gcpc"]
    # own trajectories: pass {0.9, 0.8, 0.7} vs fail {0.1, 0.0 (zero evidence), 0.75}: 8 of 9 pairs
    assert g["scored"]["gcpc_plain"]["auc"] == pytest.approx(8 / 9, abs=1e-4)
    assert g["scored"]["gcpc_plain"]["n_undefined_filled"] == 1 and g["scored"]["gcpc_plain"]["n"] == 6
    assert g["common"]["gcpc_plain"]["n"] == 5 and g["common"]["gcpc_plain"]["auc"] == 1.0
    assert g["scored"]["gcpc_outcome"]["auc"] == 1.0
    h = table["arms"]["holistic"]
    assert h["scored"]["gcpc_plain"]["auc"] == 0.5 and h["scored"]["gcpc_outcome"]["not_produced"]
    text = markdown({"data": "x", "command": "cmd", "n_trajectories": 6, "outcomes": {}, "n_tasks": 3, "auc": table,
                     "judge_accuracy": {"arms": {}}, "metadata_in_log": {"n": 6, "harness_in_log": 0, "model_in_log": 0}})
    assert "| holistic | 5 (3/2) | 3 | 0.500" in text and "not produced" in text
