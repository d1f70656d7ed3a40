"""RQ1: does grounded checklist partial credit rank PASS trajectories above FAIL ones?

AUC of each score against the official outcome, per judging arm, with task-clustered bootstrap
CIs, a by-condition breakdown and paired deltas. Everything returned is JSON-serializable
with undefined values as None (never NaN), so it can go straight into DVC metrics.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from gcpc.analysis.common import (
    DEFAULTS,
    OUTCOME_USING_SCORES,
    active_scores,
    fmt,
    fmt_ci,
    latex_table,
    markdown_table,
    outcome_free_values,
    with_method_arm,
    zero_evidence_list,
    zero_evidence_mask,
    zero_evidence_text,
)
from gcpc.analysis.parallel import run_parts
from gcpc.analysis.stats import (
    BootstrapResult,
    clustered_auc_bootstrap,
    paired_delta_auc,
    roc_curve,
)

DECIDED_OUTCOMES = ("PASS", "FAIL")
DEFAULT_SCORES = ("gcpc_plain", "gcpc_outcome")
LABEL = "_pass"  # internal label column: outcome == PASS
CLUSTER = "task_id"
REQUIRED_COLUMNS = ("trajectory_id", "task_id", "condition", "outcome", "arm", "zero_evidence")


def resolve_config(cfg: dict[str, Any] | None) -> dict[str, Any]:
    """The `analysis` params section with defaults filled in, so results record what was used."""
    cfg = dict(cfg or {})
    boot = dict(cfg.get("bootstrap") or {})
    scores = cfg.get("scores") or list(DEFAULT_SCORES)
    if isinstance(scores, str):
        scores = [scores]
    zes = cfg.get("zero_evidence_score")
    resolved = {
        "scores": [str(s) for s in scores],
        "bootstrap": {
            "n_resamples": int(boot.get("n_resamples", 2000)),
            "seed": int(boot.get("seed", 0)),
            "ci": float(boot.get("ci", 0.95)),
        },
        # None means: drop trajectories whose score is undefined instead of filling them.
        "zero_evidence_score": None if zes is None else float(zes),
        "extra_scores": [str(s) for s in (cfg.get("extra_scores") if cfg.get("extra_scores") is not None
                                          else DEFAULTS["extra_scores"])],
        "primary_arm": str(cfg["primary_arm"]) if cfg.get("primary_arm") else None,  # None: rq1 takes it from the table
        "headline_score": str(cfg.get("headline_score") or DEFAULTS["headline_score"]),
        "reference_arms": _reference_arms(cfg),
        "reference_score": str(cfg.get("reference_score") or DEFAULTS["reference_score"]),
        "default_variants": [str(v) for v in (cfg.get("default_variants") if cfg.get("default_variants") is not None
                                               else DEFAULTS["default_variants"])],
    }
    for key in ("headline_score", "reference_score"):
        if resolved[key] in OUTCOME_USING_SCORES:
            raise ValueError(f"params.yaml: analysis.{key} = {resolved[key]!r} uses the official outcome; the headline "
                             "compares arms on equal information (§4.1), so it must be an outcome-blind score such as gcpc_plain")
    if resolved["zero_evidence_score"] is not None and not math.isfinite(resolved["zero_evidence_score"]):
        raise ValueError("analysis.zero_evidence_score must be a finite number or null")
    return resolved


def _reference_arms(cfg: dict[str, Any]) -> list[str]:
    """The equal-information reference arms, headline first. `reference_arm` (one name, older params) goes first."""
    arms = cfg.get("reference_arms")
    arms = list(DEFAULTS["reference_arms"]) if arms is None else ([arms] if isinstance(arms, str) else list(arms))
    single = cfg.get("reference_arm")
    if single:
        arms = [str(single)] + [a for a in arms if a != single]
    return [str(a) for a in arms]


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(obj: Any) -> Any:
    """Recursively turn numpy scalars into Python ones and NaN/inf into None."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _finite(obj)
    return obj


def _check_columns(metrics: pd.DataFrame, scores: list[str]) -> None:
    missing = [c for c in (*REQUIRED_COLUMNS, *scores) if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics table lacks column(s): {', '.join(missing)}")


def decided(metrics: pd.DataFrame) -> pd.DataFrame:
    """Rows with an official PASS/FAIL, plus the boolean label column."""
    out = metrics[metrics["outcome"].isin(DECIDED_OUTCOMES)].copy()
    out[LABEL] = out["outcome"].eq("PASS")
    return out


def score_values(rows: pd.DataFrame, score: str, zero_evidence_score: float | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Rows with column ``score`` made defined, and counts saying how.

    Paper §4.1: zero-evidence trajectories (as finalize marked them: every item Abstain; an
    action-free log for floor arms) are excluded from outcome-free scores — the default, ``zero_evidence_score`` None.
    The named variant ``zero_evidence_score: 0.0`` scores an undefined zero-evidence score 0 instead.
    A score that uses the official outcome keeps them (`common.outcome_free_values`). Rows whose score
    is undefined for another reason are dropped either way.
    """
    raw = rows[score].astype(float)
    values = outcome_free_values(rows, score, zero_evidence_score)
    ze = zero_evidence_mask(rows)
    keep = values.notna()
    info = {
        "n_zero_evidence": int(ze.sum()),
        "n_zero_evidence_excluded": int((ze & ~keep).sum()),
        "n_undefined": int(raw.isna().sum()),
        "n_filled": int((raw.isna() & values.notna()).sum()),
        "n_dropped": int((~keep).sum()),
    }
    out = rows[keep.to_numpy()].copy()
    out[score] = values[keep]
    return out, info


def _counts(rows: pd.DataFrame) -> dict[str, int]:
    n_pass = int(rows[LABEL].sum())
    return {
        "n": int(len(rows)),
        "n_pass": n_pass,
        "n_fail": int(len(rows) - n_pass),
        "n_tasks": int(rows[CLUSTER].nunique()),
    }


def _auc_entry(rows: pd.DataFrame, score: str, boot: dict[str, Any]) -> dict[str, Any]:
    """AUC with clustered CI, or a skip reason when one class is missing."""
    entry: dict[str, Any] = _counts(rows)
    if entry["n_pass"] == 0 or entry["n_fail"] == 0:
        entry.update(auc=None, ci_low=None, ci_high=None,
                     skipped=f"single class (n_pass={entry['n_pass']}, n_fail={entry['n_fail']})")
        return entry
    res: BootstrapResult = clustered_auc_bootstrap(
        rows, score, LABEL, CLUSTER, n_resamples=boot["n_resamples"], seed=boot["seed"], ci=boot["ci"],
    )
    entry.update(
        auc=res.estimate,
        ci_low=res.ci_low,
        ci_high=res.ci_high,
        n_resamples=res.n_resamples,
        n_valid=res.n_valid,
        n_skipped=res.n_skipped,
    )
    return entry


def _delta_entry(rows: pd.DataFrame, a: str, b: str, boot: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = _counts(rows)
    if entry["n_pass"] == 0 or entry["n_fail"] == 0:
        entry.update(delta=None, ci_low=None, ci_high=None, share_positive=None,
                     skipped=f"single class (n_pass={entry['n_pass']}, n_fail={entry['n_fail']})")
        return entry
    res = paired_delta_auc(rows, a, b, LABEL, CLUSTER, n_resamples=boot["n_resamples"], seed=boot["seed"], ci=boot["ci"])
    entry.update(delta=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high, share_positive=res.share_positive,
                 n_resamples=res.n_resamples, n_valid=res.n_valid, n_skipped=res.n_skipped)
    return entry


def _not_produced(rows: pd.DataFrame, score: str) -> dict[str, Any]:
    entry: dict[str, Any] = _counts(rows)
    entry.update(auc=None, ci_low=None, ci_high=None, n_zero_evidence=int(zero_evidence_mask(rows).sum()),
                 n_undefined=int(len(rows)), n_filled=0, n_dropped=0,
                 skipped=f"this arm produces no {score} (all values missing)")
    return entry


def reference_deltas(prepared: dict[tuple[str, str], pd.DataFrame], c: dict[str, Any], arms: list[str]) -> dict[str, Any]:
    """The headline comparison: paired AUC(primary arm, headline score) − AUC(reference arm, reference score).

    Equal information only (§4.1): plain GCPC (log only) against each outcome-blind reference arm
    (Holistic first, then Generic and TICK), both AUCs on exactly the trajectories both arms scored,
    from the same task resamples; `share_positive` is the share of draws above zero. No outcome-using
    score ever appears here (resolve_config refuses one).
    """
    primary, score, ref_score = c["primary_arm"], c["headline_score"], c["reference_score"]
    out: dict[str, Any] = {"primary_arm": primary, "headline_score": score, "reference_score": ref_score,
                           "reference_arm": c["reference_arms"][0] if c["reference_arms"] else None, "deltas": [],
                           "missing": []}
    if primary not in arms or (primary, score) not in prepared:
        out.update(available=False, reason=f"primary arm '{primary}' has no usable '{score}' "
                                           f"(arms present: {', '.join(arms) or 'none'})")
        return out
    left = prepared[(primary, score)][["trajectory_id", CLUSTER, LABEL, "condition", score]].rename(columns={score: "_a"})
    for ref in c["reference_arms"]:
        if ref == primary:
            continue
        if (ref, ref_score) not in prepared:
            out["missing"].append({"arm": ref, "reason": f"arm '{ref}' not in the metrics table or has no usable '{ref_score}'"})
            continue
        right = prepared[(ref, ref_score)][["trajectory_id", ref_score]].rename(columns={ref_score: "_ref"})
        entry: dict[str, Any] = {"score": score, "reference_arm": ref, "a": f"{primary}:{score}", "b": f"{ref}:{ref_score}",
                                 "headline": not out["deltas"]}
        joined = left.merge(right, on="trajectory_id", validate="one_to_one")
        if joined.empty:
            entry.update(n=0, delta=None, ci_low=None, ci_high=None, share_positive=None, skipped="no shared trajectories")
        else:
            entry.update(_delta_entry(joined, "_a", "_ref", c["bootstrap"]))
            entry["by_condition"] = {cond: _delta_entry(joined[joined["condition"].astype(str) == cond], "_a", "_ref", c["bootstrap"])
                                     for cond in sorted(joined["condition"].astype(str).unique().tolist())}
        out["deltas"].append(entry)
    out["available"] = bool(out["deltas"])
    if not out["available"]:
        out["reason"] = "no reference arm in the metrics table: " + "; ".join(m["reason"] for m in out["missing"])
    return out


def perfect_agreement(rows: pd.DataFrame, zero_evidence_score: float | None) -> dict[str, Any]:
    """The paper's §3.4 check of Perfect, per arm: the share of trajectories with an official verdict
    on which Perfect (no item No after the official-outcome step) agrees with that verdict (Perfect on
    PASS, not Perfect on FAIL), once with the endpoint item included and once excluded (the paper:
    97.6 % and 66.4 %). With the endpoint included Perfect also needs the endpoint's Yes, i.e. PASS, so
    it is `perfect and PASS` (tests/test_perfect_agreement.py checks this against `is_perfect` on labels
    with the endpoint). `perfect_given_pass` / `not_perfect_given_fail` (endpoint excluded) are extras,
    not figures of the paper. Perfect uses the outcome, so it is reported on its own, never against an
    outcome-blind arm. Because it uses the outcome, zero-evidence trajectories are kept (the paper
    excludes them from outcome-free analyses only, §4.1; `n_zero_evidence` counts them), whatever
    ``zero_evidence_score`` says (it fills outcome-free scores only)."""
    out: dict[str, Any] = {}
    if "perfect" not in rows:
        return out
    for arm in sorted(rows["arm"].unique().tolist()):
        g = rows[(rows["arm"] == arm) & rows["perfect"].notna()]
        if g.empty:
            continue
        perfect = g["perfect"].astype(bool)
        is_pass = g[LABEL].astype(bool)
        n_pass, n_fail = int(is_pass.sum()), int((~is_pass).sum())
        out[str(arm)] = {"n_pass": n_pass, "n_fail": n_fail, "n_zero_evidence": int(zero_evidence_mask(g).sum()),
                         "agreement_endpoint_included": float(((perfect & is_pass) == is_pass).mean()),
                         "agreement_endpoint_excluded": float((perfect == is_pass).mean()),
                         "perfect_given_pass": float(perfect[is_pass].mean()) if n_pass else None,
                         "not_perfect_given_fail": float((~perfect[~is_pass]).mean()) if n_fail else None}
    return out


def arm_kinds(metrics: pd.DataFrame) -> dict[str, str]:
    """Arm id -> kind (checklist, generic, tick, holistic) as finalize recorded it; figures label arms by kind."""
    if "arm_kind" not in metrics:
        return {}
    pairs = metrics[["arm", "arm_kind"]].dropna().drop_duplicates("arm")
    return {str(a): str(k) for a, k in sorted(zip(pairs["arm"], pairs["arm_kind"], strict=True))}


def table_primary_arm(metrics: pd.DataFrame) -> str:
    """Primary arm of a call without one (the stages always pass the arm derived from the arm set):
    the first checklist arm of the table, else its first arm."""
    kinds = metrics["arm_kind"] if "arm_kind" in metrics else pd.Series("checklist", index=metrics.index)
    checklist = metrics.loc[kinds == "checklist", "arm"]
    return str((checklist if len(checklist) else metrics["arm"]).iloc[0])


def rq1(metrics: pd.DataFrame, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Full RQ1 result: per arm x score AUC (+CI), by condition, and paired deltas.

    Deltas: within an arm, later scores minus the first (e.g. gcpc_outcome - gcpc_plain);
    across arms, for each score, arm_a - arm_b on the trajectories both arms scored; and the
    reference comparison (primary arm - reference arm, GCPC - Holistic in the paper).
    All bootstraps share one seed, so every AUC uses the same task resamples.
    A `variant` column, when present, is folded into the arm label (see common.with_method_arm).
    """
    c = resolve_config(cfg)
    _check_columns(metrics, c["scores"])
    if c["primary_arm"] is None and len(metrics):
        c["primary_arm"] = table_primary_arm(metrics)
    c["scores"] = active_scores(metrics, c)  # configured scores plus the variants present (e.g. per-test propagation)
    scores, boot, zes = c["scores"], c["bootstrap"], c["zero_evidence_score"]
    metrics = with_method_arm(metrics, c["default_variants"])

    per_traj = metrics.drop_duplicates("trajectory_id")
    rows = decided(metrics)
    arms = sorted(rows["arm"].unique().tolist())
    result: dict[str, Any] = {
        "config": c,
        "n_rows_total": int(len(metrics)),
        "n_trajectories_total": int(per_traj.shape[0]),
        "outcome_counts": {str(k): int(v) for k, v in sorted(per_traj["outcome"].value_counts().items())},
        "n_excluded_other": int((~per_traj["outcome"].isin(DECIDED_OUTCOMES)).sum()),
        "n_rows_excluded_other": int(len(metrics) - len(rows)),
        "n_trajectories": int(rows["trajectory_id"].nunique()),
        "n_pass": int(rows.drop_duplicates("trajectory_id")[LABEL].sum()),
        "n_tasks": int(rows[CLUSTER].nunique()),
        "arm_kinds": arm_kinds(metrics),
        "arms": {},
        "by_condition": {},
        "deltas": {"within_arm": [], "between_arms": []},
    }
    result["n_fail"] = result["n_trajectories"] - result["n_pass"]

    extra = [s for s in dict.fromkeys((c["headline_score"], c["reference_score"]))
             if s not in scores and s in metrics.columns]
    arm_rows_of = {arm: rows[rows["arm"] == arm] for arm in arms}
    prepared: dict[tuple[str, str], pd.DataFrame] = {}
    infos: dict[tuple[str, str], dict[str, Any]] = {}
    for arm, arm_rows in arm_rows_of.items():
        for score in [*scores, *extra]:
            if not arm_rows[score].isna().all():
                prepared[(arm, score)], infos[(arm, score)] = score_values(arm_rows, score, zes)

    def entries() -> tuple[dict[str, Any], dict[str, Any]]:
        per_arm: dict[str, Any] = {}
        by_condition: dict[str, Any] = {}
        for arm, arm_rows in arm_rows_of.items():
            per_arm[arm], by_condition[arm] = {}, {}
            for score in scores:
                if (arm, score) not in prepared:
                    per_arm[arm][score] = _not_produced(arm_rows, score)
                    by_condition[arm][score] = {}
                    continue
                vals = prepared[(arm, score)]
                entry = _auc_entry(vals, score, boot)
                entry.update(infos[(arm, score)])
                per_arm[arm][score] = entry
                by_cond: dict[str, Any] = {}
                for cond in sorted(vals["condition"].astype(str).unique().tolist()):
                    by_cond[cond] = _auc_entry(vals[vals["condition"].astype(str) == cond], score, boot)
                by_condition[arm][score] = by_cond
        return per_arm, by_condition

    def within_arm_deltas() -> list[dict[str, Any]]:
        out = []
        for arm, arm_rows in arm_rows_of.items():
            # Within-arm deltas need both scores defined on the same rows.
            produced = [s for s in scores if (arm, s) in prepared]
            if len(produced) > 1:
                base = produced[0]
                for other in produced[1:]:
                    both = arm_rows.copy()
                    for s in (base, other):
                        both = score_values(both, s, zes)[0]
                    out.append({"arm": arm, "a": other, "b": base, **_delta_entry(both, other, base, boot)})
        return out

    def between_arm_deltas(score: str) -> list[dict[str, Any]]:
        out = []
        for a, b in itertools.combinations(arms, 2):
            entry: dict[str, Any] = {"score": score, "a": a, "b": b}
            if (a, score) not in prepared or (b, score) not in prepared:
                entry.update(n=0, delta=None, ci_low=None, ci_high=None, skipped=f"{score} missing in one arm")
                out.append(entry)
                continue
            left = prepared[(a, score)][["trajectory_id", CLUSTER, LABEL, score]]
            right = prepared[(b, score)][["trajectory_id", score]]
            joined = left.merge(right, on="trajectory_id", suffixes=("_a", "_b"), validate="one_to_one")
            if joined.empty:
                entry.update(n=0, delta=None, ci_low=None, ci_high=None, skipped="no shared trajectories")
            else:
                entry.update(_delta_entry(joined, f"{score}_a", f"{score}_b", boot))
            out.append(entry)
        return out

    # the single AUCs and each set of paired deltas are independent: side by side where there are cores
    # (gcpc.analysis.parallel)
    parts = run_parts({"entries": entries, "within_arm": within_arm_deltas}
                      | {f"between {score}": functools.partial(between_arm_deltas, score) for score in scores}
                      | {"reference": lambda: reference_deltas(prepared, c, arms), "perfect": lambda: perfect_agreement(rows, zes)})
    result["arms"], result["by_condition"] = parts["entries"]
    result["deltas"] = {"within_arm": parts["within_arm"],
                        "between_arms": [e for score in scores for e in parts[f"between {score}"]]}
    result["reference"] = parts["reference"]
    result["perfect_agreement"] = parts["perfect"]
    result["zero_evidence_excluded"] = zero_evidence_list(rows) if zes is None else []
    return _jsonable(result)


def compact_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Small nested dict for `metrics/rq1.json` (what `dvc metrics diff` compares)."""
    out: dict[str, Any] = {}
    for arm, per_score in result["arms"].items():
        out[arm] = {
            score: {"auc": e.get("auc"), "ci_low": e.get("ci_low"), "ci_high": e.get("ci_high")}
            for score, e in per_score.items()
        }
    ref = result.get("reference") or {}
    if ref.get("available"):
        # keyed by reference arm: plain GCPC − that arm, equal information (§4.1)
        out["reference_delta"] = {d["reference_arm"]: {"delta": d.get("delta"), "ci_low": d.get("ci_low"), "ci_high": d.get("ci_high"),
                                                       "share_positive": d.get("share_positive")} for d in ref["deltas"]}
    out["n_zero_evidence_excluded"] = len(result.get("zero_evidence_excluded") or [])
    out["n_trajectories"] = result["n_trajectories"]
    out["n_tasks"] = result["n_tasks"]
    out["n_excluded_other"] = result["n_excluded_other"]
    return _jsonable(out)


PLAIN_SCORE_NAMES = {"floor": "floor feature", "holistic": "0–10 / 10", "tick": "YES share", "generic": "gcpc_plain (Yes share)"}
"""What the log-only column `gcpc_plain` holds for an arm that is not a checklist arm, as the tables name it
(the column name would call a floor's feature or Holistic's score plain GCPC)."""


def score_name(result: dict[str, Any], arm: str, score: str) -> str:
    """The Score cell of a table: the metrics column, named for what it holds in this arm (`PLAIN_SCORE_NAMES`)."""
    kind = (result.get("arm_kinds") or {}).get(arm.split(":", 1)[0], "")
    return PLAIN_SCORE_NAMES.get(kind, score) if score == "gcpc_plain" else score


def ordered_entries(result: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(arm, score, entry) with arms sorted and scores in config order.

    JSON written with sorted keys loses the configured score order; this restores it.
    """
    order = {s: i for i, s in enumerate(result["config"]["scores"])}
    out = []
    for arm in sorted(result["arms"]):
        per = result["arms"][arm]
        for score in sorted(per, key=lambda s: (order.get(s, len(order)), s)):
            out.append((arm, score, per[score]))
    return out


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _table_rows(result: dict[str, Any]) -> tuple[list[tuple[str, ...]], int]:
    level = int(round(100 * result["config"]["bootstrap"]["ci"]))
    rows = []
    for arm, score, e in ordered_entries(result):
        if str(e.get("skipped", "")).startswith("this arm produces no"):
            continue
        ci = "n/a" if e.get("ci_low") is None else f"[{_fmt(e['ci_low'])}, {_fmt(e['ci_high'])}]"
        rows.append((arm, score_name(result, arm, score), _fmt(e.get("auc")), ci, f"{e['n']} ({e['n_pass']}/{e['n_fail']})",
                     str(e["n_tasks"]), str(e.get("n_zero_evidence_excluded", e.get("n_zero_evidence", 0)))))
    return rows, level


def rq1_table_markdown(result: dict[str, Any]) -> str:
    """Per arm x score AUC table for the paper draft / README."""
    rows, level = _table_rows(result)
    header = ["Arm", "Score", "AUC", f"{level}% CI", "n (pass/fail)", "Tasks", "Zero-evidence" + (" excluded" if
                                                                                            result["config"]["zero_evidence_score"] is None else "")]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * 5) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    zes = result["config"]["zero_evidence_score"]
    lines.append("")
    lines.append(
        f"AUC vs official PASS; {level}% percentile CI from {result['config']['bootstrap']['n_resamples']} "
        f"task-clustered bootstrap resamples (seed {result['config']['bootstrap']['seed']}). "
        f"{zero_evidence_text(zes)} (listed in rq1.json `zero_evidence_excluded`; column 'Zero-evidence' counts the rows "
        f"each AUC left out); "
        f"{result['n_excluded_other']} trajectories with outcome other than PASS/FAIL excluded. "
        f"Scores {', '.join(s for s in OUTCOME_USING_SCORES)} use the official outcome: compare them only with each other."
    )
    return "\n".join(lines) + "\n"


def _tex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"), ("$", r"\$")):
        text = text.replace(a, b)
    return text


def rq1_table_latex(result: dict[str, Any]) -> str:
    """Same table as booktabs LaTeX (a bare tabular, so the paper controls the float/caption)."""
    rows, level = _table_rows(result)
    out = [
        r"\begin{tabular}{llrcrrr}",
        r"\toprule",
        rf"Arm & Score & AUC & {level}\% CI & $n$ (pass/fail) & Tasks & Zero-evidence \\",
        r"\midrule",
    ]
    for r in rows:
        out.append(" & ".join(_tex_escape(x) for x in r) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out) + "\n"


HEADLINE_KIND = "headline: GCPC (log only) − reference"
EQUAL_INFO_KIND = "equal information: GCPC (log only) − reference"


def _delta_rows(result: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Rows of the paired table. Every row compares like with like (§4.1): the GCPC − reference rows
    difference outcome-blind scores only; between-arm rows difference the same score, so an
    outcome-using score only ever meets another outcome-using score. The within-arm gain of the
    outcome step stays in rq1.json and RQ4, never in this table."""
    rows: list[tuple[str, list[str]]] = []
    ref = result.get("reference") or {}
    for d in ref.get("deltas", []) if ref.get("available") else []:
        rows.append((HEADLINE_KIND if d.get("headline") else EQUAL_INFO_KIND,
                     [d["a"], d["b"], fmt(d.get("delta")), fmt_ci(d.get("ci_low"), d.get("ci_high")),
                      fmt(d.get("share_positive"), 3), str(d.get("n", 0)), str(d.get("n_tasks", "n/a"))]))
    primary = result["config"].get("primary_arm")
    for d in result["deltas"]["between_arms"]:
        if d.get("delta") is None and str(d.get("skipped", "")).endswith("missing in one arm"):
            continue
        if primary in result["arms"] and primary not in {d["a"], d["b"]}:
            continue
        kind = "between arms, both use the outcome" if d["score"] in OUTCOME_USING_SCORES else "between arms, log only"
        rows.append((kind, [f"{d['a']}:{d['score']}", f"{d['b']}:{d['score']}", fmt(d.get("delta")),
                     fmt_ci(d.get("ci_low"), d.get("ci_high")), fmt(d.get("share_positive"), 3), str(d.get("n", 0)),
                     str(d.get("n_tasks", "n/a"))]))
    return rows


_DELTA_HEADER = ["Comparison", "A", "B", "ΔAUC (A − B)", "CI", "Share of draws > 0", "n", "Tasks"]


def _reference_note(result: dict[str, Any]) -> str:
    ref = result.get("reference") or {}
    level = int(round(100 * result["config"]["bootstrap"]["ci"]))
    base = (f"Paired ΔAUC on identical trajectories; {level}% percentile CI from "
            f"{result['config']['bootstrap']['n_resamples']} task-clustered resamples shared by both AUCs. "
            f"The headline compares arms on equal information (§4.1): plain GCPC of '{result['config'].get('primary_arm')}' "
            f"(log only) against outcome-blind arms; scores that use the official outcome "
            f"({', '.join(OUTCOME_USING_SCORES)}) are compared only with each other. "
            f"{zero_evidence_text(result['config']['zero_evidence_score'])}. Between-arm rows "
            f"involving the primary arm are shown; rq1.json has every pair and the within-arm outcome-step gains.")
    if not ref.get("available"):
        base += f" GCPC − reference: not available ({ref.get('reason', 'no reference arm')})."
    for m in ref.get("missing") or []:
        base += f" Reference arm '{m['arm']}' not compared: {m['reason']}."
    return base


def rq1_paired_markdown(result: dict[str, Any]) -> str:
    rows = _delta_rows(result)
    return markdown_table(_DELTA_HEADER, [[kind, *r] for kind, r in rows], "lllrlrrr", note=_reference_note(result))


def rq1_paired_latex(result: dict[str, Any]) -> str:
    rows = _delta_rows(result)
    return latex_table(_DELTA_HEADER, [[kind, *r] for kind, r in rows], "lllrcrrr")


def _condition_rows(result: dict[str, Any]) -> list[list[str]]:
    out = []
    order = {s: i for i, s in enumerate(result["config"]["scores"])}
    for arm in sorted(result["by_condition"]):
        per = result["by_condition"][arm]
        for score in sorted(per, key=lambda s: (order.get(s, len(order)), s)):
            for cond, e in sorted(per[score].items()):
                out.append([arm, score_name(result, arm, score), cond, fmt(e.get("auc")), fmt_ci(e.get("ci_low"), e.get("ci_high")),
                            f"{e['n']} ({e['n_pass']}/{e['n_fail']})", str(e["n_tasks"]),
                            e.get("skipped", "")])
    ref = result.get("reference") or {}
    for d in ref.get("deltas", []) if ref.get("available") else []:
        for cond, e in sorted((d.get("by_condition") or {}).items()):
            out.append([f"Δ {d['a']} − {d['b']}", "paired", cond, fmt(e.get("delta")), fmt_ci(e.get("ci_low"), e.get("ci_high")),
                        f"{e['n']} ({e['n_pass']}/{e['n_fail']})", str(e["n_tasks"]), e.get("skipped", "")])
    return out


_COND_HEADER = ["Arm", "Score", "Condition", "AUC", "CI", "n (pass/fail)", "Tasks", "Note"]


def rq1_condition_markdown(result: dict[str, Any]) -> str:
    level = int(round(100 * result["config"]["bootstrap"]["ci"]))
    return markdown_table(_COND_HEADER, _condition_rows(result), "lllrlrrl",
                          note=f"AUC by skill condition with {level}% task-clustered bootstrap CIs; a condition with a "
                               "single outcome class has no AUC.")


def rq1_condition_latex(result: dict[str, Any]) -> str:
    return latex_table(_COND_HEADER, _condition_rows(result), "lllrcrrl")


def roc_points(metrics: pd.DataFrame, cfg: dict[str, Any] | None = None) -> pd.DataFrame:
    """ROC curve points per arm x score (same filtering and filling as rq1), for DVC plots.

    The first point's threshold is +inf in sklearn; it is written as NaN (empty in CSV).
    """
    c = resolve_config(cfg)
    _check_columns(metrics, c["scores"])
    c["scores"] = active_scores(metrics, c)
    from gcpc.analysis.labels import labeler_for

    rows = decided(with_method_arm(metrics, c["default_variants"]))
    words = labeler_for(arm_kinds(metrics), rows["arm"].unique().tolist(), c["primary_arm"] or table_primary_arm(metrics))
    frames = []
    for arm in sorted(rows["arm"].unique().tolist()):
        arm_rows = rows[rows["arm"] == arm]
        for score in c["scores"]:
            if arm_rows[score].isna().all():
                continue
            vals, _ = score_values(arm_rows, score, c["zero_evidence_score"])
            y = vals[LABEL].to_numpy()
            if y.all() or not y.any():
                continue
            fpr, tpr, thr = roc_curve(y, vals[score].to_numpy(dtype=float))  # sklearn.metrics.roc_curve, input checked
            thr = np.where(np.isfinite(thr), thr, np.nan)
            # `curve` names the series in words: one line per arm x score in `dvc plots show` / `diff`
            frames.append(pd.DataFrame({"arm": arm, "score": score, "curve": f"{words(arm, score)}, n={len(vals)}",
                                        "fpr": fpr, "tpr": tpr, "threshold": thr}))
    if not frames:
        return pd.DataFrame({"arm": pd.Series(dtype=str), "score": pd.Series(dtype=str), "curve": pd.Series(dtype=str),
                             "fpr": pd.Series(dtype=float),
                             "tpr": pd.Series(dtype=float), "threshold": pd.Series(dtype=float)})
    return pd.concat(frames, ignore_index=True)


__all__ = [
    "compact_metrics",
    "reference_deltas",
    "rq1_condition_latex",
    "rq1_condition_markdown",
    "rq1_paired_latex",
    "rq1_paired_markdown",
    "decided",
    "ordered_entries",
    "resolve_config",
    "roc_points",
    "rq1",
    "rq1_table_latex",
    "rq1_table_markdown",
    "score_values",
]
