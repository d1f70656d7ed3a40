"""RQ1 figures, rendered byte-deterministically so DVC sees no change when nothing changed.

Determinism: Agg backend, fixed dpi and rcParams, no timestamps/software strings in PNG/PDF
metadata, and jitter drawn from a seeded generator rather than global random state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gcpc.analysis.rq1 import LABEL, decided, ordered_entries, resolve_config, score_values  # noqa: E402

DPI = 200
PNG_METADATA = {"Software": None}
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}
RC = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "pdf.fonttype": 42,  # embedded TrueType: text stays editable in the paper
    "svg.hashsalt": "gcpc",
    "axes.spines.top": False,
    "axes.spines.right": False,
}
PASS_COLOR = "#1b9e77"
FAIL_COLOR = "#d95f02"


def judge_label(params: dict[str, Any]) -> str | None:
    """'provider/model' of the judge from params (`llm.judge.*`, else `judge.*`), or None if absent."""
    for path in (("llm", "judge"), ("judge",)):
        node: Any = params
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            parts = [str(node[k]) for k in ("provider", "model") if node.get(k)]
            if parts:
                return "/".join(parts)
    return None


def forest_plot(result: dict[str, Any], judge: str | None = None) -> Figure:
    """AUC point and CI bar per arm x score, against the 0.5 chance line."""
    entries = ordered_entries(result)
    level = int(round(100 * result["config"]["bootstrap"]["ci"]))
    with plt.rc_context(RC):
        fig = Figure(figsize=(6.0, 0.45 * max(len(entries), 2) + 1.2), dpi=DPI)
        ax = fig.add_subplot()
        ys = np.arange(len(entries))[::-1]
        for y, (arm, score, e) in zip(ys, entries, strict=True):
            if e.get("auc") is None:
                ax.text(0.5, y, "undefined (" + str(e.get("skipped", "no estimate")) + ")", va="center",
                        ha="center", fontsize=7, color="0.4")
                continue
            if e.get("ci_low") is not None:
                ax.plot([e["ci_low"], e["ci_high"]], [y, y], color="0.2", lw=1.5, solid_capstyle="butt")
            ax.plot([e["auc"]], [y], "o", color="#3366aa", ms=6, zorder=3)
            ax.text(1.02, y, f"{e['auc']:.3f}", va="center", ha="left", fontsize=8, transform=ax.get_yaxis_transform())
        ax.axvline(0.5, color="0.5", ls="--", lw=1)
        ax.set_yticks(ys, [f"{arm} · {score}" for arm, score, _ in entries])
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(-0.7, len(entries) - 0.3)
        ax.set_xlabel(f"AUC vs official PASS ({level}% task-clustered bootstrap CI)")
        title = "RQ1: checklist score AUC"
        if judge:
            title += f" (judge: {judge})"
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
    return fig


def score_by_outcome_plot(metrics: pd.DataFrame, cfg: dict[str, Any] | None = None, seed: int = 0) -> Figure:
    """Box + jittered points of each score by PASS/FAIL, one row per arm.

    Uses the same filtering and zero-evidence filling as rq1 so the picture matches the AUCs.
    """
    c = resolve_config(cfg)
    rows = decided(metrics)
    arms = sorted(rows["arm"].unique().tolist())
    scores = c["scores"]
    rng = np.random.default_rng(seed)
    with plt.rc_context(RC):
        fig = Figure(figsize=(2.8 * len(scores) + 0.6, 2.4 * max(len(arms), 1) + 0.4), dpi=DPI)
        axes = fig.subplots(max(len(arms), 1), len(scores), squeeze=False, sharey=True)
        for i, arm in enumerate(arms):
            arm_rows = rows[rows["arm"] == arm]
            for j, score in enumerate(scores):
                ax = axes[i][j]
                vals, info = score_values(arm_rows, score, c["zero_evidence_score"])
                filled = vals.index.isin(arm_rows.index[arm_rows[score].isna()])
                labels = vals[LABEL].to_numpy()
                values = vals[score].to_numpy(float)
                sizes = []
                for k, (is_pass, color) in enumerate(((False, FAIL_COLOR), (True, PASS_COLOR))):
                    sel = labels == is_pass
                    g = values[sel]
                    sizes.append(int(sel.sum()))
                    if not g.size:
                        continue
                    ax.boxplot([g], positions=[k], widths=0.5, showfliers=False,
                               medianprops={"color": "0.1"}, boxprops={"color": "0.3"},
                               whiskerprops={"color": "0.3"}, capprops={"color": "0.3"})
                    x = k + rng.uniform(-0.15, 0.15, size=g.size)
                    hollow = filled[sel]
                    ax.scatter(x[~hollow], g[~hollow], s=8, alpha=0.6, color=color, linewidths=0, zorder=3)
                    # zero-evidence logs carry an imputed score: drawn hollow so they are not mistaken for data
                    ax.scatter(x[hollow], g[hollow], s=10, facecolors="none", edgecolors=color, linewidths=0.7,
                               zorder=3)
                ax.set_xticks([0, 1], [f"FAIL\n(n={sizes[0]})", f"PASS\n(n={sizes[1]})"])
                ax.set_xlim(-0.6, 1.6)
                ax.set_ylim(-0.05, 1.05)
                title = f"{arm} · {score}"
                if info["n_filled"]:
                    title += f"\n{info['n_filled']} zero-evidence (hollow) scored {c['zero_evidence_score']:g}"
                elif info["n_dropped"]:
                    title += f"\n{info['n_dropped']} zero-evidence dropped"
                ax.set_title(title, fontsize=8)
                if j == 0:
                    ax.set_ylabel("score")
        fig.tight_layout()
    return fig


def save_figure(fig: Figure, stem: str | Path) -> list[Path]:
    """Write `<stem>.png` and `<stem>.pdf` with metadata stripped, so reruns are byte-identical."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_suffix(".png"), stem.with_suffix(".pdf")
    with plt.rc_context(RC):
        fig.savefig(png, dpi=DPI, format="png", metadata=PNG_METADATA)
        fig.savefig(pdf, dpi=DPI, format="pdf", metadata=PDF_METADATA)
    return [png, pdf]
