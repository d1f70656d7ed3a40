"""Validated metric functions and a task-clustered bootstrap.

Trajectories of the same task share difficulty, so rows are not independent: confidence
intervals resample whole tasks (clusters), never single rows, or they come out too narrow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata


class UndefinedStatistic(ValueError):
    """The statistic has no value on this data (e.g. AUC with one class).

    The bootstrap skips such resamples instead of failing; any other ValueError is a real
    input error and propagates.
    """


def _as_binary_labels(labels: Any) -> np.ndarray:
    """Labels as a bool array; accept bool or 0/1 only so that a stray 2 or NaN is caught."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iuf" or arr.dtype == object:
        try:
            as_float = arr.astype(float)
        except (TypeError, ValueError) as exc:
            raise ValueError("labels must be binary (0/1 or bool)") from exc
        if np.isnan(as_float).any():
            raise ValueError("labels contain NaN; labels must be binary (0/1 or bool)")
        bad = ~np.isin(as_float, (0.0, 1.0))
        if bad.any():
            raise ValueError(f"labels must be binary (0/1 or bool), found {sorted(set(as_float[bad].tolist()))[:5]}")
        return as_float == 1.0
    raise ValueError(f"labels must be binary (0/1 or bool), got dtype {arr.dtype}")


def auc(scores: Any, labels: Any) -> float:
    """ROC AUC as P(score_pos > score_neg) + 0.5 P(tie) (Mann-Whitney U / (n_pos n_neg)).

    Ties matter: partial-credit scores are coarse (k/n), so they are counted as half,
    which matches sklearn.metrics.roc_auc_score.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {s.shape}")
    y = _as_binary_labels(labels)
    if s.shape[0] != y.shape[0]:
        raise ValueError(f"scores and labels differ in length: {s.shape[0]} != {y.shape[0]}")
    if np.isnan(s).any():
        raise ValueError(f"scores contain {int(np.isnan(s).sum())} NaN value(s); fill or drop them first")
    n_pos = int(y.sum())
    n_neg = int(y.shape[0] - n_pos)
    if n_pos == 0 or n_neg == 0:
        raise UndefinedStatistic(
            f"AUC is undefined with a single class (n_pos={n_pos}, n_neg={n_neg})"
        )
    ranks = rankdata(s)  # average ranks: a tie contributes one half
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate on the full data and a percentile CI over valid clustered resamples."""

    estimate: float
    ci_low: float
    ci_high: float
    ci: float
    n_resamples: int
    n_valid: int
    share_positive: float  # share of valid draws > 0: one-sided evidence for a delta
    seed: int
    n_clusters: int
    draws: np.ndarray = field(repr=False, compare=False)

    @property
    def n_skipped(self) -> int:
        return self.n_resamples - self.n_valid

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (draws left out); undefined values become None, never NaN."""

        def num(x: float) -> float | None:
            return float(x) if x is not None and math.isfinite(x) else None

        return {
            "estimate": num(self.estimate),
            "ci_low": num(self.ci_low),
            "ci_high": num(self.ci_high),
            "ci": float(self.ci),
            "n_resamples": int(self.n_resamples),
            "n_valid": int(self.n_valid),
            "n_skipped": int(self.n_skipped),
            "share_positive": num(self.share_positive),
            "seed": int(self.seed),
            "n_clusters": int(self.n_clusters),
        }


def _cluster_index(frame: pd.DataFrame, cluster: str) -> list[np.ndarray]:
    """Row positions per cluster, clusters in sorted order so row order does not change draws."""
    if cluster not in frame.columns:
        raise ValueError(f"cluster column '{cluster}' not in frame")
    keys = frame[cluster]
    if keys.isna().any():
        raise ValueError(f"cluster column '{cluster}' contains missing values")
    codes, uniques = pd.factorize(keys, sort=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(uniques)))[:-1]
    return np.split(order, bounds)


def _statistic_value(statistic: Callable[[pd.DataFrame], float], data: pd.DataFrame) -> float:
    """Statistic as float; NaN when it is undefined on this data."""
    try:
        value = float(statistic(data))
    except UndefinedStatistic:
        return math.nan
    return value if math.isfinite(value) else math.nan


def clustered_bootstrap(
    frame: pd.DataFrame,
    cluster: str,
    statistic: Callable[[pd.DataFrame], float],
    n_resamples: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> BootstrapResult:
    """Percentile CI for ``statistic`` by resampling whole clusters with replacement.

    Each resample draws as many clusters as there are, concatenates their rows (a cluster drawn
    twice appears twice) and recomputes the statistic. Resamples where it is undefined
    (UndefinedStatistic raised, or a non-finite value) are skipped and counted. The estimate
    itself is computed on ``frame`` and must be defined.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError("frame must be a pandas DataFrame")
    if len(frame) == 0:
        raise ValueError("frame is empty")
    if not (isinstance(n_resamples, (int, np.integer)) and n_resamples >= 1):
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not (0.0 < ci < 1.0):
        raise ValueError(f"ci must be in (0, 1), got {ci!r}")
    groups = _cluster_index(frame, cluster)
    estimate = float(statistic(frame))
    if not math.isfinite(estimate):
        raise UndefinedStatistic(f"statistic is not finite on the full data ({estimate})")

    rng = np.random.default_rng(seed)
    k = len(groups)
    draws = np.full(int(n_resamples), np.nan)
    for i in range(int(n_resamples)):
        picked = rng.integers(0, k, size=k)
        rows = np.concatenate([groups[j] for j in picked])
        draws[i] = _statistic_value(statistic, frame.iloc[rows])

    valid = draws[~np.isnan(draws)]
    if valid.size:
        alpha = (1.0 - ci) / 2.0
        lo, hi = np.percentile(valid, [100.0 * alpha, 100.0 * (1.0 - alpha)])
        share = float(np.mean(valid > 0))
    else:
        lo = hi = share = math.nan
    return BootstrapResult(
        estimate=estimate,
        ci_low=float(lo),
        ci_high=float(hi),
        ci=float(ci),
        n_resamples=int(n_resamples),
        n_valid=int(valid.size),
        share_positive=share,
        seed=int(seed),
        n_clusters=k,
        draws=valid,
    )


def auc_statistic(score: str, label: str) -> Callable[[pd.DataFrame], float]:
    """Statistic for clustered_bootstrap: AUC of column ``score`` against column ``label``."""

    def stat(df: pd.DataFrame) -> float:
        return auc(df[score].to_numpy(), df[label].to_numpy())

    return stat


def paired_delta_auc(
    frame: pd.DataFrame,
    score_a: str,
    score_b: str,
    label: str,
    cluster: str,
    n_resamples: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> BootstrapResult:
    """AUC(score_a) - AUC(score_b) on identical rows, both AUCs from the same clustered resamples.

    Pairing cancels the shared task noise, so the delta CI is much tighter than comparing
    two independent CIs.
    """
    for col in (score_a, score_b, label):
        if col not in frame.columns:
            raise ValueError(f"column '{col}' not in frame")
    for col in (score_a, score_b):
        if frame[col].isna().any():
            raise ValueError(f"column '{col}' contains NaN; the delta needs both scores on identical rows")
    stat_a = auc_statistic(score_a, label)
    stat_b = auc_statistic(score_b, label)

    def delta(df: pd.DataFrame) -> float:
        return stat_a(df) - stat_b(df)

    return clustered_bootstrap(frame, cluster, delta, n_resamples=n_resamples, seed=seed, ci=ci)
