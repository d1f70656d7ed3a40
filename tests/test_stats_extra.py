"""Statistics added for RQ1-RQ5, checked against reference implementations and hand-computed cases.

References: scikit-learn roc_auc_score, scipy spearmanr / wilcoxon / binomtest, the `krippendorff`
package, and the row-level `clustered_bootstrap` of tests/stats_reference.py for every vectorized
bootstrap (same seed => same task resamples => same draws; tests/test_stats_library.py checks each draw).
"""

from __future__ import annotations

import collections

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, rankdata, spearmanr, wilcoxon
from stats_reference import auc_statistic, clustered_bootstrap

from gcpc.analysis.stats import (
    UndefinedStatistic,
    alpha_bootstrap,
    auc,
    clustered_auc_bootstrap,
    clustered_mean_difference,
    clustered_spearman_bootstrap,
    krippendorff_alpha,
    paired_delta_auc,
    preference_agreement,
    reliability_matrix,
    resample_counts,
    sign_test,
    signed_rank_test,
    spearman,
)


def _frame(seed: int, n_tasks: int = 15, n: int = 180) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    task = rng.integers(0, n_tasks, n)
    effect = rng.normal(0, 1, n_tasks)[task]
    label = (effect + rng.normal(0, 1, n) > 0).astype(int)
    return pd.DataFrame({"task": [f"t{t:02d}" for t in task], "y": label,
                         "s1": np.round(1 / (1 + np.exp(-(effect + rng.normal(0, 1, n)))), 1),
                         "s2": rng.integers(0, 4, n) / 3, "v": rng.normal(0, 1, n)})


@pytest.mark.parametrize("seed", range(4))
def test_fast_auc_bootstrap_equals_generic_bootstrap(seed):
    df = _frame(seed)
    fast = clustered_auc_bootstrap(df, "s1", "y", "task", n_resamples=150, seed=seed)
    slow = clustered_bootstrap(df, "task", auc_statistic("s1", "y"), n_resamples=150, seed=seed)
    assert fast.estimate == pytest.approx(slow.estimate, abs=1e-12)
    assert fast.n_valid == slow.n_valid
    np.testing.assert_allclose(fast.draws, slow.draws, rtol=0, atol=1e-12)
    assert (fast.ci_low, fast.ci_high) == pytest.approx((slow.ci_low, slow.ci_high), abs=1e-12)


def test_fast_paired_delta_equals_generic_delta_statistic():
    df = _frame(7)
    a, b = auc_statistic("s1", "y"), auc_statistic("s2", "y")
    slow = clustered_bootstrap(df, "task", lambda d: a(d) - b(d), n_resamples=120, seed=3)
    fast = paired_delta_auc(df, "s1", "s2", "y", "task", n_resamples=120, seed=3)
    np.testing.assert_allclose(fast.draws, slow.draws, atol=1e-12)
    assert fast.share_positive == pytest.approx(slow.share_positive)


def test_fast_auc_bootstrap_skips_single_class_resamples_like_generic():
    df = pd.DataFrame({"task": list("aabcd"), "s": [0.1, 0.9, 0.8, 0.7, 0.6], "y": [0, 1, 1, 1, 1]})
    fast = clustered_auc_bootstrap(df, "s", "y", "task", n_resamples=200, seed=0)
    slow = clustered_bootstrap(df, "task", auc_statistic("s", "y"), n_resamples=200, seed=0)
    assert 0 < fast.n_valid == slow.n_valid < 200
    with pytest.raises(UndefinedStatistic):
        clustered_auc_bootstrap(df.assign(y=1), "s", "y", "task", n_resamples=10)


def test_resample_counts_are_the_clusters_clustered_bootstrap_draws():
    df = pd.DataFrame({"task": [f"t{i}" for i in range(9)]})
    seen = []

    def stat(sample: pd.DataFrame) -> float:
        seen.append(sample["task"].value_counts().reindex(df["task"], fill_value=0).to_numpy())
        return 0.0

    clustered_bootstrap(df, "task", stat, n_resamples=25, seed=11)
    np.testing.assert_array_equal(np.stack(seen[1:]), resample_counts(9, 25, 11))


def test_clustered_mean_difference_equals_generic():
    df = _frame(2)
    slow = clustered_bootstrap(df, "task", lambda d: d.loc[d.y == 1, "v"].mean() - d.loc[d.y == 0, "v"].mean()
                               if d.y.nunique() == 2 else np.nan, n_resamples=100, seed=5)
    fast = clustered_mean_difference(df["v"], df["y"], df["task"], n_resamples=100, seed=5)
    assert fast.estimate == pytest.approx(df.loc[df.y == 1, "v"].mean() - df.loc[df.y == 0, "v"].mean())
    np.testing.assert_allclose(fast.draws, slow.draws, atol=1e-12)
    with pytest.raises(UndefinedStatistic):
        clustered_mean_difference([1.0, 2.0], [1, 1], ["a", "b"], n_resamples=5)


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 80).astype(float)
    y = x + rng.integers(-3, 4, 80)
    assert spearman(x, y) == spearmanr(x, y).statistic


def test_spearman_hand_cases_and_errors():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x: 1,2,3 ; y: 1.5,1.5,3 -> Pearson of (1,2,3) and (1.5,1.5,3) = 0.866...
    assert spearman([1, 2, 3], [5, 5, 9]) == pytest.approx(np.sqrt(3) / 2)
    with pytest.raises(UndefinedStatistic):
        spearman([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        spearman([1, np.nan, 2], [1, 2, 3])
    with pytest.raises(UndefinedStatistic, match="two observations"):
        spearman([1.0], [2.0])


def test_clustered_spearman_bootstrap_equals_generic():
    df = _frame(4)
    slow = clustered_bootstrap(df, "task", lambda d: spearmanr(d["s1"], d["v"]).statistic, n_resamples=80, seed=2)
    fast = clustered_spearman_bootstrap(df["s1"], df["v"], df["task"], n_resamples=80, seed=2)
    assert fast.estimate == pytest.approx(slow.estimate, abs=1e-12)
    np.testing.assert_allclose(fast.draws, slow.draws, atol=1e-10)


@pytest.mark.parametrize("level", ["nominal", "interval"])
@pytest.mark.parametrize("seed", range(4))
def test_krippendorff_alpha_matches_package(level, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, 60)
    data = np.stack([np.where(rng.random(60) < 0.7, truth, rng.integers(0, 5, 60)) for _ in range(3)]).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(data, level)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(ref, abs=1e-10)


def test_krippendorff_alpha_hand_cases():
    # nominal: units (1,1) (1,2) (2,2): n=6, one disagreeing unit -> 1 - 5*2/18 = 4/9
    assert krippendorff_alpha([[1, 1, 2], [1, 2, 2]], "nominal") == pytest.approx(4 / 9)
    # interval: values 1,2,3 / 1,2,4 -> 1 - 5*2/82
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 4]], "interval") == pytest.approx(1 - 10 / 82)
    assert krippendorff_alpha([[0, 1, 2, 1], [0, 1, 2, 1], [0, 1, np.nan, 1]], "nominal") == 1.0
    with pytest.raises(UndefinedStatistic, match="identical"):
        krippendorff_alpha([[1, 1], [1, 1]], "nominal")
    with pytest.raises(UndefinedStatistic, match="two or more"):
        krippendorff_alpha([[1, np.nan], [np.nan, 2]], "interval")
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1, 2], [1, 2]], "ordinal")


def test_alpha_bootstrap_resamples_unit_clusters_like_generic():
    rng = np.random.default_rng(9)
    n_units = 40
    clusters = np.array([f"task{u % 8}" for u in range(n_units)])
    truth = rng.integers(0, 3, n_units)
    data = np.stack([np.where(rng.random(n_units) < 0.75, truth, rng.integers(0, 3, n_units)) for _ in range(3)]).astype(float)
    frame = pd.DataFrame({"task": clusters, "col": np.arange(n_units)})

    def stat(sample: pd.DataFrame) -> float:
        return float(krippendorff.alpha(reliability_data=data[:, sample["col"].to_numpy()], level_of_measurement="nominal"))

    slow = clustered_bootstrap(frame, "task", stat, n_resamples=60, seed=4)
    fast = alpha_bootstrap(data, clusters, "nominal", n_resamples=60, seed=4)
    assert fast.estimate == pytest.approx(slow.estimate, abs=1e-10)
    np.testing.assert_allclose(fast.draws, slow.draws, atol=1e-10)


def test_reliability_matrix_layout_and_errors():
    long = pd.DataFrame({"unit": ["u2", "u1", "u1", "u2", "u3"], "coder": ["b", "a", "b", "a", "a"],
                         "label": ["No", "Yes", "Yes", "Abstain", "No"]})
    data, keys = reliability_matrix(long, "unit", "coder", "label", codes={"Yes": 0, "No": 1, "Abstain": 2})
    assert keys["unit"].tolist() == ["u1", "u2", "u3"]
    np.testing.assert_array_equal(data, np.array([[0, 2, 1], [0, 1, np.nan]]))
    with pytest.raises(ValueError, match="unknown label"):
        reliability_matrix(long.assign(label="Maybe"), "unit", "coder", "label", codes={"Yes": 0})
    with pytest.raises(ValueError, match="more than one value"):
        reliability_matrix(pd.concat([long, long.iloc[:1]]), "unit", "coder", "label", codes={"Yes": 0, "No": 1, "Abstain": 2})


@pytest.mark.parametrize("seed", range(4))
def test_signed_rank_test_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.1, 0.3, 25), 1)
    ref = wilcoxon(d[d != 0], zero_method="wilcox")
    ours = signed_rank_test(d[d != 0])
    assert ours["p_value"] == pytest.approx(ref.pvalue) and ours["statistic"] == pytest.approx(ref.statistic)
    full = signed_rank_test(d)
    assert full["n"] == 25 and full["n_nonzero"] == int((d != 0).sum())


def test_signed_rank_test_is_scipys_wilcoxon_bit_for_bit():
    """Every regime of scipy's method 'auto' (exact up to 50 without ties/zeros, sign-flip enumeration
    up to 13 with them, normal approximation otherwise), with zeros kept in the input as the stage
    passes them: the same floats, not just close ones. Random draws cover the small sizes (the
    enumeration reached through ties alone, zeros alone and both) and both sides of 50; the
    enumeration's upper boundary (13 flips, 14 normal) gets one case each, since one 2**13
    enumeration costs seconds."""
    rng = np.random.default_rng(0)
    draws = {"continuous": lambda n: rng.normal(0.2, 1, n), "ties": lambda n: np.round(rng.normal(0.1, 0.3, n), 1),
             "zeros": lambda n: np.round(rng.normal(0.0, 0.2, n), 1), "integers": lambda n: rng.integers(-3, 4, n).astype(float)}
    plain13 = np.arange(1.0, 14.0) * np.array([1, -1, 1, 1, -1, 1, 1, 1, -1, 1, 1, -1, 1])
    zero13 = np.where(np.abs(plain13) == 4, 0.0, plain13)
    cases = [draw(n) for draw in draws.values() for n in [1, 2, 3, 5, 8, 14, 20, 49, 50, 51, 64] for _ in range(6)]
    cases += [plain13, zero13, np.append(zero13, 14.0)]  # 13 plain: exact; 13 with a zero: flips; 14: normal
    regimes, flips_via = collections.Counter(), collections.Counter()
    for d in cases:
        n = d.size
        if not (d != 0).any():
            continue
        ref = wilcoxon(d, zero_method="wilcox")
        ours = signed_rank_test(d)
        assert ours["p_value"] == float(ref.pvalue), (n, d.tolist())
        assert ours["statistic"] == float(ref.statistic), (n, d.tolist())
        nz = d[d != 0]
        tied, zeros = len(np.unique(np.abs(nz))) < nz.size, nz.size < n
        regimes["exact" if n <= 50 and not (tied or zeros) else "flips" if n <= 13 else "normal"] += 1
        if n <= 13 and (tied or zeros):
            flips_via[(tied, zeros)] += 1
    assert min(regimes.values()) >= 20 and len(regimes) == 3, regimes
    assert len(flips_via) == 3 and max(d.size for d in cases if d.size <= 13 and (d == 0).any()) == 13, flips_via


def test_signed_rank_and_sign_test_hand_cases():
    # all five differences positive: exact two-sided p = 2 / 2**5
    assert signed_rank_test([1, 2, 3, 4, 5])["p_value"] == pytest.approx(0.0625)
    assert signed_rank_test([0, 0, 0])["skipped"] == "no non-zero difference"
    s = sign_test([0.2] * 9 + [-0.1] + [0.0] * 3)
    assert (s["higher"], s["lower"], s["tied"], s["n"]) == (9, 1, 3, 13)
    assert s["p_value"] == pytest.approx(2 * 11 / 1024)  # P(X<=1)+P(X>=9), X~Bin(10, .5)
    assert s["median_delta"] == pytest.approx(0.2)
    assert sign_test([0.0, 0.0])["p_value"] is None


@pytest.mark.parametrize("seed", range(3))
def test_sign_test_matches_binomtest(seed):
    d = np.random.default_rng(seed).integers(-2, 3, 40).astype(float)
    hi, lo = int((d > 0).sum()), int((d < 0).sum())
    assert sign_test(d)["p_value"] == binomtest(hi, hi + lo, 0.5).pvalue


def test_preference_agreement_hand_case():
    res = preference_agreement([0.9, 0.2, 0.5, 0.5, 0.1, np.nan], [0.1, 0.8, 0.5, 0.2, 0.3, 0.4],
                               ["a", "a", "b", "tie", "b", "a"])
    # pair 1 agrees, pair 2 disagrees, pair 3 is a method tie, pair 4 a human tie, pair 5 agrees, pair 6 unscored
    assert res == {"n_pairs": 6, "n_unscored": 1, "n_human_ties": 1, "n_method_ties": 1, "n_comparable": 3,
                   "n_agree": 2, "agreement": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="preferred"):
        preference_agreement([1.0], [0.0], ["left"])


def test_auc_of_fast_path_matches_sklearn_point_estimate():
    from sklearn.metrics import roc_auc_score

    df = _frame(12)
    assert clustered_auc_bootstrap(df, "s2", "y", "task", n_resamples=5).estimate == pytest.approx(roc_auc_score(df.y, df.s2))
    assert auc(df["s2"], df["y"]) == pytest.approx(roc_auc_score(df.y, df.s2))


@pytest.mark.parametrize("seed", range(4))
def test_auc_pair_matrix_path_is_bit_identical_to_cell_sum(seed):
    """The K x K quadratic form gives exactly the per-level cell sum (all terms integers or halves)."""
    from gcpc.analysis.stats import _AucCells, cluster_codes

    rng = np.random.default_rng(seed)
    n = 3000
    task = rng.integers(0, 40, n)
    s = np.round(rng.random(n), 1 + seed % 3)  # coarse (many ties) to fine (few)
    y = rng.random(n) < 0.3 + 0.4 * s
    codes, k = cluster_codes(pd.Series(task).map(lambda t: f"t{t:02d}"))
    cells = _AucCells(s, y, codes, k)
    counts = resample_counts(k, 300, seed)
    fast = cells.auc(counts)
    assert cells._m is not None  # the pair-matrix path was taken
    np.testing.assert_array_equal(fast, cells.auc_by_cells(counts))
    df = pd.DataFrame({"task": pd.Series(task).map(lambda t: f"t{t:02d}"), "s": s, "y": y.astype(int)})
    slow = clustered_bootstrap(df, "task", auc_statistic("s", "y"), n_resamples=300, seed=seed)
    np.testing.assert_allclose(fast[np.isfinite(fast)], slow.draws, rtol=0, atol=1e-12)


def test_resample_counts_shared_and_read_only():
    a = resample_counts(7, 50, 3)
    assert resample_counts(7, 50, 3) is a
    with pytest.raises(ValueError):
        a[0, 0] = 5
    assert not np.array_equal(resample_counts(7, 50, 4), a)


@pytest.mark.parametrize("seed", range(3))
def test_cluster_ranks_are_rankdata_of_each_resample(seed):
    """Tie-group x cluster ranks, gathered to rows, are exactly scipy's average ranks of the resample's rows."""
    from stats_reference import resample_rows

    from gcpc.analysis.stats import _ClusterRanks, _RankPlan, cluster_codes

    rng = np.random.default_rng(seed)
    n = 300
    x = np.round(rng.random(n), seed)  # 0 decimals: two levels; 2: many
    codes, k = cluster_codes(pd.Series(rng.integers(0, 17, n)))
    counts = resample_counts(k, 40, seed)
    plan = _RankPlan(x)
    ranks = _ClusterRanks(plan, codes, k).group_ranks(counts.astype(float))[1][:, plan.group]
    groups = [np.flatnonzero(codes == j) for j in range(k)]
    for i in range(counts.shape[0]):
        rows = resample_rows(groups, counts[i])
        np.testing.assert_array_equal(ranks[i][rows], rankdata(x[rows]))


@pytest.mark.parametrize("seed", range(6))
def test_roc_curve_equals_sklearn_bit_for_bit(seed):
    from sklearn.metrics import roc_curve as sk_roc_curve

    from gcpc.analysis.stats import roc_curve

    rng = np.random.default_rng(seed)
    n = [2, 3, 40, 500, 2000, 7][seed]
    s = np.round(rng.random(n), [0, 1, 1, 2, 6, 3][seed])  # coarse (many ties) to continuous
    y = rng.random(n) < 0.4
    y[0], y[-1] = True, False
    for got, want in zip(roc_curve(y, s), sk_roc_curve(y, s), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(UndefinedStatistic):
        roc_curve(np.ones(4, bool), s[:4] if n >= 4 else np.arange(4.0))


def test_auc_draws_cached_by_content():
    """Equal cells and resamples give the cached draws (the very array computed); other scores do not hit."""
    from gcpc.analysis.stats import _AUC_DRAWS, _AucCells, cluster_codes

    rng = np.random.default_rng(7)
    s, y = np.round(rng.random(300), 1), rng.random(300) < 0.5
    codes, k = cluster_codes(pd.Series(rng.integers(0, 11, 300)))
    counts = resample_counts(k, 40, 1)
    first = _AucCells(s, y, codes, k).auc(counts)
    again = _AucCells(s.copy(), y.copy(), codes.copy(), k).auc(counts)
    assert again is first and not first.flags.writeable
    np.testing.assert_array_equal(first, _AucCells(s, y, codes, k).auc_by_cells(counts))
    other = _AucCells(s[::-1].copy(), y, codes, k).auc(counts)
    assert other is not first and not np.array_equal(other, first)
    assert len(_AUC_DRAWS) <= 256


def test_write_csv_equals_pandas_to_csv_byte_for_byte(tmp_path):
    from gcpc.analysis.common import write_csv

    frame = pd.DataFrame({
        "id": pd.array(["a/b→c", 'quote "x"', "comma, here", "line\nbreak", "", None], dtype="string"),
        "obj": ["x", "y", None, "z", " w ", "v"],
        "f": [0.1234567891, np.nan, 1e-9, -2.0, 1e20, 0.5],
        "i": np.arange(6, dtype=np.int64),
        "b": [True, False, True, True, False, False],
    })
    for f in (frame, frame.iloc[:0], frame[["f"]], frame.assign(mixed=[1, "a", 2.0, None, "b", "c"])):
        want, got = tmp_path / "want.csv", tmp_path / "got.csv"
        f.to_csv(want, index=False, float_format="%.6g", lineterminator="\n")
        write_csv(f, got)
        assert got.read_bytes() == want.read_bytes()
