"""Validate stage: re-run every gate on the frozen checklists and summarise the attempt log.

The gates already ran inside synthesis; running them again here, from the stored outputs alone,
is the audit that a frozen checklist really passes them (and the numbers of Table 4).

Validity (Table 4) is counted over items:
  * first attempt: items of every task's first generation attempt that pass every per-item gate
    (quote, references, restatement), over all items of those attempts;
  * after regeneration: the same over every task's final attempt (the accepted one for a frozen
    checklist, the last one for a failed task).
The number of items per task is an observation, reported as a distribution beside the paper's
(PAPER_ITEMS_PER_TASK), never a gate: only a checklist with no item is unusable, and it is listed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gcpc.corpus.models import Task
from gcpc.llm.schemas import GeneratedItem
from gcpc.synthesis.gates import check_items, item_passes
from gcpc.synthesis.models import Checklist, SynthesisAttempt

ROUTES = ("assertion", "generated", "judge")
PAPER_ITEMS_PER_TASK = {"min": 4, "median": 8, "max": 15}
"""Items per checklist as the paper reports them for its own tasks: the reference the observed counts
are shown beside. Not a limit (the paper's SWE-bench transfer has 3.36 items per task)."""


def _item_validity(attempt: SynthesisAttempt) -> tuple[int, int]:
    """(items passing all per-item gates, items)."""
    per_item = item_passes(attempt.gate_results)
    return sum(per_item.values()), len(per_item)


def _share(num: int, den: int) -> float:
    return num / den if den else 0.0


def summarize(checklists: Sequence[Checklist], attempts: Sequence[SynthesisAttempt]) -> dict[str, Any]:
    """Counts, validity, route mix and items-per-task distribution of one set of checklists."""
    keys = {(c.benchmark, c.task_id) for c in checklists}
    by_task: dict[tuple[str, str], list[SynthesisAttempt]] = {}
    for a in attempts:
        if (a.benchmark, a.task_id) in keys:
            by_task.setdefault((a.benchmark, a.task_id), []).append(a)
    first = [min(v, key=lambda a: a.attempt) for v in by_task.values()]
    final = [max(v, key=lambda a: a.attempt) for v in by_task.values()]
    first_v = [_item_validity(a) for a in first]
    final_v = [_item_validity(a) for a in final]
    first_ok, first_n = (sum(v[k] for v in first_v) for k in range(2))
    final_ok, final_n = (sum(v[k] for v in final_v) for k in range(2))
    frozen = [c for c in checklists if c.status == "frozen"]
    items = [i for c in frozen for i in c.items]
    counts = sorted(len(c.items) for c in frozen)
    quartiles = statistics.quantiles(counts, n=4, method="inclusive") if len(counts) > 1 else [float(sum(counts))] * 3
    routes = Counter(i.route for i in items)
    rejections = Counter(g.gate for a in attempts if (a.benchmark, a.task_id) in keys for g in a.gate_results if not g.passed)
    return {
        "n_tasks": len(checklists),
        "n_frozen": len(frozen),
        "n_failed": len(checklists) - len(frozen),
        "n_items": len(items),
        "items_per_task": {
            "min": counts[0] if counts else 0,
            "q1": quartiles[0],
            "median": statistics.median(counts) if counts else 0,
            "q3": quartiles[2],
            "max": counts[-1] if counts else 0,
            "histogram": [{"items": k, "tasks": v} for k, v in sorted(Counter(counts).items())],
            "paper": PAPER_ITEMS_PER_TASK,
            "n_below_paper_min": sum(c < PAPER_ITEMS_PER_TASK["min"] for c in counts),
            "n_above_paper_max": sum(c > PAPER_ITEMS_PER_TASK["max"] for c in counts),
            "per_task": {f"{c.benchmark}/{c.task_id}": len(c.items) for c in sorted(frozen, key=lambda c: (c.benchmark, c.task_id))},
        },
        "route_counts": {r: routes[r] for r in ROUTES},
        "route_share": {r: _share(routes[r], len(items)) for r in ROUTES},
        "items_first_attempt": first_n,
        "items_first_attempt_valid": first_ok,
        "item_validity_first_attempt": _share(first_ok, first_n),
        "items_final_attempt": final_n,
        "items_final_attempt_valid": final_ok,
        "item_validity_after_regeneration": _share(final_ok, final_n),
        "task_validity_first_attempt": _share(sum(c.first_attempt_valid for c in checklists), len(checklists)),
        "task_validity_after_regeneration": _share(len(frozen), len(checklists)),
        "n_generation_attempts": sum(len(v) for v in by_task.values()),
        "rejections_by_gate": dict(sorted(rejections.items())),
        "failed_tasks": {c.task_id: c.failure or "" for c in checklists if c.status != "frozen"},
        "empty_tasks": sorted(a.task_id for a in final if any(g.gate == "nonempty" and not g.passed for g in a.gate_results)),
    }


def recheck(tasks: Sequence[Task], checklists: Sequence[Checklist]) -> dict[tuple[str, str], list[str]]:
    """Every gate again on every frozen checklist, from the stored items alone: failures per task."""
    by_task = {(t.benchmark, t.task_id): t for t in tasks}
    out: dict[tuple[str, str], list[str]] = {}
    for cl in checklists:
        task = by_task.get((cl.benchmark, cl.task_id))
        if task is None:
            raise ValueError(f"checklists.jsonl: checklist for unknown task {cl.benchmark}/{cl.task_id}")
        if cl.status != "frozen":
            out[(cl.benchmark, cl.task_id)] = []
            continue
        items = [GeneratedItem(text=i.text, quote=i.quote, route=i.route, test_refs=i.test_refs) for i in cl.items]
        out[(cl.benchmark, cl.task_id)] = [g.message for g in check_items(items, task.instruction, task.tests, task.verifier_files) if not g.passed]
    return out


def validate(tasks: list[Task], checklists: list[Checklist], attempts: list[SynthesisAttempt]) -> dict[str, Any]:
    failures = recheck(tasks, checklists)
    rows, recheck_failures = [], []
    for cl in checklists:
        fails = failures[(cl.benchmark, cl.task_id)]
        recheck_failures.extend(f"{cl.task_id}: {m}" for m in fails)
        rows.append({
            "benchmark": cl.benchmark, "task_id": cl.task_id, "status": cl.status, "attempts": cl.attempts,
            "first_attempt_valid": cl.first_attempt_valid, "n_items": len(cl.items),
            "routes": dict(sorted(Counter(i.route for i in cl.items).items())),
            "checklist_hash": cl.checklist_hash,
            "failure": cl.failure, "recheck_failures": fails,
        })
    summary = summarize(checklists, attempts)
    summary["recheck_failures"] = recheck_failures
    summary["quotes_verbatim"] = not any("[quote_verbatim]" in m for m in recheck_failures)
    summary["all_frozen_items_pass_all_gates"] = not recheck_failures
    return {"summary": summary, "tasks": rows}


def report_markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    ipt = s["items_per_task"]
    lines = [
        "# Checklist gate report", "",
        f"- tasks: {s['n_tasks']} (frozen {s['n_frozen']}, failed {s['n_failed']})",
        f"- items: {s['n_items']}; per task min {ipt['min']}, median {ipt['median']:g}, max {ipt['max']} "
        f"(observed, not enforced; the paper reports {ipt['paper']['min']}–{ipt['paper']['max']}, median {ipt['paper']['median']}): "
        f"{ipt['n_below_paper_min']} checklist(s) below {ipt['paper']['min']} items, {ipt['n_above_paper_max']} above {ipt['paper']['max']}",
        "- items per task (items: tasks): " + (", ".join(f"{h['items']}: {h['tasks']}" for h in ipt["histogram"]) or "none"),
        f"- tasks without any item (unusable, not padded): {len(s['empty_tasks'])}" + (f" ({', '.join(s['empty_tasks'])})" if s["empty_tasks"] else ""),
        "- routes: " + ", ".join(f"{k} {v:.1%}" for k, v in s["route_share"].items()),
        f"- item validity at first attempt: {s['item_validity_first_attempt']:.1%} of {s['items_first_attempt']} items; "
        f"after regeneration: {s['item_validity_after_regeneration']:.1%} of {s['items_final_attempt']} items",
        f"- tasks valid at first attempt: {s['task_validity_first_attempt']:.1%}; after regeneration (frozen): {s['task_validity_after_regeneration']:.1%}",
        f"- generation attempts: {s['n_generation_attempts']}; rejections by gate: {s['rejections_by_gate'] or 'none'}",
        f"- re-check of frozen checklists: {'all gates pass' if not s['recheck_failures'] else '; '.join(s['recheck_failures'])}",
        "", "| benchmark | task | status | attempts | items | routes |", "|---|---|---|---|---|---|",
    ]
    for r in report["tasks"]:
        routes = ", ".join(f"{k} {v}" for k, v in r["routes"].items())
        lines.append(f"| {r['benchmark']} | {r['task_id']} | {r['status']} | {r['attempts']} | {r['n_items']} | {routes} |")
    failed = [r for r in report["tasks"] if r["failure"]]
    if failed:
        lines += ["", "## Failed tasks (their trajectories are skipped by the judge with this reason)", ""]
        lines += [f"- {r['task_id']}: {r['failure']}" for r in failed]
    return "\n".join(lines) + "\n"


def metrics(report: dict[str, Any]) -> dict[str, Any]:
    s = report["summary"]
    keys = ("n_tasks", "n_frozen", "n_items", "item_validity_first_attempt", "item_validity_after_regeneration",
            "task_validity_after_regeneration", "route_share")
    ipt = s["items_per_task"]
    return {k: s[k] for k in keys} | {"items_per_task_min": ipt["min"], "items_per_task_median": ipt["median"],
                                      "items_per_task_max": ipt["max"], "n_tasks_without_items": len(s["empty_tasks"])}
