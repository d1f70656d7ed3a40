"""The smoke subset (conf/data/smoke.yaml): a named part of the demo as population filters, everything else listed as excluded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.harbor import find_trial_folders
from gcpc.corpus.ingest import IngestResult, corpora_from_params, ingest, merge_results, run
from gcpc.corpus.population import apply
from gcpc.experiment import compose
from gcpc.params import load_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("smoke") / "params.yaml"
    compose(out, ["data=smoke"], conf_dir=ROOT / "conf")
    return load_params(out)["data"]


def test_smoke_subset_keeps_the_named_tasks_and_trajectories_and_lists_the_rest(smoke, tmp_path):
    pop = smoke["population"]
    pop_summary = run(smoke | {"out_dir": str(tmp_path)}, ROOT)
    tasks = [json.loads(line) for line in (tmp_path / "tasks.jsonl").read_text().splitlines() if line]
    trajs = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines() if line]
    excl = [json.loads(line) for line in (tmp_path / "exclusions.jsonl").read_text().splitlines() if line]
    assert sorted(t["task_id"] for t in tasks) == sorted(pop["tasks"])
    assert sorted(t["trajectory_id"] for t in trajs) == sorted(pop["trajectories"])
    assert pop_summary["n_trajectories"] == 4
    assert sorted(t["outcome"]["status"] for t in trajs) == ["FAIL", "FAIL", "PASS", "PASS"]
    all_trials = find_trial_folders(ROOT / "data" / "demo" / "jobs")
    all_tasks = [p for p in (ROOT / "data" / "demo" / "tasks").iterdir() if p.is_dir()]
    reasons = [e["reason"] for e in excl]
    # every other trajectory and task is an exclusion naming the filter (none disappears silently)
    dropped_trajs = [r for r in reasons if r.startswith("population filter: task") or r.startswith("population filter: trajectory")]
    dropped_tasks = [e for e in excl if e["reason"].endswith("is not in data.population.tasks") and e["path"].startswith("tasks/")]
    assert len(dropped_tasks) == len(all_tasks) - len(pop["tasks"])
    assert len(dropped_trajs) - len(dropped_tasks) == len(all_trials) - len(pop["trajectories"])


def test_subset_ids_that_name_nothing_are_errors(smoke):
    result = merge_results([ingest(c, ROOT) for c in corpora_from_params(smoke)])
    with pytest.raises(ValueError, match="tasks names ids that were not ingested: no-such-task"):
        apply(result, {"tasks": ["no-such-task"]})
    with pytest.raises(ValueError, match="trajectories names ids that were not ingested: x/y"):
        apply(result, {"trajectories": ["x/y"]})
    with pytest.raises(ValueError, match="non-empty list of ids"):
        apply(IngestResult(), {"tasks": []})
