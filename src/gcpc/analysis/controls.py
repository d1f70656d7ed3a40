"""`python -m gcpc.analysis.controls`: judge-side controls for RQ4 Panel C that need judge calls.

* **Evidence replacement.** For every item an arm judged Yes (after the evidence gate), the quoted
  evidence the judge cited is replaced in the log by a plausible wrong value, and the perturbed log
  is judged again by the same arm, judge and checklist. A grounded judge should now say No (or at
  least stop saying Yes). One perturbed log per item, so each verdict answers for one replacement.
  `analysis.controls.scope`: `all_events` replaces the quote wherever it is displayed (tool outputs
  and file contents), so the log consistently shows the wrong value; `cited_event` only in the
  cited event(s). `max_items` caps the number of perturbed items per arm (a seeded sample), since
  with an LLM judge each costs one call.
* **Idle-agent floor.** Per task, a log of an agent that never acted: the events of the task's first
  trajectory up to its first tool call (session set-up and opening message), nothing else. Each arm
  judges it; its official outcome is taken as FAIL (an agent that did nothing fails the verifier).
  The floor is what such a log scores.

How a value is made wrong (first rule that applies to the quote; `perturb_quote`):
1. every stand-alone number changes its last digit (d -> d+1, 9 -> 8): `12.34` -> `12.35`;
2. else boolean / status words flip: true/false, yes/no, enabled/disabled, active/inactive,
   running/stopped, passed/failed, success/failure, ok/failed (case kept);
3. else the content of a quoted string literal changes its last letter or digit;
4. else the longest identifier-like token (>= 3 characters; a file name keeps its extension)
   changes its last letter or digit (a -> b, z -> y, 0 -> 1, 9 -> 8).

Outputs in data/processed/controls/: perturbations.jsonl (one record per Yes item: the
replacement, the new label, or the reason it was skipped), idle.jsonl, summary.json, llm_calls.jsonl.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gcpc.analysis.common import CONTROLS, TrajectoryFile, resolve_analysis
from gcpc.analysis.rejudge import HOLISTIC_MAX, load_arm_inputs
from gcpc.corpus.models import Event, EventKind, Trajectory
from gcpc.io import read_models, write_json, write_jsonl
from gcpc.judging.models import Judgment
from gcpc.scoring.metrics import action_free_rule, score_trajectory, zero_evidence_reason

EVIDENCE = {EventKind.TOOL_OUTPUT, EventKind.FILE_CONTENT}
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_QUOTED = re.compile(r"\"([^\"\n]+)\"|'([^'\n]+)'")
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]")
_FLIPS = {"true": "false", "false": "true", "yes": "no", "no": "yes", "enabled": "disabled", "disabled": "enabled",
          "active": "inactive", "inactive": "active", "running": "stopped", "stopped": "running", "passed": "failed",
          "failed": "passed", "success": "failure", "failure": "success", "ok": "failed"}
_FLIP_RE = re.compile(r"\b(" + "|".join(sorted(_FLIPS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
IDLE_OUTCOME = "FAIL"


def _bump_char(ch: str) -> str:
    if ch.isdigit():
        return "8" if ch == "9" else str(int(ch) + 1)
    if ch.isalpha():
        if ch.lower() == "z":
            return "y" if ch.islower() else "Y"
        return chr(ord(ch) + 1)
    return ch


def _bump_last_alnum(s: str) -> str:
    for i in range(len(s) - 1, -1, -1):
        if s[i].isalnum():
            return s[:i] + _bump_char(s[i]) + s[i + 1:]
    return s


def _case_like(word: str, template: str) -> str:
    if template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word.capitalize()
    return word


def perturb_quote(quote: str) -> tuple[str, str] | None:
    """(wrong version of the quote, rule name), or None when nothing in it can be made wrong."""
    if _NUMBER.search(quote):
        return _NUMBER.sub(lambda m: _bump_last_alnum(m.group(0)), quote), "number"
    if _FLIP_RE.search(quote):
        return _FLIP_RE.sub(lambda m: _case_like(_FLIPS[m.group(0).lower()], m.group(0)), quote), "boolean"
    m = _QUOTED.search(quote)
    if m:
        g = 1 if m.group(1) is not None else 2
        start, end = m.span(g)
        return quote[:start] + _bump_last_alnum(quote[start:end]) + quote[end:], "literal"
    tokens = [t for t in _TOKEN.finditer(quote) if len(t.group(0)) >= 3]
    if not tokens:
        return None
    tok = max(tokens, key=lambda t: (len(t.group(0)), -t.start()))
    text = tok.group(0)
    stem, dot, ext = text.rpartition(".")
    new = (_bump_last_alnum(stem) + dot + ext) if dot and stem and ext.isalnum() and len(ext) <= 5 else _bump_last_alnum(text)
    if new == text:
        return None
    return quote[: tok.start()] + new + quote[tok.end():], "token"


def _flex_pattern(quote: str) -> re.Pattern[str]:
    """The quote with any whitespace run matching any whitespace run (the evidence gate's normalization)."""
    return re.compile(r"\s+".join(re.escape(w) for w in quote.split()))


def replace_in_events(events: list[Event], quote: str, new_quote: str, cited: set[int], scope: str) -> tuple[list[Event], int]:
    """Events with every occurrence of ``quote`` replaced (in evidence events; cited ones only for scope
    'cited_event'), and the number of occurrences replaced."""
    pattern = _flex_pattern(quote)
    out, n = [], 0
    for e in events:
        if e.kind in EVIDENCE and (scope == "all_events" or e.index in cited):
            text, k = pattern.subn(lambda _m: new_quote, e.text)
            if k:
                e = e.model_copy(update={"text": text})
                n += k
        out.append(e)
    return out, n


def evidence_replacements(judgments: list[Judgment], trajectories: Mapping[str, Trajectory], scope: str,
                          max_items: int | None, seed: int) -> tuple[list[tuple[Trajectory, dict[str, Any]]], list[dict[str, Any]]]:
    """(perturbed trajectories with their record, skipped items with reasons) for every Yes item of ``judgments``."""
    todo, skipped = [], []
    items = [(j, lab) for j in sorted(judgments, key=lambda j: j.trajectory_id) if j.status == "ok"
             for lab in j.labels if lab.label == "Yes"]
    def record(j: Judgment, lab: Any) -> dict[str, Any]:
        return {"trajectory_id": j.trajectory_id, "task_id": j.task_id, "arm": j.arm, "item_id": lab.item_id,
                "route": lab.route, "label_before": lab.label}

    if max_items is not None and len(items) > max_items:
        rng = random.Random(seed)
        keep = set(rng.sample(range(len(items)), int(max_items)))
        # items left out by the cap are listed like any other skipped item, never dropped silently
        skipped += [record(j, lab) | {"skipped": f"not sampled (max_items={max_items}, seed={seed})"}
                    for i, (j, lab) in enumerate(items) if i not in keep]
        items = [x for i, x in enumerate(items) if i in keep]
    for j, lab in items:
        base = record(j, lab)
        traj = trajectories.get(j.trajectory_id)
        quotes = [ev.quote for ev in lab.evidence if ev.quote.strip()]
        if traj is None:
            skipped.append(base | {"skipped": "trajectory not among the ingested trajectories"})
            continue
        if not quotes:
            skipped.append(base | {"skipped": "no quoted evidence (evidence gate off?)"})
            continue
        events = list(traj.events)
        cited = {ev.event_index for ev in lab.evidence}
        replaced, kinds, total = [], [], 0
        for q in dict.fromkeys(quotes):  # each distinct quote once, in citation order
            pert = perturb_quote(q)
            if pert is None:
                continue
            events, n = replace_in_events(events, q, pert[0], cited, scope)
            if n:
                replaced.append({"quote": q, "replacement": pert[0]})
                kinds.append(pert[1])
                total += n
        if not total:
            skipped.append(base | {"skipped": "no quote could be changed in the log (no perturbable value, or quote not found)"})
            continue
        new_id = f"{j.trajectory_id}#replace:{lab.item_id}"
        todo.append((traj.model_copy(update={"trajectory_id": new_id, "events": events}),
                     base | {"perturbed_id": new_id, "replacements": replaced, "rule": "+".join(sorted(set(kinds))),
                             "n_replaced": total}))
    return todo, skipped


def first_per_task(judged: list[Judgment], trajectories: TrajectoryFile) -> list[str]:
    """The judged trajectories `idle_trajectories` takes its logs from (the first by id of each task), found from the
    file's index: the same choice as passing it every judged trajectory, without parsing them all."""
    first: dict[tuple[str, str], str] = {}
    for tid in sorted(j.trajectory_id for j in judged if j.trajectory_id in trajectories):
        first.setdefault(trajectories.task_of(tid), tid)
    return sorted(set(first.values()))


def idle_trajectories(trajectories: list[Trajectory]) -> list[Trajectory]:
    """One idle log per task: the first trajectory's events before its first tool call."""
    first: dict[tuple[str, str], Trajectory] = {}
    for t in sorted(trajectories, key=lambda t: t.trajectory_id):
        first.setdefault((t.benchmark, t.task_id), t)
    out = []
    for (bench, task), t in sorted(first.items()):
        events = []
        for e in t.events:
            if e.kind in (EventKind.TOOL_CALL, EventKind.TOOL_OUTPUT, EventKind.FILE_CONTENT):
                break
            events.append(e)
        out.append(t.model_copy(update={"trajectory_id": f"idle/{bench}/{task}", "events": events,
                                        "outcome": t.outcome.model_copy(update={"status": IDLE_OUTCOME, "reward": 0.0, "reason": "idle control"}),
                                        "test_results": {}}))
    return out


def _shares(records: list[dict[str, Any]]) -> dict[str, Any]:
    labels = Counter(r["label_after"] for r in records)
    n = len(records)
    return {"n": n, "n_no": labels.get("No", 0), "n_abstain": labels.get("Abstain", 0), "n_yes": labels.get("Yes", 0),
            "n_failed": labels.get(None, 0),
            "share_no": labels.get("No", 0) / n if n else None,
            "share_no_or_abstain": (labels.get("No", 0) + labels.get("Abstain", 0)) / n if n else None,
            "share_still_yes": labels.get("Yes", 0) / n if n else None}


def controls(params: dict[str, Any], ingest_dir: Path, synth_dir: Path, judge_root: Path, out_dir: Path, *,
             progress: bool = True) -> dict[str, Any]:
    cfg = resolve_analysis(params.get("analysis"), params.get("arm"))["controls"]
    by_id = TrajectoryFile(ingest_dir / "trajectories.jsonl")  # whole logs parsed only for those perturbed or idled
    scoring = params.get("scoring") or {}
    prop, endpoint = bool(scoring.get("pass_propagation", True)), bool(scoring.get("endpoint", True))
    out_dir.mkdir(parents=True, exist_ok=True)
    store = out_dir / "llm_calls.jsonl"
    perturb_records: list[dict[str, Any]] = []
    idle_records: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"scope": cfg["scope"], "max_items": cfg["max_items"], "idle_outcome": IDLE_OUTCOME,
                               "arms": {}, "judge": None}
    # One client/store for every call of this stage; the store is compacted to exactly the calls used.
    from gcpc.judging.stage import judge_arm
    from gcpc.llm import llm_session, request_identity

    summary["judge"] = "/".join(request_identity(params["judge"]))
    with llm_session(params["judge"], store, progress=progress) as client:
        for arm_name in cfg["arms"]:
            path = judge_root / arm_name / "judgments.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"{path}: judgments of arm '{arm_name}' are missing (analysis.controls.arms names it)")
            arm, inputs = load_arm_inputs(params, arm_name, ingest_dir, synth_dir)
            judged = read_models(path, Judgment)
            todo, skipped = evidence_replacements(judged, by_id, cfg["scope"], cfg["max_items"], int(cfg["seed"]))
            results = {j.trajectory_id: j for j in judge_arm(arm, [t for t, _ in todo], llm_cfg=params["judge"], client=client,
                                                             checklists=inputs["checklists"], tasks=inputs["tasks"])} if todo else {}
            recs = []
            for traj, rec in todo:
                j = results.get(traj.trajectory_id)
                lab = next((x for x in (j.labels if j else []) if x.item_id == rec["item_id"]), None)
                recs.append(rec | {"status": j.status if j else "missing", "label_after": lab.label if lab else None,
                                   "raw_label_after": lab.raw_label if lab else None,
                                   "downgraded_after": bool(lab.downgraded) if lab else None})
            perturb_records += recs + skipped
            by_rule = {rule: _shares([r for r in recs if r["rule"] == rule]) for rule in sorted({r["rule"] for r in recs})}
            by_route = {route: _shares([r for r in recs if r["route"] == route]) for route in sorted({r["route"] for r in recs})}
            idle_logs = idle_trajectories([by_id[t] for t in first_per_task(judged, by_id)])
            idle_j = judge_arm(arm, idle_logs, llm_cfg=params["judge"], client=client, checklists=inputs["checklists"],
                               tasks=inputs["tasks"]) if idle_logs else []
            idle_by = {t.trajectory_id: t for t in idle_logs}
            arm_idle = []
            for j in idle_j:
                rec = {"arm": arm_name, "trajectory_id": j.trajectory_id, "task_id": j.task_id, "status": j.status,
                       "n_events": len(idle_by[j.trajectory_id].events), "gcpc_plain": None, "gcpc_outcome": None,
                       "zero_evidence": None, "n_yes": None}
                # the one zero-evidence rule (as finalize): an idle log is zero-evidence for Holistic / TICK only under the
                # extension `action_free_zero_evidence` (off by default: the paper never excludes arms that cannot abstain)
                ze = j.status == "ok" and zero_evidence_reason(j.kind, j.labels, idle_by[j.trajectory_id].events,
                                                                    action_free=action_free_rule(scoring)) is not None
                if j.status == "ok" and j.score is not None and not j.labels:
                    rec.update(gcpc_plain=float(j.score) / HOLISTIC_MAX, zero_evidence=ze, n_yes=None)
                elif j.status == "ok":
                    s = score_trajectory(j.labels, IDLE_OUTCOME, pass_propagation=prop, endpoint=endpoint)
                    rec.update(gcpc_plain=s.gcpc_plain, gcpc_outcome=s.gcpc_outcome, zero_evidence=ze, n_yes=s.n_yes)
                arm_idle.append(rec)
            idle_records += arm_idle
            ok = [r for r in arm_idle if r["status"] == "ok"]

            def mean(key: str, rows: list[dict[str, Any]] = ok) -> float | None:
                vals = [r[key] for r in rows if r[key] is not None]
                return sum(vals) / len(vals) if vals else None

            summary["arms"][arm_name] = {
                "evidence_replacement": _shares(recs) | {"n_yes_items": len(recs) + len(skipped), "n_skipped": len(skipped),
                                                         "by_rule": by_rule, "by_route": by_route},
                "idle": {"n_tasks": len(arm_idle), "n_ok": len(ok),
                         "n_zero_evidence": sum(bool(r["zero_evidence"]) for r in ok),
                         "n_with_yes": sum(1 for r in ok if (r["n_yes"] or 0) > 0),
                         "mean_plain": mean("gcpc_plain"), "max_plain": max((r["gcpc_plain"] for r in ok if r["gcpc_plain"] is not None), default=None),
                         "mean_outcome": mean("gcpc_outcome"),
                         "max_outcome": max((r["gcpc_outcome"] for r in ok if r["gcpc_outcome"] is not None), default=None)},
            }
    write_jsonl(out_dir / "perturbations.jsonl", sorted(perturb_records, key=lambda r: (r["arm"], r["trajectory_id"], r["item_id"])))
    write_jsonl(out_dir / "idle.jsonl", sorted(idle_records, key=lambda r: (r["arm"], r["trajectory_id"])))
    write_json(out_dir / "summary.json", summary)
    # calls made depend on what the call store already held: reported, never written into an output
    return summary | {"calls_made": client.calls_made}


def main() -> int:
    from gcpc import paths
    from gcpc.llm.cli import llm_stage_args, load_llm_params, stage_errors

    args = llm_stage_args("Evidence replacement and idle-agent controls (RQ4 Panel C)")
    with stage_errors():
        s = controls(load_llm_params(args), paths.INGEST, paths.SYNTHESIZE, paths.JUDGE, CONTROLS)
    for arm, e in s["arms"].items():
        er = e["evidence_replacement"]
        idle = e["idle"]
        plain = (f"undefined (no idle log has one: {idle['n_zero_evidence']} of {idle['n_ok']} zero-evidence)"
                 if idle["mean_plain"] is None else idle["mean_plain"])
        print(f"controls[{arm}]: {er['n']} Yes items perturbed ({er['n_skipped']} skipped), share turning No "
              f"{er['share_no']}; idle-agent control: mean score plain {plain}, with outcome {idle['mean_outcome']}")
    print(f"controls: {s['calls_made']} calls -> {CONTROLS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
