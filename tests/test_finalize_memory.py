"""Finalize holds what scoring reads, not every log (issue 36, item 6): the same tables from trajectories cut to
their scoring view, which keeps no event text."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.io import read_models
from gcpc.judging.models import Judgment
from gcpc.scoring.finalize import finalize_tables, scoring_view
from gcpc.scoring.metrics import log_has_evidence

ROOT = Path(__file__).resolve().parents[1]
SRC = SourceRef(path="a.log", line=1)


def traj(kinds_texts: list[tuple[EventKind, str]]) -> Trajectory:
    return Trajectory(trajectory_id="t", benchmark="b", task_id="x", harness="h", model="m", condition="c", source="s",
                      trial="1", outcome=Outcome(status="PASS", reward=1.0), source_path="x",
                      events=[Event(index=i, kind=k, text=t, source=SRC) for i, (k, t) in enumerate(kinds_texts)])


@pytest.mark.parametrize("events", [
    [(EventKind.TOOL_CALL, "ls" * 500), (EventKind.TOOL_OUTPUT, "   "), (EventKind.TOOL_CALL, "cat"), (EventKind.FILE_CONTENT, "a" * 9000)],
    [(EventKind.SYSTEM, "boot"), (EventKind.TOOL_OUTPUT, " \n ")],
    [(EventKind.AGENT_MESSAGE, "hello")],
])
def test_scoring_view_keeps_the_two_facts_scoring_reads(events):
    t = traj(events)
    v = scoring_view(t)
    assert log_has_evidence(v.events) == log_has_evidence(t.events)
    assert sum(e.kind == EventKind.TOOL_CALL for e in v.events) == sum(e.kind == EventKind.TOOL_CALL for e in t.events)
    assert all(len(e.text) <= 1 for e in v.events)


def test_demo_tables_are_the_same_from_the_scoring_view():
    ingest, judge = ROOT / "data/processed/ingest/trajectories.jsonl", ROOT / "data/processed/judge"
    if not ingest.exists():
        pytest.skip("demo outputs not checked out (dvc checkout)")
    full = read_models(ingest, Trajectory)
    judgments = [j for p in sorted(judge.glob("*/judgments.jsonl")) for j in read_models(p, Judgment)]
    a = finalize_tables(full, judgments, {})
    b = finalize_tables([scoring_view(t) for t in full], judgments, {})
    for x, y in zip(a[:3], b[:3], strict=True):
        assert x.equals(y)
    assert a[3] == b[3]


def test_rejudge_holds_whole_logs_only_for_its_sample(monkeypatch, tmp_path):
    """The rejudge stage scores every trajectory from its scoring view and re-reads whole logs for the sample only."""
    import shutil

    import yaml

    from gcpc.analysis import rejudge as mod

    if not (ROOT / "data/processed/rejudge/llm_calls_pass2.jsonl").exists():
        pytest.skip("demo outputs not checked out (dvc checkout)")
    viewed, judged = [], []
    real_view, real_judge = mod.scoring_view, mod.judge_with
    monkeypatch.setattr(mod, "scoring_view", lambda t: viewed.append(t.trajectory_id) or real_view(t))
    monkeypatch.setattr(mod, "judge_with", lambda arm, inputs, trajs, *a, **k: judged.append(len(trajs)) or real_judge(arm, inputs, trajs, *a, **k))
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    out = tmp_path / "rejudge"
    shutil.copytree(ROOT / "data/processed/rejudge", out)  # its call stores answer every request
    monkeypatch.chdir(ROOT)
    summary = mod.rejudge(params, ROOT / "data/processed/ingest", ROOT / "data/processed/synthesize",
                          ROOT / "data/processed/judge", out, progress=False)
    n_all = sum(1 for _ in open(ROOT / "data/processed/ingest/trajectories.jsonl"))
    assert len(viewed) == n_all and judged and set(judged) == {summary["n_trajectories"]}
    assert (out / "scores.parquet").read_bytes() == (ROOT / "data/processed/rejudge/scores.parquet").read_bytes()


def test_trajectory_file_parses_on_demand_what_read_models_parses():
    from gcpc.analysis.common import TrajectoryFile
    from gcpc.analysis.controls import first_per_task, idle_trajectories

    path = ROOT / "data/processed/ingest/trajectories.jsonl"
    if not path.exists():
        pytest.skip("demo outputs not checked out (dvc checkout)")
    full = read_models(path, Trajectory)
    lazy = TrajectoryFile(path)
    assert len(lazy) == len(full) and list(lazy) == [t.trajectory_id for t in full]
    assert all(lazy[t.trajectory_id] == t and lazy.task_of(t.trajectory_id) == (t.benchmark, t.task_id) for t in full)
    assert lazy.get("no-such-id") is None and "no-such-id" not in lazy
    judged = [j for j in read_models(ROOT / "data/processed/judge/gcpc/judgments.jsonl", Judgment)]
    firsts = first_per_task(judged, lazy)
    assert len(firsts) < len(full)  # the controls stage parses these, not every log
    assert idle_trajectories([lazy[t] for t in firsts]) == idle_trajectories(
        [t for t in full if t.trajectory_id in {j.trajectory_id for j in judged}])
