"""Item-level validity: do the judge's labels agree with the verifier's own per-test results?

The one measurement an outcome-blind floor cannot fake. An assertion-route item references
verifier tests; when the trajectory's per-test results cover them they give the item a truth
(Yes when every referenced test passed, No when any failed: scoring.metrics.per_test_truth,
already in finalize's labels.parquet as `truth_per_test`). Against it, per benchmark and arm,
the plain label (log only, before the official-outcome step; after the evidence-citation gate in
an arm that has it):

* agreement over decided (Yes/No) labels, with a task-clustered percentile CI;
* Cohen's κ of decided labels against truth (chance-corrected: a judge saying Yes to everything
  agrees often where most tests pass, κ says 0): scikit-learn's `cohen_kappa_score`; each bootstrap
  draw (from cell counts) is checked against it on the resample's rows in the tests;
* the Abstain share (Abstain is neither agreement nor disagreement); zero-evidence (trajectory,
  arm) pairs (every item Abstain) are left out by default, as in every analysis (paper §4), and
  counted;
* agreement where the tests passed and where they failed, each with its CI: a lexical judge
  says Yes to items whose tests failed, which only the second shows.

Generated-route items (a deterministic check "could be written") cannot be checked here: the
check would have to run against the task's final environment, which the data do not hold. Their
number and share of all labelled items is reported separately, with their label distribution.

`python -m gcpc.analysis.item_validity` (the `item_validity` stage) writes
data/processed/analyze/item_validity.json, metrics/item_validity.json and figures/item_validity.{md,tex}.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gcpc.analysis.common import fmt, fmt_ci, fmt_share, jsonable, latex_table, markdown_table, resolve_analysis, zero_evidence_mask
from gcpc.analysis.stats import cluster_codes, resample_counts

POOLED = "all"
CELLS = ("YY", "YN", "YA", "NY", "NN", "NA")
"""Truth (Y/N) x plain label (Y/N/A) counts."""
STATS = ("agreement", "kappa", "abstain_share", "agreement_tests_passed", "agreement_tests_failed")


def kappa(truth: Any, label: Any) -> float | None:
    """Cohen's κ of two binary Yes/No sequences (anything but "Yes" is No); None when it is undefined
    (chance agreement is 1)."""
    t = np.asarray(truth) == "Yes"
    y = np.asarray(label) == "Yes"
    if t.shape != y.shape or t.size == 0:
        raise ValueError("kappa needs two non-empty sequences of equal length")
    return kappa_of_counts(np.sum(t & y), np.sum(t & ~y), np.sum(~t & y), np.sum(~t & ~y))


def kappa_of_counts(yy: float, yn: float, ny: float, nn: float) -> float | None:
    """Cohen's κ from the 2 x 2 counts (truth x label): `sklearn.metrics.cohen_kappa_score` of the four
    (truth, label) pairs weighted by their counts; None when undefined (no decided label, or chance agreement 1)."""
    import warnings

    from sklearn.metrics import cohen_kappa_score

    weights = np.array([yy, yn, ny, nn], dtype=float)
    if weights.sum() <= 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a single label: sklearn warns and returns replace_undefined_by
        k = cohen_kappa_score(["Yes", "Yes", "No", "No"], ["Yes", "No", "Yes", "No"], labels=["Yes", "No"],
                              sample_weight=weights, replace_undefined_by=np.nan)
    return None if not np.isfinite(k) else float(k)


def statistics(c: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic from (R, 6) cell counts in CELLS order; NaN where undefined. Vectorised for the
    bootstrap draws (κ here is Cohen's formula; tests check each draw against scikit-learn's)."""
    yy, yn, ya, ny, nn, na = (c[:, i] for i in range(6))
    decided = yy + yn + ny + nn
    total = decided + ya + na
    with np.errstate(invalid="ignore", divide="ignore"):
        po = (yy + nn) / decided
        truth_yes = (yy + yn) / decided
        label_yes = (yy + ny) / decided
        pe = truth_yes * label_yes + (1 - truth_yes) * (1 - label_yes)
        kap = np.where(np.isclose(1 - pe, 0.0), np.nan, (po - pe) / (1 - pe))
        return {"agreement": po, "kappa": kap, "abstain_share": (ya + na) / total,
                "agreement_tests_passed": yy / (yy + yn), "agreement_tests_failed": nn / (ny + nn)}


def cell_counts(truth: pd.Series, label: pd.Series) -> np.ndarray:
    key = truth.str[0] + label.str[0]
    return np.array([int((key == cell).sum()) for cell in CELLS], dtype=float)


def cluster_cell_counts(truth: pd.Series, label: pd.Series, codes: np.ndarray, k: int) -> np.ndarray:
    """(k, 6) counts of each truth x label cell per cluster: `cell_counts` of every cluster's rows, in one pass."""
    # first letters per distinct value (as .str[0] gives them), then a distinct-truth x distinct-label table
    tc, tu = pd.factorize(truth)
    lc, lu = pd.factorize(label)

    def first(u: Any) -> str | None:
        return u[0] if isinstance(u, str) and u else None

    index = {c: i for i, c in enumerate(CELLS)}
    table = np.array([[index.get(f"{first(t)}{first(lab)}", -1) if first(t) and first(lab) else -1 for lab in lu] for t in tu],
                     dtype=np.int64).reshape(len(tu), len(lu))
    cell = np.full(len(tc), -1, dtype=np.int64)  # -1: missing or a cell outside CELLS, counted nowhere (as cell_counts does)
    ok = (tc >= 0) & (lc >= 0)
    cell[ok] = table[tc[ok], lc[ok]]
    keep = cell >= 0
    flat = np.bincount(codes[keep] * len(CELLS) + cell[keep], minlength=k * len(CELLS))
    return flat.reshape(k, len(CELLS)).astype(float)


def tally(rows: pd.DataFrame, cluster: str, boot: dict[str, Any]) -> dict[str, Any]:
    """Counts, point estimates and task-clustered percentile CIs (one set of resamples for all)."""
    codes, k = cluster_codes(rows[cluster], cluster)
    per_cluster = cluster_cell_counts(rows["truth_per_test"], rows["label_plain"], codes, k)
    total = per_cluster.sum(axis=0)
    point = statistics(total[None, :])
    kap = kappa_of_counts(*(total[CELLS.index(cell)] for cell in ("YY", "YN", "NY", "NN")))  # the point κ: sklearn's
    point["kappa"] = np.array([np.nan if kap is None else kap])
    draws = statistics(resample_counts(k, boot["n_resamples"], boot["seed"]).astype(float) @ per_cluster)
    alpha = (1.0 - boot["ci"]) / 2.0
    cells = dict(zip(CELLS, (int(x) for x in total), strict=True))
    out: dict[str, Any] = {
        "n": int(total.sum()), "n_decided": cells["YY"] + cells["YN"] + cells["NY"] + cells["NN"],
        "n_abstain": cells["YA"] + cells["NA"], "n_tasks": k, "n_trajectories": int(rows["trajectory_id"].nunique()),
        "n_tests_passed": cells["YY"] + cells["YN"] + cells["YA"], "n_tests_failed": cells["NY"] + cells["NN"] + cells["NA"],
        "confusion": {"truth_yes": {"Yes": cells["YY"], "No": cells["YN"], "Abstain": cells["YA"]},
                      "truth_no": {"Yes": cells["NY"], "No": cells["NN"], "Abstain": cells["NA"]}},
    }
    for s in STATS:
        valid = draws[s][np.isfinite(draws[s])]
        lo, hi = np.percentile(valid, [100 * alpha, 100 * (1 - alpha)]) if valid.size else (None, None)
        out[s] = {"estimate": point[s][0], "ci_low": lo, "ci_high": hi, "n_valid": int(valid.size)}
    return out


def _routes(items: pd.DataFrame) -> dict[str, Any]:
    n = int(len(items))
    out: dict[str, Any] = {"n_items": n}
    for route in ("assertion", "generated", "judge"):
        sub = items[items["route"] == route]
        out[route] = {"n": int(len(sub)), "share": (len(sub) / n) if n else None,
                      "labels": {lab: int((sub["label_plain"] == lab).sum()) for lab in ("Yes", "No", "Abstain")}}
    return out


def _distinct(column: pd.Series) -> set[str]:
    """Distinct values as strings (unique first: iterating an Arrow string column row by row is slow)."""
    return {str(v) for v in column.astype(str).unique().tolist()}


def item_validity(labels: pd.DataFrame, metrics: pd.DataFrame, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per benchmark (and pooled, when there are several) x arm with assertion-route items."""
    c = resolve_analysis(cfg)
    boot = c["bootstrap"]
    for name, frame, cols in (("labels", labels, ("trajectory_id", "arm", "item_id", "route", "label_plain", "truth_per_test")),
                              ("metrics", metrics, ("trajectory_id", "benchmark", "task_id"))):
        missing = [col for col in cols if col not in frame.columns]
        if missing:
            raise ValueError(f"{name} table lacks column(s): {', '.join(missing)}")
    meta = metrics[["trajectory_id", "benchmark", "task_id"]].drop_duplicates("trajectory_id")
    items = labels[labels["route"] != "endpoint"].merge(meta, on="trajectory_id", how="left", validate="many_to_one")
    unknown = items[items["benchmark"].isna()]
    if len(unknown):
        raise ValueError(f"labels table: trajectory {unknown['trajectory_id'].iloc[0]} is not in the metrics table")
    # the paper's rule (§4), as in every analysis: a zero-evidence (trajectory, arm) is left out by default
    is_ze = np.zeros(len(items), bool)
    if {"zero_evidence", "arm"} <= set(metrics.columns):
        ze_rows = metrics.loc[zero_evidence_mask(metrics).to_numpy(), ["trajectory_id", "arm"]]
        if len(ze_rows):
            # (trajectory, arm) membership by a left join on the string keys: no Python tuple per row
            keys = pd.DataFrame({"trajectory_id": items["trajectory_id"].astype(str).to_numpy(),
                                 "arm": items["arm"].astype(str).to_numpy()})
            ze_pairs = ze_rows.astype(str).drop_duplicates().assign(_ze=True)
            joined = keys.merge(ze_pairs, on=["trajectory_id", "arm"], how="left", validate="many_to_one")
            is_ze = joined["_ze"].notna().to_numpy()
    # bool dtype even when empty (an arm set without item labels, e.g. arm=holistic): an empty object-dtype mask would
    # select columns, not rows
    items["_zero_evidence"] = pd.Series(is_ze, index=items.index, dtype=bool)
    zes = c["zero_evidence_score"]
    excluded = items[items["_zero_evidence"]] if zes is None else items.iloc[:0]
    items = items[~items["_zero_evidence"]] if zes is None else items
    items["_cluster"] = items["benchmark"].astype(str) + "/" + items["task_id"].astype(str)
    benchmarks = sorted(items["benchmark"].astype(str).unique().tolist())
    scopes = benchmarks + ([POOLED] if len(benchmarks) > 1 else [])
    result: dict[str, Any] = {
        "definition": ("assertion-route items whose referenced tests all have per-test results (or one failed): truth Yes "
                       "when all passed, No when any failed; against the plain label (log only, before the "
                       "official-outcome step). Agreement and κ over decided labels; Abstain share over all items with a "
                       "truth; CIs resample tasks; the evidence-citation gate applies only in arms that have it"),
        "generated_route": ("generated-route items are not checked: their deterministic check would have to run against the "
                            "task's final environment, which the data do not hold; their share is reported separately"),
        "bootstrap": boot, "zero_evidence_score": zes, "benchmarks": {}, "not_applicable": {},
    }
    every = pd.concat([items, excluded])  # the route shares describe the checklists: zero-evidence pairs included
    # the loop below filters these frames ~40 times: as categoricals (integer codes) instead of Arrow strings
    keep = ["trajectory_id", "arm", "route", "label_plain", "truth_per_test", "benchmark", "_cluster"]
    items, every = (f[keep].astype({c: "category" for c in keep}) for f in (items, every))
    with_assertion = _distinct(every.loc[(every["route"] == "assertion").to_numpy(), "arm"])
    for arm in sorted(_distinct(items["arm"]) | _distinct(excluded["arm"])):
        if arm not in with_assertion:
            result["not_applicable"][arm] = "the arm labels no assertion-route items"
    mine_ex = excluded[~excluded["arm"].astype(str).isin(list(result["not_applicable"]))]
    result["zero_evidence_excluded"] = {"n_trajectory_arms": int(mine_ex[["trajectory_id", "arm"]].drop_duplicates().shape[0]),
                                        "n_items": int(len(mine_ex)),
                                        "n_items_with_truth": int(mine_ex["truth_per_test"].isin(["Yes", "No"]).sum())}
    for scope in scopes:
        in_scope = items if scope == POOLED else items[items["benchmark"] == scope]
        every_in_scope = every if scope == POOLED else every[every["benchmark"] == scope]
        per_arm: dict[str, Any] = {}
        for arm in sorted(_distinct(every_in_scope["arm"]) - set(result["not_applicable"])):
            mine = in_scope[in_scope["arm"] == arm]
            assertion = mine[mine["route"] == "assertion"]
            truth = assertion[assertion["truth_per_test"].isin(["Yes", "No"])]
            entry: dict[str, Any] = {"routes": _routes(every_in_scope[every_in_scope["arm"] == arm]), "n_assertion_items": int(len(assertion)),
                                     "n_assertion_items_without_truth": int(len(assertion) - len(truth))}
            if truth.empty:
                entry.update(applicable=False, why="no assertion-route item has per-test results")
            else:
                entry.update(applicable=True, **tally(truth, "_cluster", boot))
            per_arm[arm] = entry
        result["benchmarks"][scope] = per_arm
    return jsonable(result)


def compact_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """metrics/item_validity.json: the headline figures per benchmark and arm."""
    out: dict[str, Any] = {}
    for scope, per_arm in result["benchmarks"].items():
        for arm, e in per_arm.items():
            row: dict[str, Any] = {"generated_share": e["routes"]["generated"]["share"]}
            if e.get("applicable"):
                row |= {"n_items": e["n"], "n_decided": e["n_decided"]}
                row |= {s: e[s]["estimate"] for s in STATS}
                row |= {"agreement_ci_low": e["agreement"]["ci_low"], "agreement_ci_high": e["agreement"]["ci_high"]}
            out.setdefault(scope, {})[arm] = row
    return out


HEADER = ["Benchmark", "Arm", "Items with truth", "Decided", "Agreement", "CI", "κ", "κ CI", "Abstain",
          "Tests passed: agree (n)", "Tests failed: agree (n)", "Generated-route share"]


def _rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for scope, per_arm in result["benchmarks"].items():
        for arm, e in sorted(per_arm.items()):
            gen = e["routes"]["generated"]
            gen_txt = f"{fmt_share(gen['share'])} ({gen['n']} of {e['routes']['n_items']})"
            if not e.get("applicable"):
                rows.append([scope, arm, "0", "0", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", gen_txt])
                continue
            a, k, p, f = e["agreement"], e["kappa"], e["agreement_tests_passed"], e["agreement_tests_failed"]
            conf = e["confusion"]
            passed_decided = conf["truth_yes"]["Yes"] + conf["truth_yes"]["No"]
            failed_decided = conf["truth_no"]["Yes"] + conf["truth_no"]["No"]
            rows.append([scope, arm, str(e["n"]), str(e["n_decided"]), fmt(a["estimate"]), fmt_ci(a["ci_low"], a["ci_high"]),
                         fmt(k["estimate"]), fmt_ci(k["ci_low"], k["ci_high"]),
                         f"{fmt_share(e['abstain_share']['estimate'])} ({e['n_abstain']})",
                         f"{fmt(p['estimate'])} {fmt_ci(p['ci_low'], p['ci_high'])} ({passed_decided})",
                         f"{fmt(f['estimate'])} {fmt_ci(f['ci_low'], f['ci_high'])} ({failed_decided})", gen_txt])
    return rows


def _note(result: dict[str, Any]) -> str:
    b = result["bootstrap"]
    na = "; ".join(f"`{a}`: {why}" for a, why in sorted(result["not_applicable"].items()))
    return (f"Assertion-route items with per-test verifier results: plain judge label (log only, before the official-outcome "
            f"step; after the evidence-citation gate for an arm that has it) against the tests' truth. Agreement and Cohen's κ over decided (Yes/No) labels; Abstain "
            f"share over all items with a truth; agreement split by whether the referenced tests passed or failed (n = decided "
            f"items). {int(round(100 * b['ci']))}% percentile CIs from {b['n_resamples']} task-clustered resamples (seed "
            f"{b['seed']}). Generated-route items cannot be checked without the task's environment (docs/floors.md); their "
            f"share of all labelled items (zero-evidence pairs included) is the last column. {_ze_note(result)}" + (f" Not applicable: {na}." if na else ""))


def _ze_note(result: dict[str, Any]) -> str:
    z = result["zero_evidence_excluded"]
    if result["zero_evidence_score"] is not None:
        return "Zero-evidence trajectories are kept (variant `zero_evidence_score` set): their items count as Abstain."
    return (f"Zero-evidence (trajectory, arm) pairs of the arms above excluded, as in every analysis (paper §4): "
            f"{z['n_trajectory_arms']}, with {z['n_items']} items, {z['n_items_with_truth']} of them with a truth (all Abstain: "
            f"zero evidence means every item Abstain).")


def validity_markdown(result: dict[str, Any]) -> str:
    return markdown_table(HEADER, _rows(result), "llrrrlrllllr", title="Item-level validity: labels vs per-test verifier results",
                          note=_note(result))


def validity_latex(result: dict[str, Any]) -> str:
    return latex_table(HEADER, _rows(result), "llrrrcrcllll")


def _all_abstain(routes: dict[str, Any]) -> str:
    """The Abstain share over every item the arm labelled, all routes, zero-evidence logs included: the counterpart
    of the paper's log-only figure (42.1 % Abstain on SWE-bench Verified, §4.6)."""
    n = routes["n_items"]
    n_abstain = sum(routes[r]["labels"]["Abstain"] for r in ("assertion", "generated", "judge"))
    return f"Abstain over all {n} labelled items {fmt_share(n_abstain / n if n else None)} ({n_abstain})"


def report_lines(result: dict[str, Any]) -> list[str]:
    """Headline sentences for figures/report.md: one per benchmark scope and arm."""
    out = []
    for scope, per_arm in result["benchmarks"].items():
        for arm, e in sorted(per_arm.items()):
            if not e.get("applicable"):
                out.append(f"- `{scope}` / `{arm}`: no assertion-route item has per-test results.")
                continue
            a, k = e["agreement"], e["kappa"]
            out.append(f"- `{scope}` / `{arm}`: agreement {fmt(a['estimate'])} {fmt_ci(a['ci_low'], a['ci_high'])} on "
                       f"{e['n_decided']} decided items, κ {fmt(k['estimate'])}, Abstain {fmt_share(e['abstain_share']['estimate'])}; "
                       f"where tests passed {fmt(e['agreement_tests_passed']['estimate'])}, where they failed "
                       f"{fmt(e['agreement_tests_failed']['estimate'])}; {_all_abstain(e['routes'])}.")
    return out or ["- No arm labels assertion-route items with per-test results."]


def main() -> int:
    import sys

    from gcpc.analysis.common import LABELS, METRICS, write_result_files
    from gcpc.params import load_params, stage_args

    args = stage_args("Item-level validity: judge labels of assertion-route items vs per-test verifier results")
    for p in (LABELS, METRICS):
        if not p.exists():
            print(f"{p}: not found (run the finalize stage first)", file=sys.stderr)
            return 2
    result = item_validity(pd.read_parquet(LABELS), pd.read_parquet(METRICS), load_params(args.params).get("analysis"))
    write_result_files("item_validity", result, compact_metrics(result), validity_markdown(result), validity_latex(result),
                       "item_validity")
    print(f"item validity: {sum(len(v) for v in result['benchmarks'].values())} benchmark x arm entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
