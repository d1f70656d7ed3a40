"""Validated metric functions and a task-clustered bootstrap.

Trajectories of the same task share difficulty, so rows are not independent: confidence
intervals resample whole tasks (clusters), never single rows, or they come out too narrow.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


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
    ranks = average_ranks(s)  # a tie contributes one half
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def roc_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) exactly as `sklearn.metrics.roc_curve(labels, scores)` returns them
    (drop_intermediate, a first threshold of +inf; tests compare bit for bit), without importing
    sklearn (several seconds for the stage that needs only this)."""
    y = _as_binary_labels(labels)
    s = np.asarray(scores, dtype=float)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be one-dimensional and of equal length, got {s.shape} and {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinite values")
    if not y.any() or y.all():
        raise UndefinedStatistic(f"a ROC curve needs both classes (n_pos={int(y.sum())}, n_neg={int((~y).sum())})")
    order = np.argsort(s, kind="stable")[::-1]
    ys, ss = y[order].astype(np.float64), s[order]
    idx = np.r_[np.flatnonzero(np.diff(ss)), ss.size - 1]
    tps = np.cumsum(ys, dtype=np.float64)[idx]  # integers, exact: the order inside a tie does not matter
    fps = 1 + idx.astype(np.float64) - tps
    thresholds = ss[idx]
    if fps.shape[0] > 2:
        keep = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])
        fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    return fps / fps[-1], tps / tps[-1], np.r_[np.inf, thresholds.astype(np.float64)]


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average: `scipy.stats.rankdata(values)` (method 'average'), the
    same floats (tests compare), without importing scipy.stats (about 1 s for every stage that imports this)."""
    v = np.asarray(values)
    order = np.argsort(v, kind="mergesort")
    ranked = v[order]
    first = np.r_[True, ranked[1:] != ranked[:-1]]  # start of each run of equal values
    dense = np.empty(v.shape[0], dtype=np.intp)
    dense[order] = first.cumsum()
    bounds = np.r_[np.flatnonzero(first), v.shape[0]]
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


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


# ---------------------------------------------------------------------------------------------
# Fast task-clustered bootstraps.
#
# A clustered resample is fully described by how often each cluster was drawn. The functions
# below draw exactly the same clusters as `clustered_bootstrap` (same generator, same calls),
# turn each resample into a vector of cluster counts and compute the statistic from per-cluster
# aggregates weighted by those counts. The result equals `clustered_bootstrap` on the same data
# and seed (tests check this) at a fraction of the cost, which is what makes 2,000 resamples of
# 20,000 trajectories affordable.
# ---------------------------------------------------------------------------------------------

_CHUNK_CELLS = 4_000_000  # resamples x cells per block: bounds memory of the vectorized draws


def cluster_codes(keys: Any, name: str = "cluster") -> tuple[np.ndarray, int]:
    """Integer code per row (clusters in sorted order, as `clustered_bootstrap` indexes them)."""
    keys = pd.Series(keys)
    if keys.isna().any():
        raise ValueError(f"{name} column contains missing values")
    codes, uniques = pd.factorize(keys, sort=True)
    return codes.astype(np.int64), len(uniques)


def resample_counts(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n_clusters) draw counts; resample i draws the same clusters as in clustered_bootstrap.

    The matrix depends only on (clusters, resamples, seed), so it is drawn once and shared (read-only)
    by every arm and statistic bootstrapped over the same cluster set within a process.
    """
    if not (isinstance(n_resamples, (int, np.integer)) and n_resamples >= 1):
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if n_clusters < 1:
        raise ValueError("no clusters")
    return _resample_counts(int(n_clusters), int(n_resamples), int(seed))


def cluster_sums(weights: Any, per_cluster: Any) -> np.ndarray:
    """`weights (R, K) @ per_cluster (K, C)`, added cluster by cluster in a fixed order.

    Not BLAS: OpenBLAS picks its kernel (blocking, vector width, fused multiply-add) by CPU, so a sum of
    non-integer values came out different in the last bits on another machine (rq4.json's PASS - FAIL
    separations did; docs/reproducibility.md). Here each product and each sum is one IEEE operation,
    in cluster order: the same bits on any CPU. A few milliseconds for 2,000 resamples of 1,000 clusters."""
    w = np.atleast_2d(np.asarray(weights)).astype(float)
    agg = np.asarray(per_cluster, dtype=float)
    if agg.ndim != 2 or w.shape[1] != agg.shape[0]:
        raise ValueError(f"weights {w.shape} and per-cluster sums {agg.shape} do not match")
    out = np.zeros((w.shape[0], agg.shape[1]))
    for k in range(agg.shape[0]):
        out += w[:, k:k + 1] * agg[k]
    return out


@functools.lru_cache(maxsize=32)
def _resample_counts(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, n_clusters), dtype=np.int64)
    for i in range(n_resamples):
        picked = rng.integers(0, n_clusters, size=n_clusters)
        counts[i] = np.bincount(picked, minlength=n_clusters)
    counts.setflags(write=False)
    return counts


def _chunks(n_rows: int, width: int) -> list[slice]:
    step = max(1, _CHUNK_CELLS // max(width, 1))
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]


def bootstrap_result(estimate: float, draws: np.ndarray, *, ci: float, n_resamples: int, seed: int,
                     n_clusters: int) -> BootstrapResult:
    """Percentile summary of draws (NaN draws are undefined resamples and are skipped)."""
    if not (0.0 < ci < 1.0):
        raise ValueError(f"ci must be in (0, 1), got {ci!r}")
    draws = np.asarray(draws, dtype=float)
    valid = draws[np.isfinite(draws)]
    if valid.size:
        alpha = (1.0 - ci) / 2.0
        lo, hi = np.percentile(valid, [100.0 * alpha, 100.0 * (1.0 - alpha)])
        share = float(np.mean(valid > 0))
    else:
        lo = hi = share = math.nan
    return BootstrapResult(estimate=float(estimate), ci_low=float(lo), ci_high=float(hi), ci=float(ci),
                           n_resamples=int(n_resamples), n_valid=int(valid.size), share_positive=share,
                           seed=int(seed), n_clusters=int(n_clusters), draws=valid)


# Draws by content: RQ1 bootstraps one arm's AUC on its own and again in each paired delta, and the
# floors stage each floor against several arms; the same cells and resamples give the same draws, so
# they are computed once per process (bit-identical: the cached array is the one computed).
_AUC_DRAWS: collections.OrderedDict[bytes, np.ndarray] = collections.OrderedDict()
_AUC_DRAWS_MAX = 256


_DIGESTS: dict[int, tuple[np.ndarray, bytes]] = {}


def _weights_digest(weights: np.ndarray) -> bytes:
    """Digest of a weights matrix (dtype, shape, values); remembered for the read-only matrices of
    `resample_counts`, which are kept alive by its cache and cannot change."""
    remembered = _DIGESTS.get(id(weights))
    if remembered is not None and remembered[0] is weights:
        return remembered[1]
    h = hashlib.blake2b(digest_size=32)
    h.update(f"{weights.dtype.str}{weights.shape}".encode())
    h.update(np.ascontiguousarray(weights).tobytes())
    digest = h.digest()
    if not weights.flags.writeable and weights.base is None and len(_DIGESTS) < 32:  # as many as resample_counts keeps
        _DIGESTS[id(weights)] = (weights, digest)
    return digest


class _AucCells:
    """Rows collapsed to (score level, cluster) cells holding positive and negative counts."""

    def __init__(self, scores: Any, labels: Any, codes: np.ndarray, n_clusters: int):
        s = np.asarray(scores, dtype=float)
        y = _as_binary_labels(labels)
        if s.shape != y.shape or s.shape != codes.shape:
            raise ValueError("scores, labels and clusters differ in length")
        if np.isnan(s).any():
            raise ValueError(f"scores contain {int(np.isnan(s).sum())} NaN value(s); fill or drop them first")
        _, level = np.unique(s, return_inverse=True)
        key = level.astype(np.int64) * n_clusters + codes
        cells, inv = np.unique(key, return_inverse=True)
        self.pos = np.bincount(inv, weights=y.astype(float), minlength=cells.size)
        self.neg = np.bincount(inv, minlength=cells.size).astype(float) - self.pos
        self.cluster = cells % n_clusters
        cell_level = cells // n_clusters
        self.level = cell_level
        self.n_clusters = int(n_clusters)
        self.starts = np.r_[0, np.flatnonzero(np.diff(cell_level)) + 1]
        self.pos_k = np.bincount(self.cluster, weights=self.pos, minlength=n_clusters)
        self.neg_k = np.bincount(self.cluster, weights=self.neg, minlength=n_clusters)
        self._m: np.ndarray | None = None
        self._m_unavailable = False

    def auc(self, weights: np.ndarray) -> np.ndarray:
        """AUC per row of cluster weights (R, K); NaN where a resample has a single class.

        With integer weights the Mann-Whitney numerator is the quadratic form w M w' of a cluster x
        cluster matrix M (positives of cluster k over negatives of cluster k', ties half), so each
        resample costs K^2 instead of one pass over every cell. All terms are integers or halves,
        summed exactly in float64, so the result is bit-identical to the cell-by-cell sum
        (`auc_by_cells`, kept as the reference; tests compare both)."""
        weights = np.atleast_2d(weights)
        key = self._key(weights)
        cached = _AUC_DRAWS.get(key)
        if cached is not None:
            _AUC_DRAWS.move_to_end(key)
            return cached
        out = self._auc(weights)
        out.setflags(write=False)
        _AUC_DRAWS[key] = out
        if len(_AUC_DRAWS) > _AUC_DRAWS_MAX:
            _AUC_DRAWS.popitem(last=False)
        return out

    def _key(self, weights: np.ndarray) -> bytes:
        """Digest of everything the draws depend on: the cells (level, cluster, positives, negatives) and the weights."""
        h = hashlib.blake2b(digest_size=32)
        for part in (self.level.astype(np.int64), self.cluster.astype(np.int64), self.pos, self.neg):
            h.update(np.ascontiguousarray(part).tobytes())
        h.update(_weights_digest(weights))
        return h.digest()

    def _auc(self, weights: np.ndarray) -> np.ndarray:
        m = self._pair_matrix()
        integral = np.issubdtype(weights.dtype, np.integer) or np.array_equal(weights, np.round(weights))
        if m is None or not integral:
            return self.auc_by_cells(weights)
        out = np.empty(weights.shape[0])
        for sl in _chunks(weights.shape[0], 2 * self.n_clusters):
            w = weights[sl].astype(float)
            num = ((w @ m) * w).sum(axis=1)
            den = (w @ self.pos_k) * (w @ self.neg_k)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[sl] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        return out

    _PAIR_CELLS = 20_000_000  # levels x clusters of the dense negatives table; above this use the cell sum

    def _pair_matrix(self) -> np.ndarray | None:
        """M[k, k'] = sum over positives of cluster k of (negatives of k' below + half those tied); cached."""
        if self._m is not None or self._m_unavailable:
            return self._m
        k, n_levels = self.n_clusters, int(self.level.max()) + 1 if self.level.size else 0
        total = float(self.pos.sum() + self.neg.sum())
        if n_levels * k > self._PAIR_CELLS or (total * k) ** 2 >= 2.0 ** 52:  # keep every sum exact
            self._m_unavailable = True
            return None
        from scipy.sparse import csr_matrix

        neg = np.zeros((n_levels, k))
        neg[self.level, self.cluster] = self.neg  # cells are unique (level, cluster) pairs
        below_half = np.cumsum(neg, axis=0) - neg + 0.5 * neg  # exact: integer and half values
        pos = csr_matrix((self.pos, (self.cluster, self.level)), shape=(k, n_levels))
        m = np.asarray(pos @ below_half)
        self._m = m
        return m

    def auc_by_cells(self, weights: np.ndarray) -> np.ndarray:
        """AUC per row of cluster weights (R, K) from per-level sums over the cells (the reference path)."""
        weights = np.atleast_2d(weights)
        out = np.empty(weights.shape[0])
        for sl in _chunks(weights.shape[0], self.cluster.size):
            w = weights[sl][:, self.cluster].astype(float)
            p = np.add.reduceat(w * self.pos, self.starts, axis=1)
            n = np.add.reduceat(w * self.neg, self.starts, axis=1)
            below = np.cumsum(n, axis=1) - n
            num = (p * (below + 0.5 * n)).sum(axis=1)
            den = p.sum(axis=1) * n.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[sl] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        return out


def clustered_auc_bootstrap(frame: pd.DataFrame, score: str, label: str, cluster: str, n_resamples: int = 2000,
                            seed: int = 0, ci: float = 0.95) -> BootstrapResult:
    """Same result as clustered_bootstrap(frame, cluster, auc_statistic(score, label), ...), vectorized."""
    for col in (score, label, cluster):
        if col not in frame.columns:
            raise ValueError(f"column '{col}' not in frame")
    if len(frame) == 0:
        raise ValueError("frame is empty")
    estimate = auc(frame[score].to_numpy(), frame[label].to_numpy())  # validates, raises UndefinedStatistic
    codes, k = cluster_codes(frame[cluster], cluster)
    cells = _AucCells(frame[score].to_numpy(), frame[label].to_numpy(), codes, k)
    draws = cells.auc(resample_counts(k, n_resamples, seed))
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


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
    two independent CIs. Equals clustered_bootstrap with the delta statistic (vectorized).
    """
    for col in (score_a, score_b, label, cluster):
        if col not in frame.columns:
            raise ValueError(f"column '{col}' not in frame")
    for col in (score_a, score_b):
        if frame[col].isna().any():
            raise ValueError(f"column '{col}' contains NaN; the delta needs both scores on identical rows")
    y = frame[label].to_numpy()
    estimate = auc(frame[score_a].to_numpy(), y) - auc(frame[score_b].to_numpy(), y)
    codes, k = cluster_codes(frame[cluster], cluster)
    counts = resample_counts(k, n_resamples, seed)
    draws = (_AucCells(frame[score_a].to_numpy(), y, codes, k).auc(counts)
             - _AucCells(frame[score_b].to_numpy(), y, codes, k).auc(counts))
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


def clustered_mean_difference(values: Any, labels: Any, clusters: Any, n_resamples: int = 2000, seed: int = 0,
                              ci: float = 0.95) -> BootstrapResult:
    """mean(values | label) - mean(values | not label) with a task-clustered percentile CI."""
    v = np.asarray(values, dtype=float)
    y = _as_binary_labels(labels)
    if v.shape != y.shape:
        raise ValueError("values and labels differ in length")
    if np.isnan(v).any():
        raise ValueError("values contain NaN; fill or drop them first")
    if y.all() or (~y).all():
        raise UndefinedStatistic(f"mean difference needs both groups (n_pos={int(y.sum())}, n_neg={int((~y).sum())})")
    codes, k = cluster_codes(clusters)
    agg = np.stack([np.bincount(codes, weights=v * y, minlength=k), np.bincount(codes, weights=y.astype(float), minlength=k),
                    np.bincount(codes, weights=v * ~y, minlength=k), np.bincount(codes, weights=(~y).astype(float), minlength=k)],
                   axis=1)

    def stat(w: np.ndarray) -> np.ndarray:
        s = cluster_sums(w, agg)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = s[:, 0] / s[:, 1] - s[:, 2] / s[:, 3]
        return np.where((s[:, 1] > 0) & (s[:, 3] > 0), d, np.nan)

    estimate = float(stat(np.ones(k))[0])
    draws = stat(resample_counts(k, n_resamples, seed))
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


# ---------------------------------------------------------------------------------------------
# Rank correlation
# ---------------------------------------------------------------------------------------------


class _RankPlan:
    """Sorted order and tie groups of one variable, for average ranks under integer row weights."""

    def __init__(self, x: np.ndarray):
        self.order = np.argsort(x, kind="stable")
        xs = x[self.order]
        self.starts = np.r_[0, np.flatnonzero(np.diff(xs) != 0) + 1]
        group = np.zeros(x.size, dtype=np.int64)
        group[self.starts[1:]] = 1
        self.group_sorted = np.cumsum(group)
        self.group = np.empty_like(self.group_sorted)
        self.group[self.order] = self.group_sorted

    def ranks(self, w: np.ndarray) -> np.ndarray:
        """Average ranks (1-based, ties averaged) of each row when row i appears w[:, i] times."""
        ws = w[:, self.order]
        g = np.add.reduceat(ws, self.starts, axis=1)
        below = np.cumsum(g, axis=1) - g
        avg = below + (g + 1.0) / 2.0
        return avg[:, self.group]


class _ClusterRanks:
    """Average ranks when every row of cluster k appears counts[r, k] times, from tie-group x cluster counts.

    The weight of a tie group is counts @ T (T[k, g]: rows of cluster k in tie group g), a sparse
    product instead of gathering and summing R x N row weights; all sums are of integers, so the
    ranks are exactly `_RankPlan.ranks(counts[:, codes])` (tests compare both)."""

    def __init__(self, plan: _RankPlan, codes: np.ndarray, n_clusters: int):
        from scipy.sparse import csr_matrix

        self.group = plan.group
        n_groups = int(plan.group_sorted[-1]) + 1 if plan.group_sorted.size else 0
        ones = np.ones(codes.size)
        self.t_transposed = csr_matrix((ones, (plan.group, codes)), shape=(n_groups, n_clusters))  # duplicates summed

    def group_ranks(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(weight, average rank) of each tie group per resample, both (R, n_groups)."""
        g = np.asarray((self.t_transposed @ counts.T).T)
        below = np.cumsum(g, axis=1) - g
        return g, below + (g + 1.0) / 2.0

    def ranks(self, counts: np.ndarray) -> np.ndarray:
        return self.group_ranks(counts)[1][:, self.group]


class _JointGroups:
    """Spearman draws from tie groups: rows with the same (x tie group, y tie group) share their ranks.

    A resample's weighted Pearson sums over rows are sums over tie groups (means, variances) and
    over distinct (x group, y group) pairs (covariance), so each resample costs the number of
    distinct values and pairs instead of the number of rows. The group weights are exact integer
    sums; only the order of the floating-point sums differs from the row-by-row path
    (`_spearman_draws_by_rows`, kept as the reference; tests compare both to 1e-12)."""

    def __init__(self, xa: np.ndarray, ya: np.ndarray, codes: np.ndarray, n_clusters: int):
        from scipy.sparse import csr_matrix

        px, py = _RankPlan(xa), _RankPlan(ya)
        self.rx, self.ry = _ClusterRanks(px, codes, n_clusters), _ClusterRanks(py, codes, n_clusters)
        n_gy = self.ry.t_transposed.shape[0]
        pairs, inv = np.unique(px.group * max(n_gy, 1) + py.group, return_inverse=True)
        self.pair_x, self.pair_y = pairs // max(n_gy, 1), pairs % max(n_gy, 1)
        self.t_pairs = csr_matrix((np.ones(codes.size), (inv.ravel(), codes)), shape=(pairs.size, n_clusters))
        self.cluster_sizes = np.bincount(codes, minlength=n_clusters).astype(float)
        self.width = int(max(pairs.size, self.rx.t_transposed.shape[0], n_gy, 1))

    def draws(self, counts: np.ndarray) -> np.ndarray:
        out = np.empty(counts.shape[0])
        for sl in _chunks(counts.shape[0], 4 * self.width):
            c = counts[sl].astype(float)
            gx, ax = self.rx.group_ranks(c)
            gy, ay = self.ry.group_ranks(c)
            joint = np.asarray((self.t_pairs @ c.T).T)
            tot = c @ self.cluster_sizes
            with np.errstate(invalid="ignore", divide="ignore"):
                dx = ax - ((gx * ax).sum(axis=1) / tot)[:, None]
                dy = ay - ((gy * ay).sum(axis=1) / tot)[:, None]
                cov = ((joint * dx[:, self.pair_x]) * dy[:, self.pair_y]).sum(axis=1)
                va = ((gx * dx) * dx).sum(axis=1)
                vb = ((gy * dy) * dy).sum(axis=1)
                r = cov / np.sqrt(va * vb)
            scale = tot ** 3  # the same undefined-resample rule as _weighted_pearson
            bad = (va <= 1e-12 * scale) | (vb <= 1e-12 * scale) | (tot < 2)
            out[sl] = np.where(bad, np.nan, np.clip(r, -1.0, 1.0))
        return out


def _weighted_pearson(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    tot = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = (w * a).sum(axis=1, keepdims=True) / tot
        mb = (w * b).sum(axis=1, keepdims=True) / tot
        da, db = a - ma, b - mb
        wda, wdb = w * da, w * db  # (w * da) * db is what w * da * db evaluates: same bits, fewer passes
        cov = (wda * db).sum(axis=1)
        va = (wda * da).sum(axis=1)
        vb = (wdb * db).sum(axis=1)
        r = cov / np.sqrt(va * vb)
    # relative tolerance: ranks of a constant sample differ from their mean only by rounding
    scale = (tot[:, 0] ** 3)
    bad = (va <= 1e-12 * scale) | (vb <= 1e-12 * scale) | (tot[:, 0] < 2)
    return np.where(bad, np.nan, np.clip(r, -1.0, 1.0))


def spearman(x: Any, y: Any) -> float:
    """Spearman's rho (Pearson correlation of average ranks); UndefinedStatistic if either is constant."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise ValueError(f"x and y must be one-dimensional and of equal length, got {xa.shape} and {ya.shape}")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ValueError("x or y contains NaN; drop those rows first")
    if xa.size < 2:
        raise UndefinedStatistic("Spearman's rho needs at least two observations")
    w = np.ones((1, xa.size))
    r = _weighted_pearson(_RankPlan(xa).ranks(w), _RankPlan(ya).ranks(w), w)[0]
    if not math.isfinite(r):
        raise UndefinedStatistic("Spearman's rho is undefined when a variable is constant")
    return float(r)


def weighted_spearman(x: Any, y: Any, weights: Any) -> np.ndarray:
    """Spearman's rho of the sample in which row i appears weights[r, i] times, for each row r of weights.

    Equals scipy.stats.spearmanr on the expanded sample; NaN where a variable is constant.
    """
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    return _weighted_spearman_plans(_RankPlan(xa), _RankPlan(ya), w)


def _weighted_spearman_plans(px: _RankPlan, py: _RankPlan, w: np.ndarray) -> np.ndarray:
    """weighted_spearman with the rank plans built once (they depend on x and y only, not on the weights)."""
    xa = px.order
    out = np.empty(w.shape[0])
    for sl in _chunks(w.shape[0], xa.size * 4):
        ws = w[sl]
        out[sl] = _weighted_pearson(px.ranks(ws), py.ranks(ws), ws)
    return out


def clustered_spearman_bootstrap(x: Any, y: Any, clusters: Any, n_resamples: int = 2000, seed: int = 0,
                                 ci: float = 0.95) -> BootstrapResult:
    """Spearman's rho with a cluster (task) bootstrap percentile CI; same draws as clustered_bootstrap."""
    estimate = spearman(x, y)
    codes, k = cluster_codes(clusters)
    counts = resample_counts(k, n_resamples, seed)
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    draws = _JointGroups(xa, ya, codes, k).draws(counts)
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


def _spearman_draws_by_rows(xa: np.ndarray, ya: np.ndarray, codes: np.ndarray, k: int, counts: np.ndarray) -> np.ndarray:
    """Reference path of the Spearman draws: ranks gathered to rows, weighted Pearson over every row."""
    draws = np.empty(counts.shape[0])
    rx, ry = _ClusterRanks(_RankPlan(xa), codes, k), _ClusterRanks(_RankPlan(ya), codes, k)
    for sl in _chunks(counts.shape[0], xa.size * 4):
        c = counts[sl].astype(float)
        draws[sl] = _weighted_pearson(rx.ranks(c), ry.ranks(c), c[:, codes])
    return draws


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha (nominal and interval), with a unit-cluster bootstrap
# ---------------------------------------------------------------------------------------------

ALPHA_LEVELS = ("nominal", "interval")


class _AlphaParts:
    """Per-cluster sums from which alpha = 1 - (n - 1) * A / B is computed for any cluster weights.

    For a unit u with m_u >= 2 values: A_u = sum over ordered pairs i != j of delta^2(v_i, v_j) / (m_u - 1),
    and B is the same double sum over all pairable values of all units. delta^2 is 1[c != k] (nominal)
    or (c - k)^2 (interval). Units with fewer than two values are not pairable and are ignored.
    """

    def __init__(self, data: np.ndarray, level: str, unit_clusters: np.ndarray, n_clusters: int):
        if level not in ALPHA_LEVELS:
            raise ValueError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")
        data = np.asarray(data, dtype=float)
        if data.ndim != 2:
            raise ValueError("reliability data must be 2-D (coders x units)")
        present = ~np.isnan(data)
        m = present.sum(axis=0)
        keep = m >= 2
        data, present, m = data[:, keep], present[:, keep], m[keep].astype(float)
        clusters = np.asarray(unit_clusters)[keep]
        self.level = level
        self.n_clusters = n_clusters
        self.n_units = int(keep.sum())
        self.n_values = int(m.sum())
        cols = []
        if level == "nominal":
            cats = np.unique(data[present])
            counts = np.stack([(data == c).sum(axis=0) for c in cats], axis=1).astype(float) if cats.size else np.zeros((m.size, 0))
            a_u = (m * m - (counts ** 2).sum(axis=1)) / (m - 1.0)
            cols = [a_u, m, *counts.T]
        else:
            vals = np.where(present, data, 0.0)
            center = vals[present].mean() if present.any() else 0.0
            vals = np.where(present, data - center, 0.0)
            s1 = vals.sum(axis=0)
            s2 = (vals ** 2).sum(axis=0)
            # within-unit disagreement from differences to the unit's first value: exactly 0 when all agree
            first = vals[np.argmax(present, axis=0), np.arange(vals.shape[1])] if vals.size else np.zeros(0)
            d = np.where(present, vals - first, 0.0)
            d1, d2 = d.sum(axis=0), (d ** 2).sum(axis=0)
            a_u = np.maximum(2.0 * m * d2 - 2.0 * d1 ** 2, 0.0) / (m - 1.0)
            cols = [a_u, m, s1, s2]
        per_unit = np.stack(cols, axis=1) if m.size else np.zeros((0, len(cols) if cols else 2))
        self.agg = np.zeros((n_clusters, per_unit.shape[1]))
        if m.size:
            np.add.at(self.agg, clusters, per_unit)

    def alpha(self, weights: np.ndarray) -> np.ndarray:
        s = cluster_sums(weights, self.agg)
        a, n = s[:, 0], s[:, 1]
        if self.level == "nominal":
            b = n * n - (s[:, 2:] ** 2).sum(axis=1)
        else:
            b = 2.0 * n * s[:, 3] - 2.0 * s[:, 2] ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            out = 1.0 - (n - 1.0) * a / b
        tol = 1e-12 * np.maximum(n * n, 1.0) * (1.0 if self.level == "nominal" else max(float(np.abs(self.agg[:, 3]).sum()), 1.0))
        return np.where(b > tol, out, np.nan)


def krippendorff_alpha(data: Any, level: str = "interval") -> float:
    """Krippendorff's alpha of a coders x units matrix (NaN = missing). UndefinedStatistic without variation."""
    arr = np.asarray(data, dtype=float)
    parts = _AlphaParts(arr, level, np.zeros(arr.shape[1] if arr.ndim == 2 else 0, dtype=np.int64), 1)
    if parts.n_units == 0:
        raise UndefinedStatistic("alpha needs at least one unit coded by two or more coders")
    value = float(parts.alpha(np.ones(1))[0])
    if not math.isfinite(value):
        raise UndefinedStatistic("alpha is undefined: all pairable values are identical (no expected disagreement)")
    return value


def alpha_bootstrap(data: Any, unit_clusters: Any, level: str = "interval", n_resamples: int = 2000, seed: int = 0,
                    ci: float = 0.95) -> BootstrapResult:
    """Krippendorff's alpha with a percentile CI resampling clusters of units (tasks), not single units."""
    arr = np.asarray(data, dtype=float)
    codes, k = cluster_codes(unit_clusters)
    if codes.size != arr.shape[1]:
        raise ValueError("one cluster per unit (column) is required")
    estimate = krippendorff_alpha(arr, level)
    parts = _AlphaParts(arr, level, codes, k)
    draws = parts.alpha(resample_counts(k, n_resamples, seed))
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


def reliability_matrix(frame: pd.DataFrame, unit: str | list[str], coder: str, value: str,
                       codes: dict[Any, float] | None = None) -> tuple[np.ndarray, pd.DataFrame]:
    """Long (unit, coder, value) records -> coders x units matrix (NaN = not coded) and the unit keys.

    ``codes`` maps nominal labels to numbers; a label outside it is an error naming the label.
    One value per (unit, coder) is required.
    """
    unit_cols = [unit] if isinstance(unit, str) else list(unit)
    vals = frame[value]
    if codes is not None:
        unknown = sorted(set(vals.dropna().astype(str).unique().tolist()) - {str(k) for k in codes})
        if unknown:
            raise ValueError(f"column '{value}': unknown label(s) {unknown[:5]} (known: {sorted(map(str, codes))})")
        mapped = vals.map(codes)  # one hash lookup per row; missing stays missing
        lost = mapped.isna() & vals.notna()
        if lost.any():  # e.g. 1 given where the codes say "1"
            raise ValueError(f"column '{value}': label {vals[lost].iloc[0]!r} has no code (known: {sorted(map(str, codes))})")
        vals = mapped
    long = frame[unit_cols + [coder]].assign(_v=pd.to_numeric(vals, errors="raise").astype(float))
    dup = long.duplicated(unit_cols + [coder])
    if dup.any():
        first = long[dup].iloc[0]
        raise ValueError(f"more than one value for unit {tuple(first[unit_cols])} and coder {first[coder]!r}")
    wide = long.set_index(unit_cols + [coder])["_v"].unstack(coder).sort_index()  # units x coders, existing units only
    wide = wide.reindex(sorted(wide.columns, key=str), axis=1)
    keys = wide.index.to_frame(index=False)
    keys.columns = unit_cols
    return wide.to_numpy(dtype=float).T, keys


# ---------------------------------------------------------------------------------------------
# Paired tests and agreement counts
# ---------------------------------------------------------------------------------------------


WILCOXON_EXACT_MAX = 50
"""scipy.stats.wilcoxon (method 'auto'): the exact null distribution up to 50 differences without ties
or zeros; above, the normal approximation."""
WILCOXON_PERMUTATION_MAX = 13
"""With ties or zeros, scipy enumerates every sign flip (2**n <= its 9,999 permutations) up to 13."""


def signed_rank_test(deltas: Any) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test of paired differences, zeros dropped ('wilcox').

    The result of `scipy.stats.wilcoxon(d, zero_method="wilcox")` with its default method 'auto'
    (exact distribution, exact sign-flip enumeration, or normal approximation; see `_wilcoxon_p`),
    computed here without importing scipy.stats (over a second in every stage process that needs it;
    tests compare with scipy). Returns a JSON-ready dict; p is None with a reason when the test is
    undefined (no non-zero delta).
    """
    d = np.asarray(deltas, dtype=float)
    d = d[~np.isnan(d)]
    out: dict[str, Any] = {"n": int(d.size), "n_nonzero": int((d != 0).sum()), "statistic": None, "p_value": None}
    if out["n_nonzero"] == 0:
        out["skipped"] = "no non-zero difference" if d.size else "no pairs"
        return out
    statistic, p = _wilcoxon_p(d)
    out["statistic"] = statistic
    out["p_value"] = p
    return out


def _wilcoxon_p(d: np.ndarray) -> tuple[float, float]:
    """(min(W+, W-), two-sided p) as scipy 1.17's wilcoxon computes them, step for step, so the floats
    are the same: W+ sums the average ranks of |d| over positive d, zeros left out of the ranking.

    * no ties and no zeros, n <= 50: the exact distribution of W+ (scipy's float recursion and sums);
    * ties or zeros, n <= 13 (n counts zeros): every one of the 2**n sign flips, p = share of flips at
      least as extreme (counts over a power of two: exact);
    * otherwise: z = (W+ - mean) / sd with the tie correction, p = 2 * Phi(-|z|), no continuity correction.
    """
    nonzero = d[d != 0]
    a = np.abs(nonzero)
    ranks = average_ranks(a)
    _, ties = np.unique(a, return_counts=True)
    w_plus = float(ranks[nonzero > 0].sum())
    w_minus = float(ranks[nonzero < 0].sum())
    statistic = min(w_plus, w_minus)
    n, m = d.size, nonzero.size
    has_ties = bool((ties > 1).any())
    zeros = n > m
    if n <= WILCOXON_EXACT_MAX and not (has_ties or zeros):
        pmf = _wilcoxon_pmf(n)
        mean = n * (n + 1) / 4
        p = 2 * min(_wilcoxon_sf(pmf, math.floor(w_plus), mean), _wilcoxon_cdf(pmf, math.ceil(w_plus), mean))
        return statistic, float(min(max(p, 0.0), 1.0))
    if n <= WILCOXON_PERMUTATION_MAX:
        # W+ over all sign patterns of the non-zero differences, in half-rank units (integers);
        # each zero doubles every pattern, which cancels in the shares
        doubled = np.rint(2 * ranks).astype(np.int64)
        counts = np.zeros(int(doubled.sum()) + 1, dtype=np.int64)
        counts[0] = 1
        for r in doubled:
            counts[r:] = counts[r:] + counts[: counts.size - r].copy()
        observed = int(round(2 * w_plus))
        total = float(2 ** n)
        scale = 2 ** (n - m)
        less = float(int(counts[: observed + 1].sum()) * scale) / total
        greater = float(int(counts[observed:].sum()) * scale) / total
        return statistic, float(min(max(min(less, greater) * 2, 0.0), 1.0))
    from scipy.special import ndtr  # scipy.special alone imports in a fraction of scipy.stats' time

    count = float(m)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    t = ties.astype(np.float64)
    tie_correct = float(np.sum(t ** 3 - t))
    se = math.sqrt((se - tie_correct / 2) / 24)
    z = (w_plus - mn) / se
    return statistic, float(2 * ndtr(-abs(z)))


@functools.lru_cache(maxsize=64)
def _wilcoxon_pmf(n: int) -> np.ndarray:
    """P(W+ = r), r = 0..n(n+1)/2, by scipy's recursion (`_get_wilcoxon_distr`), the same floats."""
    c = np.ones(1, dtype=np.float64)
    for k in range(1, n + 1):
        prev = c
        c = np.zeros(k * (k + 1) // 2 + 1, dtype=np.float64)
        m = len(prev)
        c[:m] = prev * 0.5
        c[-m:] += prev * 0.5
    c.setflags(write=False)
    return c


def _wilcoxon_cdf(pmf: np.ndarray, k: int, mean: float) -> float:
    return float(pmf[: k + 1].sum()) if k <= mean else float(1 - pmf[k + 1:].sum())


def _wilcoxon_sf(pmf: np.ndarray, k: int, mean: float) -> float:
    return float(pmf[k:].sum()) if k <= mean else float(1 - pmf[:k].sum())


def sign_test(deltas: Any) -> dict[str, Any]:
    """Counts of positive / negative / zero differences and the exact two-sided sign test.

    p = min(1, 2 * P(X <= min(k, n - k))), X ~ Binomial(n, 1/2), in exact integer arithmetic: what
    `scipy.stats.binomtest(k, n, 0.5)` computes (to its float rounding; tests compare), without
    importing scipy.stats.
    """
    d = np.asarray(deltas, dtype=float)
    d = d[~np.isnan(d)]
    higher, lower = int((d > 0).sum()), int((d < 0).sum())
    out: dict[str, Any] = {"n": int(d.size), "higher": higher, "lower": lower, "tied": int((d == 0).sum()),
                           "median_delta": float(np.median(d)) if d.size else None, "p_value": None}
    if higher + lower == 0:
        out["skipped"] = "no untied pair" if d.size else "no pairs"
        return out
    out["p_value"] = binomial_two_sided_half(higher, higher + lower)
    return out


def binomial_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value of k successes in n trials at p = 1/2 (binomtest's rule:
    outcomes no more likely than k; at p = 1/2 those are the two tails), correctly rounded."""
    from fractions import Fraction

    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if 2 * k == n:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def preference_agreement(score_a: Any, score_b: Any, preferred: Any) -> dict[str, Any]:
    """Agreement of a method's ordering with human pairwise preferences.

    ``preferred`` holds 'a', 'b' or 'tie' per pair. A pair is comparable when the humans preferred
    one side and the method's two scores differ; agreement is the share of comparable pairs the
    method orders the same way. Human ties and method ties are counted, never guessed.
    """
    a = np.asarray(score_a, dtype=float)
    b = np.asarray(score_b, dtype=float)
    p = np.asarray(preferred, dtype=object)
    if not (a.shape == b.shape == p.shape):
        raise ValueError("score_a, score_b and preferred differ in length")
    bad = sorted({str(x) for x in p if x not in ("a", "b", "tie")})
    if bad:
        raise ValueError(f"preferred must be 'a', 'b' or 'tie', found {bad[:5]}")
    scored = ~(np.isnan(a) | np.isnan(b))
    strict = (p != "tie") & scored
    method_tie = strict & (a == b)
    comparable = strict & (a != b)
    agree = comparable & (((p == "a") & (a > b)) | ((p == "b") & (b > a)))
    n_comp = int(comparable.sum())
    return {
        "n_pairs": int(p.size),
        "n_unscored": int((~scored).sum()),
        "n_human_ties": int(((p == "tie") & scored).sum()),
        "n_method_ties": int(method_tie.sum()),
        "n_comparable": n_comp,
        "n_agree": int(agree.sum()),
        "agreement": float(agree.sum() / n_comp) if n_comp else None,
    }


EXACT_DENOMINATOR = 10**6
"""Largest denominator `exact_differences` recovers a score as. Every score is a ratio of small
integers (yes / decided items, a 0-10 rating / 10, yes / questions), so 10**6 is far above any real
one, while two such ratios still differ by >= 1e-12, far more than a float's rounding."""


def exact_differences(a: Any, b: Any) -> np.ndarray:
    """a − b per element, computed on the exact ratios the scores are (NaN stays NaN), as floats.

    A float subtraction is off by a rounding: 0.8 − 0.7 = 0.10000000000000009 > 0.10 while
    0.5 − 0.4 = 0.09999999999999998, so a threshold, a zero test or a tie between differences
    (Wilcoxon ranks) would depend on which two scores met. Each score is recovered as its fraction
    (`Fraction.limit_denominator(EXACT_DENOMINATOR)`), subtracted exactly and rounded once: equal
    differences are equal floats, a difference equal to a threshold written as a decimal (0.10) is
    the same float as the threshold, and every comparison with it is exact."""
    from fractions import Fraction

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"exact_differences: shapes differ ({x.shape} vs {y.shape})")
    fracs: dict[float, Fraction] = {}
    diffs: dict[tuple[float, float], float] = {}  # scores take few distinct values: each pair is computed once

    def frac(v: float) -> Fraction:
        f = fracs.get(v)
        if f is None:
            f = fracs[v] = Fraction(v).limit_denominator(EXACT_DENOMINATOR)
        return f

    def diff(p: float, q: float) -> float:
        d = diffs.get((p, q))
        if d is None:
            d = diffs[(p, q)] = float(frac(p) - frac(q))
        return d

    out = np.full(x.shape, np.nan)
    ok = ~(np.isnan(x) | np.isnan(y))
    out[ok] = [diff(p, q) for p, q in zip(x[ok].tolist(), y[ok].tolist(), strict=True)]
    return out


def exact_mean(values: Any) -> float:
    """The mean of score differences (from `exact_differences`) on their exact ratios, rounded once:
    differences that cancel give exactly 0 (a float mean of 0.1, 0.2 and −0.3 is 1.9e−17 > 0)."""
    from fractions import Fraction

    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if not v.size:
        return float("nan")
    # a difference of two scores has a denominator <= EXACT_DENOMINATOR too for checklists of <= 1,000 items
    return float(sum(Fraction(x).limit_denominator(EXACT_DENOMINATOR) for x in v.tolist()) / v.size)
