"""`python -m gcpc.analysis.rejudge`: repeated judging and the judge swap (inputs of RQ3's noise floor and RQ5).

* **Directed sample.** Both run on `analysis.rejudge.sample` (size and selection rule, paper §4.6:
  116 trajectories), not the whole corpus; see `select_sample`.
* **Repeated passes.** The judge stage's run of `analysis.rejudge.arm` is pass 1. Passes 2..n send
  the provider exactly the same messages (same judge config, prompt, checklist and log) again, but
  each request carries its pass number (`LLMRequest.repeat`), which is part of its key: pass k has
  its own call store (`llm_calls_pass<k>.jsonl`) AND its own entries in the shared call cache, so
  a repeated pass is answered by the provider, never from pass 1's calls, while `llm@judge=replay`
  still replays every pass from its store. Pass 1's keys are the judge stage's, unchanged. (A seed
  change would not do: the Anthropic Messages API has no seed.) With a deterministic provider (the offline `heuristic`)
  every pass is identical by construction, so reliability is perfect by construction and says
  nothing about an LLM judge.
* **Judge swap.** The same arm judged by a second judge, `analysis.rejudge.swap_judge` (an
  `llm` config: provider, model, temperature, ...). Alternatively `swap_judge.judgments` names an
  existing `judgments.jsonl` of a second judge's run of this arm, which is then read instead.

Outputs in data/processed/rejudge/: judgments.jsonl (every pass, with `role` and `pass`),
scores.parquet (per trajectory x role x pass: plain GCPC, GCPC with official outcome), item_labels.parquet,
summary.json, and llm_calls_pass<k>.jsonl / llm_calls_swap.jsonl (every call, the cache).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from gcpc.errors import ParamsError
from gcpc.analysis.common import REJUDGE, resolve_analysis
from gcpc.corpus.models import Trajectory
from gcpc.io import iter_models, read_models, write_json, write_jsonl, write_parquet
from gcpc.judging.models import Judgment
from gcpc.scoring.metrics import action_free_rule, score_trajectory, zero_evidence_reason
from gcpc.scoring.finalize import scoring_view
from gcpc.synthesis.models import Checklist

HOLISTIC_MAX = 10.0  # as gcpc.scoring.finalize: holistic scores are 0-10, rescaled to [0, 1]

SCORE_COLUMNS = ["trajectory_id", "benchmark", "task_id", "outcome", "role", "pass", "provider", "model", "status",
                 "gcpc_plain", "gcpc_outcome", "zero_evidence"]
LABEL_COLUMNS = ["trajectory_id", "task_id", "role", "pass", "item_id", "label"]


def load_arm_inputs(params: dict[str, Any], arm_name: str, ingest_dir: Path, synth_dir: Path) -> tuple[Any, dict[str, Any]]:
    """(ArmSpec, the inputs its kind reads: checklists and/or task instructions) as the judge stage loads them."""
    from gcpc.corpus.models import Task
    from gcpc.judging.stage import ARM_KINDS, arm_spec

    arm = arm_spec(params, arm_name)
    reads = ARM_KINDS[arm.kind].reads
    inputs: dict[str, Any] = {"checklists": {}, "tasks": {}}
    if "checklists" in reads:
        inputs["checklists"] = {(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)}
    if "tasks" in reads:
        inputs["tasks"] = {(t.benchmark, t.task_id): t for t in read_models(ingest_dir / "tasks.jsonl", Task)}
    return arm, inputs


def judge_with(arm: Any, inputs: dict[str, Any], trajectories: list[Trajectory], llm_cfg: dict[str, Any], store: Path,
               progress: bool, repeat: int | None = None) -> tuple[list[Judgment], int]:
    """Judge through the judging package and an LLMClient whose call store is ``store``; (judgments, calls made).
    `repeat` (pass number >= 2) puts the pass into every request's identity, so the shared call cache
    cannot answer it with pass 1's (or another pass's) reply."""
    from gcpc.judging.stage import judge_arm
    from gcpc.llm import llm_session

    with llm_session(llm_cfg, store, progress=progress, repeat=repeat) as client:
        judgments = judge_arm(arm, trajectories, llm_cfg=llm_cfg, client=client, checklists=inputs["checklists"],
                              tasks=inputs["tasks"])
    return judgments, client.calls_made


def score_judgments(judgments: list[Judgment], trajectories: dict[str, Trajectory], scoring: dict[str, Any],
                    role: str, pass_no: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-trajectory scores (gcpc.scoring.metrics, same settings as finalize) and item labels of one pass."""
    prop = bool(scoring.get("pass_propagation", True))
    endpoint = bool(scoring.get("endpoint", True))
    action_free = action_free_rule(scoring)
    scores, labels = [], []
    for j in judgments:
        traj = trajectories.get(j.trajectory_id)
        if traj is None:
            raise ValueError(f"{role} pass {pass_no}: judgment for unknown trajectory {j.trajectory_id}")
        row = {"trajectory_id": j.trajectory_id, "benchmark": j.benchmark, "task_id": j.task_id,
               "outcome": traj.outcome.status, "role": role, "pass": pass_no, "provider": j.provider, "model": j.model,
               "status": j.status, "gcpc_plain": None, "gcpc_outcome": None, "zero_evidence": None}
        # the one zero-evidence rule, as finalize applies it (Holistic / TICK: an action-free log only under the
        # extension `action_free_zero_evidence`)
        ze = j.status == "ok" and zero_evidence_reason(j.kind, j.labels, traj.events, action_free=action_free) is not None
        if j.status == "ok" and getattr(j, "score", None) is not None and not j.labels:
            # holistic arms: one 0-10 score, rescaled exactly as finalize does; no items, no outcome step
            row.update(gcpc_plain=float(j.score) / HOLISTIC_MAX, gcpc_outcome=None, zero_evidence=ze)
        elif j.status == "ok":
            s = score_trajectory(j.labels, traj.outcome.status, pass_propagation=prop, endpoint=endpoint)
            row.update(gcpc_plain=s.gcpc_plain, gcpc_outcome=s.gcpc_outcome, zero_evidence=ze)
            labels += [{"trajectory_id": j.trajectory_id, "task_id": j.task_id, "role": role, "pass": pass_no,
                        "item_id": lab.item_id, "label": lab.label} for lab in j.labels]
        scores.append(row)
    return scores, labels


SAMPLE_RULES = ("stratified", "first", "all")


def select_sample(first: list[Judgment], by_id: dict[str, Trajectory], sample: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The directed reliability sample (paper §4.6: 116 trajectories), from the pass-1 judgments that succeeded.

    Rules: `stratified` (default) visits the (task, outcome) cells in a seeded order and takes one
    trajectory from each in turn, so every task and both outcomes are covered before any cell gets a
    second; `first` takes the first `size` trajectory ids; `all` takes every one (size ignored).
    Returns (sorted ids, a description of the selection recorded in summary.json).
    """
    import random

    rule = str(sample.get("rule", "stratified"))
    if rule not in SAMPLE_RULES:
        raise ValueError(f"params.yaml: analysis.rejudge.sample.rule must be one of {', '.join(SAMPLE_RULES)}, got {rule!r}")
    size = sample.get("size")
    ok = sorted(j.trajectory_id for j in first if j.status == "ok" and j.trajectory_id in by_id)
    if rule == "all" or size is None or int(size) >= len(ok):
        chosen = ok
    elif rule == "first":
        chosen = ok[: int(size)]
    else:
        rng = random.Random(int(sample.get("seed", 0)))
        cells: dict[tuple[str, str, str], list[str]] = {}
        for tid in ok:
            t = by_id[tid]
            cells.setdefault((t.benchmark, t.task_id, t.outcome.status), []).append(tid)
        order = sorted(cells)
        rng.shuffle(order)
        queues = {k: rng.sample(v, len(v)) for k, v in sorted(cells.items())}
        chosen = []
        while len(chosen) < int(size):
            for k in order:
                if queues[k] and len(chosen) < int(size):
                    chosen.append(queues[k].pop())
    chosen = sorted(chosen)
    return chosen, {"rule": rule, "size": None if size is None else int(size), "seed": int(sample.get("seed", 0)),
                    "n_eligible": len(ok), "n_selected": len(chosen)}


def rejudge(params: dict[str, Any], ingest_dir: Path, synth_dir: Path, judge_root: Path, out_dir: Path, *,
            progress: bool = True) -> dict[str, Any]:
    cfg = resolve_analysis(params.get("analysis"), params.get("arm"))["rejudge"]
    arm_name = str(cfg["arm"])
    n_passes = int(cfg["passes"])
    # every trajectory in its scoring view (what the sample and the scores read), whole logs only for the sample
    # judged again: all of them whole were 5.7 GiB at 20,818 (issue 36)
    by_id = {t.trajectory_id: scoring_view(t) for t in iter_models(ingest_dir / "trajectories.jsonl", Trajectory)}
    arm, inputs = load_arm_inputs(params, arm_name, ingest_dir, synth_dir)
    first_path = judge_root / arm_name / "judgments.jsonl"
    if not first_path.exists():
        raise FileNotFoundError(f"{first_path}: judgments of arm '{arm_name}' (pass 1) are missing (run the judge stage)")
    first = read_models(first_path, Judgment)
    sample_ids, sample_info = select_sample(first, by_id, dict(cfg.get("sample") or {}))
    keep = set(sample_ids)
    first = [j for j in first if j.trajectory_id in keep]
    trajectories = [t for t in iter_models(ingest_dir / "trajectories.jsonl", Trajectory) if t.trajectory_id in keep]
    out_dir.mkdir(parents=True, exist_ok=True)

    passes: list[tuple[str, int, list[Judgment]]] = [("repeat", 1, first)]
    calls = {"repeat": 0, "swap": 0}
    for k in range(2, n_passes + 1):
        js, n = judge_with(arm, inputs, trajectories, params["judge"], out_dir / f"llm_calls_pass{k}.jsonl", progress, repeat=k)
        calls["repeat"] += n
        passes.append(("repeat", k, js))

    swap_cfg = dict(cfg["swap_judge"] or {})
    swap_source: str
    if swap_cfg.get("judgments"):
        path = Path(swap_cfg["judgments"])
        if not path.exists():
            raise FileNotFoundError(f"{path}: analysis.rejudge.swap_judge.judgments not found")
        swap = [j for j in read_models(path, Judgment) if j.arm == arm_name]
        if not swap:
            raise ValueError(f"{path}: no judgments of arm '{arm_name}'")
        swap_source = str(path)
    else:
        for key in ("provider", "model"):
            if not swap_cfg.get(key):
                raise ParamsError(f"params.yaml: analysis.rejudge.swap_judge.{key} is required")
        swap, calls["swap"] = judge_with(arm, inputs, trajectories, swap_cfg, out_dir / "llm_calls_swap.jsonl", progress)
        swap_source = "judged by this stage"
    passes.append(("swap", 1, swap))

    scoring = params.get("scoring") or {}
    score_rows, label_rows, records = [], [], []
    for role, k, js in passes:
        s, lab = score_judgments(js, by_id, scoring, role, k)
        score_rows += s
        label_rows += lab
        if not (role == "repeat" and k == 1):
            records += [j.model_dump(mode="json") | {"role": role, "pass": k} for j in js]
    scores = pd.DataFrame(score_rows, columns=SCORE_COLUMNS)
    for col in ("gcpc_plain", "gcpc_outcome"):
        scores[col] = scores[col].astype("float64")
    scores = scores.sort_values(["role", "pass", "trajectory_id"], kind="stable").reset_index(drop=True)
    labels = pd.DataFrame(label_rows, columns=LABEL_COLUMNS).sort_values(["role", "pass", "trajectory_id", "item_id"],
                                                                          kind="stable").reset_index(drop=True)
    write_jsonl(out_dir / "judgments.jsonl", sorted(records, key=lambda r: (r["role"], r["pass"], r["trajectory_id"])))
    write_parquet(out_dir / "scores.parquet", scores)
    write_parquet(out_dir / "item_labels.parquet", labels)

    def ident(js: list[Judgment]) -> str:
        return ", ".join(sorted({f"{j.provider}/{j.model}" for j in js})) or "n/a"

    deterministic = {"heuristic"}
    summary = {
        "arm": arm_name,
        "n_passes": n_passes,
        "primary_judge": ident(first),
        "swap_judge": ident(swap),
        "swap_source": swap_source,
        "n_trajectories": len(first),
        "sample": sample_info,
        "n_ok": {f"{role}:{k}": sum(j.status == "ok" for j in js) for role, k, js in passes},
        "deterministic_primary": all(j.provider in deterministic for j in first),
        "deterministic_swap_identical": ident(first) == ident(swap) and all(j.provider in deterministic for j in swap),
    }
    write_json(out_dir / "summary.json", summary)
    # calls made depend on what the call stores already held: reported, never written into an output
    return summary | {"calls_made": calls}


def main() -> int:
    from gcpc import paths
    from gcpc.llm.cli import llm_stage_args, load_llm_params, stage_errors

    args = llm_stage_args("Repeated judging passes and the judge swap (RQ3 noise floor, RQ5)")
    with stage_errors():
        summary = rejudge(load_llm_params(args), paths.INGEST, paths.SYNTHESIZE, paths.JUDGE, REJUDGE)
    print(f"rejudge[{summary['arm']}]: {summary['n_passes']} passes of {summary['primary_judge']}, swap {summary['swap_judge']}; "
          f"calls made {summary['calls_made']} -> {REJUDGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
