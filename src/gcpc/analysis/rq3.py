"""RQ3: do skills change partial credit beyond what PASS/FAIL shows? (Figure 5)

Matched pairs are two trajectories of the same task, harness and model (`analysis.rq3.match_on`)
that differ only in skill condition (with curated skills vs without). Trajectories with
self-generated skills and pairs with a non-binary outcome are excluded, each with its reason.
For each pair and score, Δ = score(with skills) − score(without skills), grouped by the outcome
transition without → with (FAIL→FAIL, FAIL→PASS, PASS→FAIL, PASS→PASS): n, median and mean Δ, the
shares of Δ above +threshold and below −threshold (threshold 0.10), and a two-sided Wilcoxon
signed-rank test. The test–retest noise floor is the same statistics on Δ between repeated
judging passes of one trajectory (data/processed/rejudge/scores.parquet).

How pairs are formed (recorded in rq3.json under `pairing`):
1. An explicit pairs file, when the corpus has one: the first of `analysis.rq3.pairs_files`
   (relative to `data.root`) that exists — the demo's `roles.json` (`matched_pairs`), the SkillsBench
   sample's `trajectories/manifest.json` (`pairs`), or a CSV/JSONL with columns `with_skills`,
   `without_skills`. Entries are trajectory ids or trial folder paths. Pairs are still checked:
   same match keys, one trajectory per condition, binary outcomes, each trajectory used once.
   In the demo the with/without trials come from different job folders, so their `source` always
   differs; "source" therefore is not a match key (the paper's source is the contributor, which a
   job folder does not encode); the pairs file encodes the trial round.
2. Otherwise, automatically within each match group: a group with one trajectory per condition is
   a pair. A group with several trials per condition is ambiguous: excluded with its reason
   (`ambiguous: exclude`, default) or paired in trial-name order (`ambiguous: order`, which treats
   repeated trials as exchangeable).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gcpc.analysis.annotations import TrajectoryResolver
from gcpc.analysis.parallel import run_parts
from gcpc.analysis.common import (
    ANALYZE,
    FIGURES,
    INGEST_EXCLUSIONS,
    METRICS,
    REJUDGE,
    TRAJECTORIES,
    TRAJECTORY_META,
    active_scores,
    fmt,
    fmt_p,
    fmt_share,
    jsonable,
    judge_identity,
    judges_text,
    latex_table,
    markdown_table,
    outcome_free_values,
    load_trajectory_meta,
    resolve_analysis,
    resolve_data_path,
    with_method_arm,
    write_csv,
    write_result_files,
    zero_evidence_text,
)
from gcpc.analysis.stats import exact_differences, signed_rank_test
from gcpc.io import iter_jsonl

WITH, WITHOUT, SELF = "with_skills", "without_skills", "self_generated"
BINARY = ("PASS", "FAIL")
TRANSITIONS = ("FAIL→FAIL", "FAIL→PASS", "PASS→FAIL", "PASS→PASS")


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """Trajectory references of matched pairs from a JSON (roles.json / manifest.json), JSONL or CSV file."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        return [_pair_from_dict(r, path, i) for i, r in enumerate(rows, 2)]
    if suffix in (".jsonl", ".ndjson"):
        return [_pair_from_dict(r, path, i) for i, r in enumerate(iter_jsonl(path), 1)]
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and isinstance(data.get("matched_pairs"), list):
        out = []
        for i, p in enumerate(data["matched_pairs"]):
            if not (isinstance(p, list) and len(p) == 2):
                raise ValueError(f"{path}: matched_pairs[{i}] must be a list of two trial references")
            out.append((str(p[0]), str(p[1])))
        return out
    if isinstance(data, dict) and isinstance(data.get("pairs"), list):
        return [_pair_from_dict(p, path, i) for i, p in enumerate(data["pairs"])]
    if isinstance(data, list):
        return [_pair_from_dict(p, path, i) for i, p in enumerate(data)]
    raise ValueError(f"{path}: no 'matched_pairs' or 'pairs' list found")


def _pair_from_dict(rec: dict[str, Any], path: Path, where: int) -> tuple[str, str]:
    for a, b in (("with_skills", "without_skills"), ("with", "without")):
        if rec.get(a) and rec.get(b):
            return str(rec[a]), str(rec[b])
    raise ValueError(f"{path}: pair {where} needs fields 'with_skills' and 'without_skills'")


def _ingest_exclusion_reasons(rows: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(r.get("path", "")).strip("/"): str(r.get("reason", "")) for r in rows or []}


def form_pairs(meta: pd.DataFrame, cfg: dict[str, Any], explicit: list[tuple[str, str]] | None,
               ingest_excluded: dict[str, str] | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """(pairs: with_id, without_id, keys..., outcome_with, outcome_without; exclusions with reasons).

    ``meta``: one row per scored trajectory with trajectory_id, condition, outcome, trial, the match
    keys and (for explicit pairs given as paths) source_path.
    """
    keys = list(cfg["match_on"])
    missing = [k for k in (*keys, "trajectory_id", "condition", "outcome") if k not in meta.columns]
    if missing:
        raise ValueError(f"trajectory metadata lacks column(s): {', '.join(missing)}")
    excluded: list[dict[str, Any]] = []
    by_id = meta.set_index("trajectory_id", drop=False)
    pairs: list[tuple[str, str]] = []
    if explicit is not None:
        sp = dict(zip(meta["source_path"].astype(str).tolist(), meta["trajectory_id"].astype(str).tolist(), strict=True)) \
            if "source_path" in meta else None
        resolver = TrajectoryResolver(meta["trajectory_id"].astype(str).tolist(), sp)
        used: set[str] = set()
        for ref1, ref2 in explicit:
            ids, why = [], None
            for ref in (ref1, ref2):
                tid, reason = resolver.resolve(ref)
                if tid is None:
                    ing = (ingest_excluded or {}).get(ref.strip("/"))
                    why = f"'{ref}' excluded at ingest: {ing}" if ing else reason
                    break
                ids.append(tid)
            if why is None:
                conds = {by_id.at[t, "condition"] for t in ids}
                if SELF in conds:
                    why = "self-generated skills are excluded"
                elif conds != {WITH, WITHOUT}:
                    why = f"not one trajectory per skill condition (conditions: {', '.join(sorted(conds))})"
                else:
                    diff = [k for k in keys if by_id.at[ids[0], k] != by_id.at[ids[1], k]]
                    if diff:
                        why = f"differs in {', '.join(diff)}"
                    elif used & set(ids):
                        why = "a trajectory of this pair is already in an earlier pair"
            if why:
                excluded.append({"pair": [ref1, ref2], "reason": why})
                continue
            used |= set(ids)
            w = ids[0] if by_id.at[ids[0], "condition"] == WITH else ids[1]
            pairs.append((w, ids[1] if w == ids[0] else ids[0]))
    else:
        selfgen = meta[meta["condition"] == SELF]
        for tid in selfgen["trajectory_id"]:
            excluded.append({"trajectory_id": tid, "reason": "self-generated skills are excluded"})
        cand = meta[meta["condition"].isin([WITH, WITHOUT])]
        auto_pairs, auto_excluded = _automatic_pairs(cand, keys, cfg["ambiguous"])
        pairs += auto_pairs
        excluded += auto_excluded
    cols = ["with_id", "without_id", *keys, "outcome_with", "outcome_without", "transition"]
    if not pairs:
        return pd.DataFrame([], columns=cols), excluded
    # one lookup per column instead of one .at per pair and key
    pos = pd.Index(meta["trajectory_id"])
    if not pos.is_unique:
        dup = pos[pos.duplicated()][0]
        raise ValueError(f"trajectory metadata: trajectory_id {dup!r} appears more than once")
    wi, woi = pos.get_indexer([w for w, _ in pairs]), pos.get_indexer([wo for _, wo in pairs])
    ow = meta["outcome"].to_numpy(dtype=object)[wi]
    owo = meta["outcome"].to_numpy(dtype=object)[woi]
    binary = np.isin(ow, list(BINARY)) & np.isin(owo, list(BINARY))
    for (w, wo), a, b in zip(np.asarray(pairs, dtype=object)[~binary].tolist(), ow[~binary], owo[~binary], strict=True):
        excluded.append({"pair": [w, wo], "reason": f"non-binary outcome (with: {a}, without: {b})"})
    keep = np.flatnonzero(binary)
    out = {"with_id": [pairs[i][0] for i in keep], "without_id": [pairs[i][1] for i in keep]}
    for k in keys:
        out[k] = meta[k].to_numpy(dtype=object)[wi[keep]].tolist()
    out["outcome_with"], out["outcome_without"] = ow[keep].tolist(), owo[keep].tolist()
    out["transition"] = [f"{b}→{a}" for a, b in zip(out["outcome_with"], out["outcome_without"], strict=True)]
    return pd.DataFrame(out, columns=cols), excluded


def _automatic_pairs(cand: pd.DataFrame, keys: list[str], ambiguous: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Pairs within each match group (groups in sorted key order; each side in trial, then id, order).

    One sort and per-group counts instead of a pandas group loop: the same pairs and exclusions, in
    the same order, as pairing group by group (tests compare with `_automatic_pairs_by_group`)."""
    if cand.empty:
        return [], []
    order_col = "trial" if "trial" in cand.columns else "trajectory_id"
    grouped = cand.groupby(keys, sort=True, dropna=False)
    f = pd.DataFrame({"g": grouped.ngroup().to_numpy(), "w": (cand["condition"] == WITH).to_numpy(),
                      "o": cand[order_col].to_numpy(dtype=object), "t": cand["trajectory_id"].to_numpy(dtype=object)})
    f = f.sort_values(["g", "o", "t"], kind="stable", na_position="last").reset_index(drop=True)
    f["rank"] = f.groupby(["g", "w"], sort=False).cumcount()
    n_groups = int(f["g"].max()) + 1
    n_w = np.bincount(f["g"][f["w"]], minlength=n_groups)
    n_wo = np.bincount(f["g"][~f["w"]], minlength=n_groups)
    both = (n_w > 0) & (n_wo > 0)
    single = both & (n_w == 1) & (n_wo == 1)
    multi = both & ~single
    n_pair = np.where(single, 1, np.where(multi & (ambiguous == "order"), np.minimum(n_w, n_wo), 0))
    g, w, rank, tid = f["g"].to_numpy(), f["w"].to_numpy(), f["rank"].to_numpy(), f["t"].to_numpy()
    paired = rank < n_pair[g]
    ws, wos = f[paired & w].sort_values(["g", "rank"]), f[paired & ~w].sort_values(["g", "rank"])
    pairs = list(zip(ws["t"].tolist(), wos["t"].tolist(), strict=True))
    excluded: list[dict[str, Any]] = []
    labels = grouped.size().index  # group keys in ngroup order

    def label(i: int) -> dict[str, Any]:
        key = labels[i]
        return dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))

    if ambiguous == "order":
        left = f[~paired & multi[g]].assign(side=lambda d: ~d["w"]).sort_values(["g", "side", "rank"], kind="stable")
        for gi, t in zip(left["g"].tolist(), left["t"].tolist(), strict=True):
            excluded.append({"trajectory_id": t, "group": label(gi), "reason": "no partner left in trial order"})
    else:
        for gi in np.flatnonzero(multi).tolist():
            excluded.append({"group": label(gi), "reason": f"ambiguous: {n_w[gi]} with-skills and {n_wo[gi]} without-skills "
                                                          "trials; give a pairs file or set analysis.rq3.ambiguous=order"})
    return pairs, excluded


def _automatic_pairs_by_group(cand: pd.DataFrame, keys: list[str], ambiguous: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """The straightforward group-by-group pairing (the reference `_automatic_pairs` is checked against)."""
    pairs: list[tuple[str, str]] = []
    excluded: list[dict[str, Any]] = []
    order_col = "trial" if "trial" in cand.columns else "trajectory_id"
    for key, g in cand.groupby(keys, sort=True, dropna=False):
        w = g[g["condition"] == WITH].sort_values([order_col, "trajectory_id"])
        wo = g[g["condition"] == WITHOUT].sort_values([order_col, "trajectory_id"])
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        if w.empty or wo.empty:
            continue  # a trajectory without a counterpart is simply unmatched, not an exclusion
        if len(w) == 1 and len(wo) == 1:
            pairs.append((w["trajectory_id"].iloc[0], wo["trajectory_id"].iloc[0]))
        elif ambiguous == "order":
            n = min(len(w), len(wo))
            pairs += list(zip(w["trajectory_id"].iloc[:n], wo["trajectory_id"].iloc[:n], strict=True))
            for tid in [*w["trajectory_id"].iloc[n:], *wo["trajectory_id"].iloc[n:]]:
                excluded.append({"trajectory_id": tid, "group": label, "reason": "no partner left in trial order"})
        else:
            excluded.append({"group": label, "reason": f"ambiguous: {len(w)} with-skills and {len(wo)} without-skills "
                                                       "trials; give a pairs file or set analysis.rq3.ambiguous=order"})
    return pairs, excluded


def delta_summary(d: np.ndarray, threshold: float) -> dict[str, Any]:
    """n, median, mean, shares beyond ±threshold and the Wilcoxon test of differences `d`, which come from
    `exact_differences`: a Δ equal to the threshold (0.8 − 0.7 = 0.10) is then not above it, and tied |Δ|
    are tied in the ranks."""
    d = np.asarray(d, dtype=float)
    out: dict[str, Any] = {"n": int(d.size)}
    if d.size == 0:
        out.update(median=None, mean=None, mean_abs=None, share_above=None, share_below=None, wilcoxon=signed_rank_test(d))
        return out
    out.update(median=float(np.median(d)), mean=float(np.mean(d)), mean_abs=float(np.mean(np.abs(d))), share_above=float(np.mean(d > threshold)),
               share_below=float(np.mean(d < -threshold)), q25=float(np.percentile(d, 25)), q75=float(np.percentile(d, 75)),
               wilcoxon=signed_rank_test(d))
    return out


def pair_deltas(metrics: pd.DataFrame, pairs: pd.DataFrame, cfg: dict[str, Any]) -> pd.DataFrame:
    """Long frame: one row per (pair, arm, score) with Δ = with − without (zero-evidence filled as in RQ1)."""
    zes = cfg["zero_evidence_score"]
    m = with_method_arm(metrics, cfg["default_variants"])
    frames = []
    for arm in sorted(m["arm"].astype(str).unique().tolist()):
        rows = m[m["arm"] == arm].set_index("trajectory_id")
        for score in cfg["scores"]:
            if score not in rows.columns or rows[score].isna().all():
                continue
            vals = outcome_free_values(rows, score, zes)
            sw = pairs["with_id"].map(vals)
            so = pairs["without_id"].map(vals)
            frames.append(pd.DataFrame({"with_id": pairs["with_id"], "without_id": pairs["without_id"],
                                        "task_id": pairs["task_id"] if "task_id" in pairs else None,
                                        "transition": pairs["transition"], "arm": arm, "score": score,
                                        "score_with": sw.to_numpy(), "score_without": so.to_numpy(),
                                        "delta": exact_differences(sw.to_numpy(float), so.to_numpy(float))}))
    cols = ["with_id", "without_id", "task_id", "transition", "arm", "score", "score_with", "score_without", "delta"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def noise_floor(scores: pd.DataFrame | None, cfg: dict[str, Any], threshold: float,
                summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Δ between repeated judging passes of the same trajectory (every pair of passes), per score."""
    if scores is None:
        return {"available": False, "reason": "no repeated judging output (run the rejudge stage)"}
    rep = scores[(scores["role"] == "repeat") & (scores["status"] == "ok")]
    n_pass = int(rep["pass"].nunique())
    if n_pass < 2:
        return {"available": False, "reason": f"{n_pass} repeated pass(es); need at least 2"}
    zes = cfg["zero_evidence_score"]
    out: dict[str, Any] = {"available": True, "n_passes": n_pass, "arm": (summary or {}).get("arm"),
                           "judge": (summary or {}).get("primary_judge"), "scores": {}}
    if summary and summary.get("deterministic_primary"):
        out["note"] = ("the judge is the deterministic heuristic provider: repeated passes are identical by construction, "
                       "so this floor is 0 and says nothing about an LLM judge's test–retest noise")
    for score in cfg["scores"]:
        if score not in rep.columns or rep[score].isna().all():
            continue
        vals = rep.assign(_v=outcome_free_values(rep, score, zes)).pivot_table(
            index="trajectory_id", columns="pass", values="_v", aggfunc="first", dropna=False)
        passes = sorted(vals.columns)
        ds = []
        for i, a in enumerate(passes):
            for b in passes[i + 1:]:
                d = exact_differences(vals[b].to_numpy(float), vals[a].to_numpy(float))
                ds.append(d[~np.isnan(d)])
        d = np.concatenate(ds) if ds else np.array([])
        e = delta_summary(d, threshold)
        e.pop("wilcoxon", None)
        # mean_abs (from delta_summary) is the paper's noise floor: mean |Δ| between repeated passes of one trajectory
        e["abs_p95"] = float(np.percentile(np.abs(d), 95)) if d.size else None
        e["share_abs_above"] = float(np.mean(np.abs(d) > threshold)) if d.size else None
        out["scores"][score] = e
    return out


def rq3(metrics: pd.DataFrame, meta: pd.DataFrame, cfg: dict[str, Any] | None = None, *,
        explicit_pairs: list[tuple[str, str]] | None = None, pairs_source: str | None = None,
        ingest_excluded: dict[str, str] | None = None, rejudge_scores: pd.DataFrame | None = None,
        rejudge_summary: dict[str, Any] | None = None) -> dict[str, Any]:
    c = resolve_analysis(cfg)
    c["scores"] = active_scores(metrics, c)
    r3 = c["rq3"]
    thr = float(r3["threshold"])
    scored = pd.Index(metrics["trajectory_id"].astype(str).unique().tolist(), dtype=object)
    # a hash lookup on object dtype: Arrow string isin builds one Python scalar per value looked up
    meta = meta[scored.get_indexer(meta["trajectory_id"].astype(str).to_numpy(dtype=object)) >= 0]
    pairs, excluded = form_pairs(meta, r3, explicit_pairs, ingest_excluded)
    deltas = pair_deltas(metrics, pairs, c)
    result: dict[str, Any] = {
        "config": {k: c[k] for k in ("scores", "zero_evidence_score", "primary_arm", "rq3")},
        "pairing": {"mode": "explicit" if explicit_pairs is not None else "automatic", "source": pairs_source,
                    "match_on": r3["match_on"], "n_pairs": int(len(pairs)), "n_excluded": len(excluded)},
        "transition_counts": {t: int((pairs["transition"] == t).sum()) for t in TRANSITIONS},
        "exclusions": excluded,
        "judges": judge_identity(with_method_arm(metrics, c["default_variants"])),
        "arms": {},
    }
    for (arm, score), g in deltas.groupby(["arm", "score"], sort=True):
        ok = g.dropna(subset=["delta"])
        entry: dict[str, Any] = {"n_unscored_pairs": int(len(g) - len(ok)), "all": delta_summary(ok["delta"].to_numpy(), thr),
                                 "transitions": {}}
        entry["all"]["n_excluded"] = int(len(g) - len(ok))
        for t in TRANSITIONS:
            entry["transitions"][t] = delta_summary(ok.loc[ok["transition"] == t, "delta"].to_numpy(), thr)
            entry["transitions"][t]["n_excluded"] = int((g["transition"] == t).sum() - (ok["transition"] == t).sum())
        result["arms"].setdefault(str(arm), {})[str(score)] = entry
    result["noise_floor"] = noise_floor(rejudge_scores, c, thr, rejudge_summary)
    result["pairs"] = [{"with_id": w, "without_id": wo, "transition": t}
                       for w, wo, t in zip(pairs["with_id"].tolist(), pairs["without_id"].tolist(), pairs["transition"].tolist(),
                                           strict=True)]
    return jsonable(result)


# --------------------------------------------------------------------------- tables

HEADER = ["Arm", "Score", "Without → with", "n", "Zero-evidence excl.", "Median Δ", "Mean Δ", "Mean |Δ|", "Δ > +{t}", "Δ < −{t}",
          "Wilcoxon p"]


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    order = {s: i for i, s in enumerate(result["config"]["scores"])}
    for arm in sorted(result["arms"]):
        for score in sorted(result["arms"][arm], key=lambda s: (order.get(s, 99), s)):
            e = result["arms"][arm][score]
            for t, s in [*e["transitions"].items(), ("all pairs", e["all"])]:
                rows.append([arm, score, t, str(s["n"]), str(s.get("n_excluded", 0)), fmt(s.get("median")), fmt(s.get("mean")),
                             fmt(s.get("mean_abs")), fmt_share(s.get("share_above")), fmt_share(s.get("share_below")),
                             fmt_p(s["wilcoxon"].get("p_value"))])
    nf = result["noise_floor"]
    if nf.get("available"):
        for score, s in nf["scores"].items():
            rows.append([f"retest noise floor ({nf.get('arm')})", score, f"{nf['n_passes']} passes", str(s["n"]), "-",
                         fmt(s.get("median")), fmt(s.get("mean")), fmt(s.get("mean_abs")), fmt_share(s.get("share_above")),
                         fmt_share(s.get("share_below")), "-"])
    return rows


def _header(result: dict[str, Any]) -> list[str]:
    t = f"{result['config']['rq3']['threshold']:.2f}"
    return [h.replace("{t}", t) for h in HEADER]


def _note(result: dict[str, Any]) -> str:
    p = result["pairing"]
    judges = judges_text(result["judges"])
    nf = result["noise_floor"]
    floor = (f"Retest rows: Δ between repeated judging passes ({nf.get('judge')})"
             + (f"; {nf['note']}" if nf.get("note") else "")) if nf.get("available") \
        else f"Test–retest noise floor not available: {nf.get('reason')}"
    return (f"Δ = score with skills − score without, matched on {', '.join(p['match_on'])} ({p['mode']} pairing"
            f"{', from ' + p['source'] if p['source'] else ''}); {p['n_pairs']} pairs, {p['n_excluded']} excluded with reasons "
            f"in rq3.json. {zero_evidence_text(result['config']['zero_evidence_score'])}: a pair with a zero-evidence side is "
            f"left out (column 'Zero-evidence excl.'). Noise floor: mean |Δ| between repeated judging passes of one trajectory. "
            f"Wilcoxon: two-sided signed-rank, "
            f"zero differences dropped. Judges: {judges}. {floor}.")


def table_markdown(result: dict[str, Any]) -> str:
    return markdown_table(_header(result), table_rows(result), "lllrrrrrrrr", title="RQ3: score change with skills by outcome transition",
                          note=_note(result))


def table_latex(result: dict[str, Any]) -> str:
    return latex_table(_header(result), table_rows(result), "lllrrrrrrrr")


def compact(result: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"n_pairs": result["pairing"]["n_pairs"]}
    for arm, per in result["arms"].items():
        # ASCII keys: `dvc exp show` / `dvc metrics diff` column names
        out[arm] = {score: {f"median_{t.replace('→', '_to_')}": e["transitions"][t]["median"] for t in TRANSITIONS}
                    for score, e in per.items()}
    return jsonable(out)


# --------------------------------------------------------------------------- stage

RESULT = ANALYZE / "rq3.json"
TABLE_MD = FIGURES / "rq3_table.md"
FIGURE = FIGURES / "fig5_skill_deltas"
DELTAS = ANALYZE / "rq3_deltas.csv"


def run(params: dict[str, Any]) -> dict[str, Any]:
    from gcpc.analysis.figures import fig5, save_figure

    c = resolve_analysis(params.get("analysis"), params.get("arm"))
    # two independent reads, side by side where there are cores (gcpc.analysis.parallel)
    inputs = run_parts({"meta": load_trajectory_meta, "metrics": lambda: pd.read_parquet(METRICS)})
    metrics, meta = inputs["metrics"], inputs["meta"]
    explicit, source = None, None
    for rel in c["rq3"]["pairs_files"]:
        path = resolve_data_path(params, rel)
        if path is not None and path.exists():
            explicit, source = read_pairs(path), str(path)
            break
    ingest_excluded = _ingest_exclusion_reasons(list(iter_jsonl(INGEST_EXCLUSIONS))) if INGEST_EXCLUSIONS.exists() else None
    rs = pd.read_parquet(REJUDGE / "scores.parquet") if (REJUDGE / "scores.parquet").exists() else None
    summ = json.loads((REJUDGE / "summary.json").read_text(encoding="utf-8")) if (REJUDGE / "summary.json").exists() else None
    result = rq3(metrics, meta, c, explicit_pairs=explicit, pairs_source=source, ingest_excluded=ingest_excluded,
                 rejudge_scores=rs, rejudge_summary=summ)
    pairs = pd.DataFrame(result["pairs"], columns=["with_id", "without_id", "transition"])
    meta_keys = meta.set_index("trajectory_id")
    pairs["task_id"] = pairs["with_id"].map(meta_keys["task_id"]) if len(pairs) else pd.Series(dtype=object)
    deltas = pair_deltas(metrics, pairs, c)
    DELTAS.parent.mkdir(parents=True, exist_ok=True)
    # the figure and the files are independent: written side by side where there are cores
    run_parts({"figure": lambda: save_figure(fig5(deltas, result), FIGURE),
               "files": lambda: (write_result_files("rq3", result, compact(result), table_markdown(result), table_latex(result),
                                                    TABLE_MD.stem),
                                 write_csv(deltas, DELTAS))})  # = to_csv(index=False, float_format='%.6g'), byte for byte
    return result


def main() -> int:
    from gcpc.params import load_params, stage_args

    args = stage_args("RQ3: matched with/without-skills pairs (Figure 5)")
    for p in (METRICS, TRAJECTORY_META if TRAJECTORY_META.exists() else TRAJECTORIES):
        if not p.exists():
            print(f"{p}: not found (run ingest and finalize first)", file=sys.stderr)
            return 2
    result = run(load_params(args.params))
    print(f"rq3: {result['pairing']['n_pairs']} pairs ({result['pairing']['mode']}), "
          f"{result['pairing']['n_excluded']} excluded -> {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["delta_summary", "form_pairs", "noise_floor", "pair_deltas", "read_pairs", "rq3", "table_latex", "table_markdown"]
