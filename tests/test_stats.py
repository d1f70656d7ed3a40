"""Tests for gcpc.analysis.stats: AUC against sklearn, and the task-clustered bootstrap (tests/stats_reference.py
writes the resampling out row by row)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from stats_reference import clustered_bootstrap

from gcpc.analysis.stats import (
    UndefinedStatistic,
    auc,
    clustered_auc_bootstrap,
    paired_delta_auc,
)


@pytest.mark.parametrize("seed", range(6))
def test_auc_matches_sklearn_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    scores = rng.integers(0, 5, size=n) / 4  # coarse k/n scores: lots of ties
    labels = rng.integers(0, 2, size=n)
    labels[:2] = [0, 1]
    assert auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert auc(scores, labels.astype(bool)) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_auc_hand_examples():
    assert auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert auc([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0]) == 0.0
    assert auc([0.5] * 6, [0, 1, 0, 1, 1, 0]) == 0.5
    # one pos-neg tie out of four pairs, three wins: (3 + 0.5) / 4
    assert auc([0.5, 1.0, 0.5, 0.0], [True, True, False, False]) == pytest.approx(0.875)


def test_auc_errors():
    with pytest.raises(ValueError, match="single class"):
        auc([0.1, 0.2], [1, 1])
    with pytest.raises(UndefinedStatistic):
        auc([0.1, 0.2], [0, 0])
    with pytest.raises(ValueError, match="NaN"):
        auc([0.1, np.nan, 0.3], [0, 1, 1])
    with pytest.raises(ValueError, match="length"):
        auc([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match="binary"):
        auc([0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(ValueError, match="NaN"):
        auc([0.1, 0.2, 0.3], [0, 1, np.nan])


def _clustered_frame(n_tasks=30, per_task=8, seed=0, task_effect=2.0):
    """Rows within a task share a task effect, so clusters are far from independent."""
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), per_task)
    effect = rng.normal(0, task_effect, n_tasks)[task]
    label = (effect + rng.normal(0, 0.5, task.size) > 0).astype(int)
    score = np.round(1 / (1 + np.exp(-(effect + rng.normal(0, 1.5, task.size)))), 1)
    return pd.DataFrame({"task_id": [f"t{t:03d}" for t in task], "score": score, "label": label,
                         "noise": rng.random(task.size)})


def test_bootstrap_deterministic_and_seed_sensitive():
    df = _clustered_frame()
    a = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=200, seed=7)
    b = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=200, seed=7)
    c = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=200, seed=8)
    assert (a.estimate, a.ci_low, a.ci_high, a.n_valid) == (b.estimate, b.ci_low, b.ci_high, b.n_valid)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.estimate == c.estimate == auc(df["score"], df["label"])
    # row order does not change the draws: clusters are indexed in sorted order
    d = clustered_auc_bootstrap(df.sample(frac=1.0, random_state=3), "score", "label", "task_id", n_resamples=200, seed=7)
    np.testing.assert_allclose(d.draws, a.draws)


def test_bootstrap_resamples_whole_clusters():
    df = _clustered_frame(n_tasks=12, per_task=1)
    sizes = {f"t{t:03d}": 1 + t for t in range(12)}  # distinct cluster sizes
    df = df.loc[df.index.repeat([sizes[t] for t in df["task_id"]])].reset_index(drop=True)
    seen = []

    def stat(sample: pd.DataFrame) -> float:
        counts = sample["task_id"].value_counts()
        # every cluster appears a whole number of times its own size, and as many clusters as exist are drawn
        for task, cnt in counts.items():
            assert cnt % sizes[task] == 0
        assert sum(cnt // sizes[t] for t, cnt in counts.items()) == 12
        seen.append(len(sample))
        return float(len(sample))

    res = clustered_bootstrap(df, "task_id", stat, n_resamples=50, seed=1)
    assert res.n_valid == 50 and len(seen) == 51  # estimate + 50 resamples
    assert len(set(seen)) > 1  # sample size varies: whole clusters, not a fixed number of rows


def test_cluster_ci_wider_than_row_ci_under_strong_clustering():
    df = _clustered_frame(n_tasks=20, per_task=20, task_effect=3.0, seed=2)
    stat = lambda s: float(s["label"].mean())  # noqa: E731
    clustered = clustered_bootstrap(df, "task_id", stat, n_resamples=400, seed=0)
    rowwise = clustered_bootstrap(df.assign(row=np.arange(len(df))), "row", stat, n_resamples=400, seed=0)
    assert (clustered.ci_high - clustered.ci_low) > 2 * (rowwise.ci_high - rowwise.ci_low)


def test_bootstrap_percentile_ci_matches_numpy_and_contains_estimate():
    df = _clustered_frame(n_tasks=40, per_task=5, seed=4)
    res = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=300, seed=0, ci=0.9)
    assert res.draws.size == res.n_valid
    lo, hi = np.quantile(res.draws, [0.05, 0.95])
    assert res.ci_low == pytest.approx(lo) and res.ci_high == pytest.approx(hi)
    from scipy.stats import scoreatpercentile

    assert res.ci_low == pytest.approx(scoreatpercentile(res.draws, 5))
    assert res.ci_low <= res.estimate <= res.ci_high
    assert res.share_positive == pytest.approx(np.mean(res.draws > 0))


def test_bootstrap_skips_undefined_resamples():
    # Only one task has a FAIL: resamples that miss it have a single class and are skipped.
    df = pd.DataFrame({"task_id": ["a", "a", "b", "c", "d"], "score": [0.1, 0.9, 0.8, 0.7, 0.6],
                       "label": [0, 1, 1, 1, 1]})
    res = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=300, seed=0)
    assert 0 < res.n_valid < 300
    assert res.n_skipped == 300 - res.n_valid
    assert res.to_dict()["n_skipped"] == res.n_skipped


def test_bootstrap_input_validation():
    df = _clustered_frame(n_tasks=5, per_task=4)
    with pytest.raises(ValueError, match="column 'nope'"):
        clustered_auc_bootstrap(df, "score", "label", "nope", n_resamples=10)
    with pytest.raises(ValueError, match="n_resamples"):
        clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=0)
    with pytest.raises(ValueError, match="ci"):
        clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=10, ci=95)
    with pytest.raises(UndefinedStatistic):
        clustered_auc_bootstrap(df.assign(label=1), "score", "label", "task_id", n_resamples=10)


def test_paired_delta_identical_scores_is_exactly_zero():
    df = _clustered_frame(seed=5).assign(copy=lambda d: d["score"])
    res = paired_delta_auc(df, "score", "copy", "label", "task_id", n_resamples=200, seed=0)
    assert res.estimate == 0.0 and res.ci_low == 0.0 and res.ci_high == 0.0
    assert res.share_positive == 0.0


def test_paired_delta_uses_same_resamples_as_single_auc():
    df = _clustered_frame(seed=6)
    a = clustered_auc_bootstrap(df, "score", "label", "task_id", n_resamples=100, seed=3)
    b = clustered_auc_bootstrap(df, "noise", "label", "task_id", n_resamples=100, seed=3)
    d = paired_delta_auc(df, "score", "noise", "label", "task_id", n_resamples=100, seed=3)
    assert d.estimate == pytest.approx(a.estimate - b.estimate)
    np.testing.assert_allclose(d.draws, a.draws - b.draws)
    assert d.share_positive > 0.9  # informative score beats noise
    with pytest.raises(ValueError, match="NaN"):
        paired_delta_auc(df.assign(noise=np.nan), "score", "noise", "label", "task_id", n_resamples=10)
