"""Every statistic the reports print is the reference library's; every bootstrap draw is checked against it.

Point estimates: `stats.auc` / `roc_curve` / `spearman` / `krippendorff_alpha` / `signed_rank_test` /
`sign_test` and item_validity's κ return exactly (==) what scikit-learn, SciPy or `krippendorff` return.
Draws: the vectorised task-clustered bootstraps (the one part no library has) are expanded resample by
resample into their rows (tests/stats_reference.py) and each draw compared with the library on those rows.
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, spearmanr, wilcoxon
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve
from stats_reference import cluster_rows, kd_alpha, resample_rows, sk_auc, sk_kappa, sp_spearman

from gcpc.analysis import item_validity
from gcpc.analysis.stats import (
    _AlphaParts,
    _AucCells,
    _JointGroups,
    alpha_bootstrap,
    auc,
    bootstrap_result,
    cluster_codes,
    clustered_auc_bootstrap,
    clustered_mean_difference,
    clustered_spearman_bootstrap,
    krippendorff_alpha,
    paired_delta_auc,
    resample_counts,
    roc_curve,
    sign_test,
    signed_rank_test,
    spearman,
)


def _rows(seed: int, n: int = 240, n_tasks: int = 14, decimals: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    task = rng.integers(0, n_tasks, n)
    effect = rng.normal(0, 1, n_tasks)[task]
    y = (effect + rng.normal(0, 1, n) > 0).astype(int)
    return pd.DataFrame({"task": [f"t{t:02d}" for t in task], "y": y,
                         "s1": np.round(1 / (1 + np.exp(-(effect + rng.normal(0, 1, n)))), decimals),
                         "s2": rng.integers(0, 4, n) / 3, "v": np.round(rng.normal(0, 1, n), 2)})


def _close(got: float, want: float, tol: float = 1e-12) -> bool:
    return (math.isnan(got) and math.isnan(want)) or abs(got - want) <= tol


# --- point estimates: the library's value itself -------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_point_estimates_are_the_librarys(seed):
    df = _rows(seed)
    assert auc(df["s1"], df["y"]) == roc_auc_score(df["y"], df["s1"])
    for got, want in zip(roc_curve(df["y"].to_numpy(), df["s1"].to_numpy()), sk_roc_curve(df["y"].astype(bool), df["s1"]), strict=True):
        np.testing.assert_array_equal(got, want)
    assert spearman(df["s1"], df["v"]) == spearmanr(df["s1"], df["v"]).statistic
    assert clustered_auc_bootstrap(df, "s1", "y", "task", n_resamples=5).estimate == roc_auc_score(df["y"], df["s1"])
    delta = paired_delta_auc(df, "s1", "s2", "y", "task", n_resamples=5).estimate
    assert delta == roc_auc_score(df["y"], df["s1"]) - roc_auc_score(df["y"], df["s2"])
    assert clustered_spearman_bootstrap(df["s1"], df["v"], df["task"], n_resamples=5).estimate == spearmanr(df["s1"], df["v"]).statistic
    d = np.round(df["v"].to_numpy()[:40], 1)
    ref = wilcoxon(d, zero_method="wilcox")
    got = signed_rank_test(d)
    assert (got["statistic"], got["p_value"]) == (float(ref.statistic), float(ref.pvalue))
    hi, lo = int((d > 0).sum()), int((d < 0).sum())
    assert sign_test(d)["p_value"] == binomtest(hi, hi + lo, 0.5).pvalue


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_alpha_point_estimate_is_krippendorffs(level):
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 50)
    data = np.stack([np.where(rng.random(50) < 0.7, truth, rng.integers(0, 4, 50)) for _ in range(3)]).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    want = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == want
    assert alpha_bootstrap(data, [f"c{u % 7}" for u in range(50)], level, n_resamples=5).estimate == want


def test_kappa_point_estimate_is_sklearns():
    rng = np.random.default_rng(1)
    truth = np.where(rng.random(300) < 0.6, "Yes", "No")
    label = np.where(rng.random(300) < 0.8, truth, np.where(truth == "Yes", "No", "Yes"))
    want = cohen_kappa_score(truth, label)
    assert item_validity.kappa(truth, label) == pytest.approx(want, rel=0, abs=1e-15)
    rows = pd.DataFrame({"trajectory_id": np.arange(300), "task": [f"t{i % 9}" for i in range(300)],
                         "truth_per_test": truth, "label_plain": label})
    res = item_validity.tally(rows, "task", {"n_resamples": 20, "seed": 0, "ci": 0.95})
    assert res["kappa"]["estimate"] == item_validity.kappa_of_counts(*(int(((truth == t) & (label == lab)).sum())
                                                                         for t, lab in (("Yes", "Yes"), ("Yes", "No"), ("No", "Yes"), ("No", "No"))))
    assert res["kappa"]["estimate"] == pytest.approx(want, rel=0, abs=1e-15)


def test_percentile_interval_is_numpys():
    draws = np.random.default_rng(0).normal(size=501)
    draws[::50] = np.nan  # undefined resamples are left out
    res = bootstrap_result(0.1, draws, ci=0.9, n_resamples=501, seed=0, n_clusters=3)
    valid = draws[np.isfinite(draws)]
    assert (res.ci_low, res.ci_high) == tuple(np.percentile(valid, [5.0, 95.0]))
    assert res.n_valid == valid.size


# --- the clustered resampling: every draw against the library on the resample's rows --------------


def test_resample_counts_are_the_reference_draws():
    rng = np.random.default_rng(11)
    counts = resample_counts(9, 25, 11)
    for i in range(25):
        np.testing.assert_array_equal(counts[i], np.bincount(rng.integers(0, 9, size=9), minlength=9))


@pytest.mark.parametrize("seed", range(3))
def test_every_auc_draw_is_roc_auc_score_of_its_resample(seed):
    df = _rows(seed, decimals=1 + seed)
    codes, k = cluster_codes(df["task"])
    groups = cluster_rows(df, "task")
    counts = resample_counts(k, 120, seed)
    s, y = df["s1"].to_numpy(), df["y"].to_numpy()
    cells = _AucCells(s, y, codes, k)
    pair_path, cell_path = cells.auc(counts), cells.auc_by_cells(counts)
    assert cells._m is not None  # both paths exercised
    s2 = df["s2"].to_numpy()
    delta = paired_delta_auc(df, "s1", "s2", "y", "task", n_resamples=120, seed=seed)
    clustered = clustered_auc_bootstrap(df, "s1", "y", "task", n_resamples=120, seed=seed)
    want_delta = []
    for i in range(counts.shape[0]):
        rows = resample_rows(groups, counts[i])
        want = sk_auc(y[rows], s[rows])
        assert _close(pair_path[i], want) and _close(cell_path[i], want), (i, pair_path[i], cell_path[i], want)
        want_delta.append(want - sk_auc(y[rows], s2[rows]))
    want_delta = np.array(want_delta)
    np.testing.assert_allclose(clustered.draws, pair_path[np.isfinite(pair_path)], rtol=0, atol=0)
    np.testing.assert_allclose(delta.draws, want_delta[np.isfinite(want_delta)], rtol=0, atol=1e-12)


def test_auc_draws_skip_single_class_resamples():
    df = pd.DataFrame({"task": list("aabcd"), "s": [0.1, 0.9, 0.8, 0.7, 0.6], "y": [0, 1, 1, 1, 1]})
    res = clustered_auc_bootstrap(df, "s", "y", "task", n_resamples=200, seed=0)
    groups, counts = cluster_rows(df, "task"), resample_counts(4, 200, 0)
    want = [sk_auc(df["y"].to_numpy()[r], df["s"].to_numpy()[r]) for r in (resample_rows(groups, c) for c in counts)]
    assert 0 < res.n_valid == int(np.isfinite(want).sum()) < 200


@pytest.mark.parametrize("seed", range(3))
def test_every_spearman_draw_is_spearmanr_of_its_resample(seed):
    df = _rows(seed + 10, n=200, n_tasks=12, decimals=seed)
    x = df["s1"].to_numpy()
    yv = df["v"].to_numpy() if seed % 2 else df["s2"].to_numpy()
    codes, k = cluster_codes(df["task"])
    groups = cluster_rows(df, "task")
    counts = resample_counts(k, 100, seed)
    got = _JointGroups(x, yv, codes, k).draws(counts)
    for i in range(counts.shape[0]):
        rows = resample_rows(groups, counts[i])
        want = sp_spearman(x[rows], yv[rows])
        assert _close(got[i], want, 1e-12), (i, got[i], want)
    boot = clustered_spearman_bootstrap(x, yv, df["task"], n_resamples=100, seed=seed)
    np.testing.assert_array_equal(boot.draws, got[np.isfinite(got)])
    const = _JointGroups(np.ones(x.size), yv, codes, k).draws(counts)
    assert np.isnan(const).all()  # a constant variable: every draw undefined, as scipy says (NaN)


@pytest.mark.parametrize("level", ["nominal", "interval"])
@pytest.mark.parametrize("seed", range(2))
def test_every_alpha_draw_is_krippendorff_of_its_resample(level, seed):
    rng = np.random.default_rng(seed)
    n_units = 45
    truth = rng.integers(0, 4, n_units)
    data = np.stack([np.where(rng.random(n_units) < 0.75, truth, rng.integers(0, 4, n_units)) for _ in range(3)]).astype(float)
    data[rng.random(data.shape) < 0.15] = np.nan
    clusters = np.array([f"task{u % 9}" for u in range(n_units)])
    codes, k = cluster_codes(clusters)
    groups = [np.flatnonzero(codes == j) for j in range(k)]
    counts = resample_counts(k, 80, seed)
    got = _AlphaParts(data, level, codes, k).alpha(counts)
    for i in range(counts.shape[0]):
        want = kd_alpha(data[:, resample_rows(groups, counts[i])], level)
        assert _close(got[i], want, 1e-10), (i, got[i], want)
    boot = alpha_bootstrap(data, clusters, level, n_resamples=80, seed=seed)
    np.testing.assert_array_equal(boot.draws, got[np.isfinite(got)])


@pytest.mark.parametrize("seed", range(2))
def test_every_kappa_draw_is_cohen_kappa_score_of_its_resample(seed):
    rng = np.random.default_rng(seed)
    n = 260
    truth = np.where(rng.random(n) < 0.55, "Yes", "No")
    label = np.where(rng.random(n) < 0.12, "Abstain", np.where(rng.random(n) < 0.75, truth, np.where(truth == "Yes", "No", "Yes")))
    rows = pd.DataFrame({"trajectory_id": np.arange(n), "task": [f"t{t:02d}" for t in rng.integers(0, 13, n)],
                         "truth_per_test": truth, "label_plain": label})
    codes, k = cluster_codes(rows["task"])
    per_cluster = item_validity.cluster_cell_counts(rows["truth_per_test"], rows["label_plain"], codes, k)
    counts = resample_counts(k, 60, seed)
    draws = item_validity.statistics(counts.astype(float) @ per_cluster)
    groups = cluster_rows(rows, "task")
    for i in range(counts.shape[0]):
        r = resample_rows(groups, counts[i])
        t, lab = truth[r], label[r]
        decided = lab != "Abstain"
        want = sk_kappa(t[decided], lab[decided])
        assert _close(draws["kappa"][i], want, 1e-12), (i, draws["kappa"][i], want)
        assert _close(draws["agreement"][i], float(np.mean(t[decided] == lab[decided])), 1e-12)


def test_every_mean_difference_draw_is_numpys_on_its_resample():
    df = _rows(2)
    codes, k = cluster_codes(df["task"])
    groups = cluster_rows(df, "task")
    res = clustered_mean_difference(df["v"], df["y"], df["task"], n_resamples=100, seed=5)
    v, y = df["v"].to_numpy(), df["y"].to_numpy().astype(bool)
    want = []
    for c in resample_counts(k, 100, 5):
        r = resample_rows(groups, c)
        want.append(v[r][y[r]].mean() - v[r][~y[r]].mean() if y[r].any() and not y[r].all() else np.nan)
    want = np.array(want)
    np.testing.assert_allclose(res.draws, want[np.isfinite(want)], rtol=0, atol=1e-12)
    assert res.estimate == pytest.approx(v[y].mean() - v[~y].mean(), rel=0, abs=1e-15)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_alpha_above_the_package_bound_is_the_packages_value(level, monkeypatch):
    """Where krippendorff.alpha would need (units, V, V) arrays too large, the per-cluster sums give its value."""
    import gcpc.analysis.stats as stats

    rng = np.random.default_rng(5)
    truth = np.round(rng.random(120), 2) if level == "interval" else rng.integers(0, 4, 120)
    data = np.stack([np.where(rng.random(120) < 0.7, truth, np.round(rng.random(120), 2)) for _ in range(3)]).astype(float)
    data[rng.random(data.shape) < 0.1] = np.nan
    want = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert stats.krippendorff_alpha(data, level) == want  # under the bound: the package itself
    monkeypatch.setattr(stats, "KRIPPENDORFF_MAX_CELLS", 10)
    assert stats.krippendorff_alpha(data, level) == pytest.approx(want, rel=0, abs=1e-12)
