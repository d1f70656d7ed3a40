"""Statistics from the reference libraries, and the task-clustered bootstrap they lack.

Every point estimate a report prints is the reference library's, called directly on the rows:
AUC and the ROC curve `sklearn.metrics.roc_auc_score` / `roc_curve`, Spearman's rho
`scipy.stats.spearmanr`, Krippendorff's alpha `krippendorff.alpha` (up to the size the package can
hold in memory: KRIPPENDORFF_MAX_CELLS), the Wilcoxon signed-rank test
`scipy.stats.wilcoxon`, the sign test `scipy.stats.binomtest` (Cohen's kappa: sklearn's
`cohen_kappa_score`, in item_validity). The functions here validate the input first, so that bad
data fails with a message instead of a library's NaN, and say when a statistic is undefined.

What the libraries do not have is the task-clustered bootstrap. Trajectories of the same task
share difficulty, so rows are not independent: confidence intervals resample whole tasks
(clusters), never single rows, or they come out too narrow. A resample is a vector of cluster
counts (`resample_counts`); the draws are computed from per-cluster aggregates weighted by
those counts (AUC, ΔAUC, Spearman, alpha, a mean difference), 2,000 resamples of 20,000 rows
in a fraction of a second where calling the library on each expanded resample takes minutes.
tests/test_stats_library.py expands every resample into its rows and checks each draw against
the library. The interval is the percentile interval of the valid draws, `numpy.percentile`
(what `scipy.stats.bootstrap(method="percentile")` computes from its own draws).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import math
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
    """ROC AUC, `sklearn.metrics.roc_auc_score(labels, scores)`, after checking the input.

    Ties count one half (partial-credit scores are coarse, k/n); UndefinedStatistic with one class.
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
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s))


def roc_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds): `sklearn.metrics.roc_curve(labels, scores)` after checking the input."""
    y = _as_binary_labels(labels)
    s = np.asarray(scores, dtype=float)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be one-dimensional and of equal length, got {s.shape} and {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinite values")
    if not y.any() or y.all():
        raise UndefinedStatistic(f"a ROC curve needs both classes (n_pos={int(y.sum())}, n_neg={int((~y).sum())})")
    from sklearn.metrics import roc_curve as sk_roc_curve

    fpr, tpr, thresholds = sk_roc_curve(y, s)
    return fpr, tpr, thresholds


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


# ---------------------------------------------------------------------------------------------
# Fast task-clustered bootstraps.
#
# A clustered resample is fully described by how often each cluster was drawn: resample i draws
# k clusters with replacement (`rng.integers(0, k, size=k)` of `numpy.random.default_rng(seed)`,
# clusters in sorted order) and becomes a vector of cluster counts. The statistic is computed from
# per-cluster aggregates weighted by those counts; the rows of a resample are every row of cluster j
# repeated counts[i, j] times, which is how tests/test_stats_library.py expands each resample and
# checks each draw against the library. That is what makes 2,000 resamples of 20,000 trajectories
# affordable.
# ---------------------------------------------------------------------------------------------

_CHUNK_CELLS = 4_000_000  # resamples x cells per block: bounds memory of the vectorized draws


def cluster_codes(keys: Any, name: str = "cluster") -> tuple[np.ndarray, int]:
    """Integer code per row (clusters in sorted order, so row order does not change the draws)."""
    keys = pd.Series(keys)
    if keys.isna().any():
        raise ValueError(f"{name} column contains missing values")
    codes, uniques = pd.factorize(keys, sort=True)
    return codes.astype(np.int64), len(uniques)


def resample_counts(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n_clusters) draw counts: row i counts the k clusters resample i draws with replacement.

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
        (`auc_by_cells`, the path taken when M would be too large; tests compare both, and both with sklearn)."""
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
        """AUC per row of cluster weights (R, K) from per-level sums over the cells (when the pair matrix is too large)."""
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
    """AUC (sklearn's) with a task-clustered percentile CI; each draw is the AUC of one resample's rows."""
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
    two independent CIs. Each draw is roc_auc_score(a) - roc_auc_score(b) on one resample's rows.
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
    """Sorted order and tie groups of one variable (rows with equal values share their average rank)."""

    def __init__(self, x: np.ndarray):
        self.order = np.argsort(x, kind="stable")
        xs = x[self.order]
        self.starts = np.r_[0, np.flatnonzero(np.diff(xs) != 0) + 1]
        group = np.zeros(x.size, dtype=np.int64)
        group[self.starts[1:]] = 1
        self.group_sorted = np.cumsum(group)
        self.group = np.empty_like(self.group_sorted)
        self.group[self.order] = self.group_sorted


class _ClusterRanks:
    """Average ranks when every row of cluster k appears counts[r, k] times, from tie-group x cluster counts.

    The weight of a tie group is counts @ T (T[k, g]: rows of cluster k in tie group g), a sparse
    product instead of gathering and summing R x N row weights; all sums are of integers, so the
    ranks are exactly `scipy.stats.rankdata` of the resample's rows (tests compare)."""

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


class _JointGroups:
    """Spearman draws from tie groups: rows with the same (x tie group, y tie group) share their ranks.

    A resample's weighted Pearson sums over rows are sums over tie groups (means, variances) and
    over distinct (x group, y group) pairs (covariance), so each resample costs the number of
    distinct values and pairs instead of the number of rows. The group weights are exact integer
    sums; only the order of the floating-point sums differs from `scipy.stats.spearmanr` on the
    resample's rows (tests compare every draw to 1e-12)."""

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
            # undefined: a variable constant in the resample (its ranks differ from their mean only by rounding)
            scale = tot ** 3
            bad = (va <= 1e-12 * scale) | (vb <= 1e-12 * scale) | (tot < 2)
            out[sl] = np.where(bad, np.nan, np.clip(r, -1.0, 1.0))
        return out


def spearman(x: Any, y: Any) -> float:
    """Spearman's rho, `scipy.stats.spearmanr(x, y).statistic`; UndefinedStatistic if either is constant."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise ValueError(f"x and y must be one-dimensional and of equal length, got {xa.shape} and {ya.shape}")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ValueError("x or y contains NaN; drop those rows first")
    if xa.size < 2:
        raise UndefinedStatistic("Spearman's rho needs at least two observations")
    if (xa == xa[0]).all() or (ya == ya[0]).all():
        raise UndefinedStatistic("Spearman's rho is undefined when a variable is constant")
    from scipy.stats import spearmanr

    return float(spearmanr(xa, ya).statistic)


def clustered_spearman_bootstrap(x: Any, y: Any, clusters: Any, n_resamples: int = 2000, seed: int = 0,
                                 ci: float = 0.95) -> BootstrapResult:
    """Spearman's rho (scipy's) with a cluster (task) bootstrap percentile CI; each draw is spearmanr of one resample's rows."""
    estimate = spearman(x, y)
    codes, k = cluster_codes(clusters)
    counts = resample_counts(k, n_resamples, seed)
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    draws = _JointGroups(xa, ya, codes, k).draws(counts)
    return bootstrap_result(estimate, draws, ci=ci, n_resamples=n_resamples, seed=seed, n_clusters=k)


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


KRIPPENDORFF_MAX_CELLS = 25_000_000
"""Largest units x values x values that `krippendorff.alpha` is asked for. The package builds its coincidence
matrix from (units, V, V) arrays (three of them, float64): 25 million cells are 200 MB each. Above that (interval
scores take hundreds of distinct values: 6,000 units x 1,001 values asked for 44.8 GiB) alpha comes from the
per-cluster sums of `_AlphaParts`, the same formula that every bootstrap draw uses and that the tests check
against the package on every resample."""


def krippendorff_alpha(data: Any, level: str = "interval") -> float:
    """Krippendorff's alpha of a coders x units matrix (NaN = missing): `krippendorff.alpha(data,
    level_of_measurement=level)` (up to KRIPPENDORFF_MAX_CELLS, see there). UndefinedStatistic without a
    pairable unit or without variation among the pairable values (the package would divide by zero)."""
    arr = np.asarray(data, dtype=float)
    parts = _AlphaParts(arr, level, np.zeros(arr.shape[1] if arr.ndim == 2 else 0, dtype=np.int64), 1)
    if parts.n_units == 0:
        raise UndefinedStatistic("alpha needs at least one unit coded by two or more coders")
    own = float(parts.alpha(np.ones(1))[0])
    if not math.isfinite(own):
        raise UndefinedStatistic("alpha is undefined: all pairable values are identical (no expected disagreement)")
    n_values = np.unique(arr[~np.isnan(arr)]).size
    if arr.shape[1] * n_values * n_values > KRIPPENDORFF_MAX_CELLS:
        return own
    import krippendorff

    return float(krippendorff.alpha(reliability_data=arr, level_of_measurement=level))


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


def signed_rank_test(deltas: Any) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test of paired differences, zeros dropped ('wilcox'):
    `scipy.stats.wilcoxon(d, zero_method="wilcox")` with its default method 'auto' (the exact
    distribution, sign-flip enumeration, or the normal approximation, as scipy chooses).
    NaN differences are left out. Returns a JSON-ready dict; p is None with a reason when the test is
    undefined (no non-zero delta).
    """
    d = np.asarray(deltas, dtype=float)
    d = d[~np.isnan(d)]
    out: dict[str, Any] = {"n": int(d.size), "n_nonzero": int((d != 0).sum()), "statistic": None, "p_value": None}
    if out["n_nonzero"] == 0:
        out["skipped"] = "no non-zero difference" if d.size else "no pairs"
        return out
    from scipy.stats import wilcoxon

    res = wilcoxon(d, zero_method="wilcox")
    out["statistic"] = float(res.statistic)
    out["p_value"] = float(res.pvalue)
    return out


def sign_test(deltas: Any) -> dict[str, Any]:
    """Counts of positive / negative / zero differences and the exact two-sided sign test:
    `scipy.stats.binomtest(higher, higher + lower, 0.5).pvalue` (ties left out)."""
    d = np.asarray(deltas, dtype=float)
    d = d[~np.isnan(d)]
    higher, lower = int((d > 0).sum()), int((d < 0).sum())
    out: dict[str, Any] = {"n": int(d.size), "higher": higher, "lower": lower, "tied": int((d == 0).sum()),
                           "median_delta": float(np.median(d)) if d.size else None, "p_value": None}
    if higher + lower == 0:
        out["skipped"] = "no untied pair" if d.size else "no pairs"
        return out
    from scipy.stats import binomtest

    out["p_value"] = float(binomtest(higher, higher + lower, 0.5).pvalue)
    return out


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
