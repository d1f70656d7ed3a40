"""The smoke subset (conf/data/smoke.yaml): a named part of the demo, everything else listed as excluded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gcpc.corpus.harbor import find_trial_folders
from gcpc.corpus.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]


def smoke_cfg() -> dict:
    return yaml.safe_load((ROOT / "conf" / "data" / "smoke.yaml").read_text())


def test_smoke_subset_keeps_the_named_tasks_and_trials_and_lists_the_rest():
    cfg = smoke_cfg()
    result = ingest(cfg, ROOT)
    assert sorted(t.task_id for t in result.tasks) == sorted(cfg["include_tasks"])
    assert sorted(t.trial for t in result.trajectories) == sorted(cfg["include_trials"])
    assert sorted(t.outcome.status for t in result.trajectories) == ["FAIL", "FAIL", "PASS", "PASS"]
    all_trials = find_trial_folders(ROOT / "data" / "demo" / "jobs")
    all_tasks = [p for p in (ROOT / "data" / "demo" / "tasks").iterdir() if p.is_dir()]
    reasons = [e.reason for e in result.exclusions]
    assert reasons.count("trial not in data.include_trials (named subset)") == len(all_trials) - len(cfg["include_trials"])
    assert reasons.count("task not in data.include_tasks (named subset)") == len(all_tasks) - len(cfg["include_tasks"])


def test_subset_names_that_do_not_exist_are_errors():
    with pytest.raises(ValueError, match="include_tasks names tasks that do not exist: no-such-task"):
        ingest(smoke_cfg() | {"include_tasks": ["no-such-task"]}, ROOT)
    with pytest.raises(ValueError, match="include_trials names trial folders that do not exist"):
        ingest(smoke_cfg() | {"include_trials": ["x__y"]}, ROOT)
    with pytest.raises(ValueError, match="non-empty list"):
        ingest(smoke_cfg() | {"include_tasks": []}, ROOT)
