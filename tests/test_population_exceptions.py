"""Population (issue 23, item 8): a Harbor trial scored 0.0 that recorded exception_info (an agent timeout)
is an official FAIL, kept with the exception recorded, as the paper's population is every trajectory with
a binary reward. Dropping such trials is the named, off-by-default filter `population.exclude_exceptions`."""

from __future__ import annotations

import pytest
from test_corpus_harbor import make_task, make_trial, stream_log

from gcpc.corpus.ingest import ingest, population
from gcpc.corpus.population import apply, check

TIMEOUT = {"exception_type": "AgentTimeoutError", "exception_message": "Agent execution timed out after 900.0 seconds"}
CORPUS = {"name": "t", "benchmark": "skillsbench", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}


def _corpus(tmp_path):
    make_task(tmp_path)
    make_trial(tmp_path, "job1", "demo-task__ok")
    make_trial(tmp_path, "job1", "demo-task__late", log=stream_log("41"), reward=0.0, exception=TIMEOUT)
    make_trial(tmp_path, "job1", "demo-task__broken", log=stream_log("40"), verifier_result=False, exception=TIMEOUT)
    return ingest(CORPUS, tmp_path)


def test_a_timed_out_trial_scored_zero_stays_a_fail_with_the_exception_recorded(tmp_path):
    result = _corpus(tmp_path)
    by_id = {t.trajectory_id: t for t in result.trajectories}
    late = by_id["skillsbench/job1/demo-task__late"].outcome
    assert late.status == "FAIL" and late.reward == 0.0  # before: 'other', left out of every analysis
    assert late.reason == "exception_info set (AgentTimeoutError: Agent execution timed out after 900.0 seconds)"
    assert by_id["skillsbench/job1/demo-task__broken"].outcome.status == "other"  # no reward: not in the population
    assert population(result)["counts"] == {"skillsbench": {"with_skills": {"PASS": 1, "FAIL": 1, "other": 1}}}


def test_exclude_exceptions_is_a_named_filter_off_by_default(tmp_path):
    result = _corpus(tmp_path)
    assert len(apply(result, {}).trajectories) == len(apply(result, {"exclude_exceptions": False}).trajectories) == 3
    kept = apply(result, {"exclude_exceptions": True})
    assert sorted(t.trajectory_id for t in kept.trajectories) == ["skillsbench/job1/demo-task__broken", "skillsbench/job1/demo-task__ok"]
    (why,) = [e.reason for e in kept.exclusions if e.path == "jobs/job1/demo-task__late"]
    assert why.startswith("population filter: exclude_exceptions (official FAIL with exception_info set (AgentTimeoutError")
    with pytest.raises(ValueError, match=r"data\.population\.exclude_exceptions: must be true or false"):
        check({"exclude_exceptions": "yes"})
