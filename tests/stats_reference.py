"""The reference the vectorised bootstraps of gcpc.analysis.stats are checked against.

A task-clustered resample, written out row by row: draw k clusters with replacement
(`numpy.random.default_rng(seed).integers(0, k, size=k)` per resample, clusters in sorted order),
concatenate their rows (a cluster drawn twice appears twice) and call the library on those rows.
`stats.resample_counts` must count exactly these draws; every draw of the vectorised paths must be
the library's value on the resample's rows (tests/test_stats_library.py).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gcpc.analysis.stats import UndefinedStatistic


@dataclass(frozen=True)
class ReferenceResult:
    estimate: float
    ci_low: float
    ci_high: float
    n_valid: int
    share_positive: float
    draws: np.ndarray  # valid draws only
    n_resamples: int

    @property
    def n_skipped(self) -> int:
        return self.n_resamples - self.n_valid


def cluster_rows(frame: pd.DataFrame, cluster: str) -> list[np.ndarray]:
    """Row positions per cluster, clusters in sorted order."""
    if cluster not in frame.columns:
        raise ValueError(f"cluster column '{cluster}' not in frame")
    codes, uniques = pd.factorize(frame[cluster], sort=True)
    return [np.flatnonzero(codes == j) for j in range(len(uniques))]


def resample_rows(groups: list[np.ndarray], counts_row: np.ndarray) -> np.ndarray:
    """The rows of one resample given its cluster counts: cluster j's rows counts_row[j] times."""
    return np.concatenate([groups[j] for j in range(len(groups)) for _ in range(int(counts_row[j]))])


def clustered_bootstrap(frame: pd.DataFrame, cluster: str, statistic: Callable[[pd.DataFrame], float],
                        n_resamples: int = 2000, seed: int = 0, ci: float = 0.95) -> ReferenceResult:
    """Percentile interval of ``statistic`` over row-level clustered resamples (NaN or UndefinedStatistic: skipped)."""
    groups = cluster_rows(frame, cluster)
    k = len(groups)
    estimate = float(statistic(frame))  # first, as the estimate is computed before any resample
    rng = np.random.default_rng(seed)
    draws = np.full(n_resamples, np.nan)
    for i in range(n_resamples):
        picked = rng.integers(0, k, size=k)
        rows = np.concatenate([groups[j] for j in picked])
        try:
            value = float(statistic(frame.iloc[rows]))
        except UndefinedStatistic:
            value = math.nan
        draws[i] = value if math.isfinite(value) else math.nan
    valid = draws[np.isfinite(draws)]
    alpha = (1.0 - ci) / 2.0
    lo, hi = np.percentile(valid, [100 * alpha, 100 * (1 - alpha)]) if valid.size else (math.nan, math.nan)
    return ReferenceResult(estimate=estimate, ci_low=float(lo), ci_high=float(hi), n_valid=int(valid.size),
                           share_positive=float(np.mean(valid > 0)) if valid.size else math.nan, draws=valid,
                           n_resamples=n_resamples)


def sk_auc(y: np.ndarray, s: np.ndarray) -> float:
    """sklearn's roc_auc_score; NaN with a single class (a skipped resample)."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y).astype(bool)
    if y.all() or not y.any():
        return math.nan
    return float(roc_auc_score(y, np.asarray(s, dtype=float)))


def auc_statistic(score: str, label: str) -> Callable[[pd.DataFrame], float]:
    return lambda d: sk_auc(d[label].to_numpy(), d[score].to_numpy())


def sp_spearman(x: np.ndarray, y: np.ndarray) -> float:
    """scipy's spearmanr; NaN when a variable is constant."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or (x == x[0]).all() or (y == y[0]).all():
        return math.nan
    return float(spearmanr(x, y).statistic)


def kd_alpha(data: np.ndarray, level: str) -> float:
    """krippendorff.alpha; NaN where it is undefined (no pairable unit, no variation)."""
    import krippendorff

    data = np.asarray(data, dtype=float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = data[:, pairable]
    values = values[~np.isnan(values)]
    if values.size == 0 or (values == values[0]).all():
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def sk_kappa(truth: np.ndarray, label: np.ndarray) -> float:
    """sklearn's cohen_kappa_score; NaN where undefined."""
    from sklearn.metrics import cohen_kappa_score

    if len(truth) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(truth, label, labels=["Yes", "No"], replace_undefined_by=np.nan))
