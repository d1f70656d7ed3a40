"""Validate stage: re-run every gate on the frozen checklists and summarise the attempt log.

The gates already ran inside synthesis; running them again here, from the stored outputs alone,
is the audit that a frozen checklist really passes them (and the numbers of Table 4).
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from gcpc.corpus.models import Task
from gcpc.llm.schemas import GeneratedItem
from gcpc.synthesis.gates import check_items
from gcpc.synthesis.models import Checklist, SynthesisAttempt


def _item_validity(attempt: SynthesisAttempt) -> tuple[int, int]:
    """(items passing all per-item gates, items) in one attempt."""
    per_item: dict[int, bool] = {}
    for g in attempt.gate_results:
        if g.item_index is not None:
            per_item[g.item_index] = per_item.get(g.item_index, True) and g.passed
    return sum(per_item.values()), len(per_item)


def validate(tasks: list[Task], checklists: list[Checklist], attempts: list[SynthesisAttempt], *, min_items: int, max_items: int) -> dict[str, Any]:
    by_task = {(t.benchmark, t.task_id): t for t in tasks}
    rows, recheck_failures = [], []
    for cl in checklists:
        task = by_task.get((cl.benchmark, cl.task_id))
        if task is None:
            raise ValueError(f"checklists.jsonl: checklist for unknown task {cl.benchmark}/{cl.task_id}")
        failures = []
        if cl.status == "frozen":
            items = [GeneratedItem(text=i.text, quote=i.quote, route=i.route, test_refs=i.test_refs, category=i.category) for i in cl.items]
            failures = [g.message for g in check_items(items, task.instruction, task.tests, min_items=min_items, max_items=max_items) if not g.passed]
            recheck_failures.extend(f"{cl.task_id}: {m}" for m in failures)
        rows.append({
            "benchmark": cl.benchmark, "task_id": cl.task_id, "status": cl.status, "attempts": cl.attempts,
            "first_attempt_valid": cl.first_attempt_valid, "n_items": len(cl.items),
            "routes": dict(sorted(Counter(i.route for i in cl.items).items())),
            "categories": dict(sorted(Counter(i.category for i in cl.items).items())),
            "failure": cl.failure, "recheck_failures": failures,
        })
    frozen = [c for c in checklists if c.status == "frozen"]
    items = [i for c in frozen for i in c.items]
    first = [a for a in attempts if a.attempt == 1]
    first_ok = sum(_item_validity(a)[0] for a in first)
    first_n = sum(_item_validity(a)[1] for a in first)
    rejections = Counter(g.gate for a in attempts for g in a.gate_results if not g.passed)
    counts = [len(c.items) for c in frozen]
    routes = Counter(i.route for i in items)
    summary = {
        "n_tasks": len(checklists),
        "n_frozen": len(frozen),
        "n_failed": len(checklists) - len(frozen),
        "n_items": len(items),
        "items_per_task": {"min": min(counts, default=0), "median": statistics.median(counts) if counts else 0, "max": max(counts, default=0)},
        "route_share": {r: (routes[r] / len(items) if items else 0.0) for r in ("assertion", "generated", "judge")},
        "item_validity_first_attempt": first_ok / first_n if first_n else 0.0,
        "task_validity_first_attempt": (sum(c.first_attempt_valid for c in checklists) / len(checklists)) if checklists else 0.0,
        "task_validity_after_regeneration": len(frozen) / len(checklists) if checklists else 0.0,
        "n_generation_attempts": len(attempts),
        "rejections_by_gate": dict(sorted(rejections.items())),
        "recheck_failures": recheck_failures,
        "quotes_verbatim": not any("quote" in m for m in recheck_failures),
    }
    return {"summary": summary, "tasks": rows}


def report_markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    lines = [
        "# Checklist gate report", "",
        f"- tasks: {s['n_tasks']} (frozen {s['n_frozen']}, failed {s['n_failed']})",
        f"- items: {s['n_items']}; per task min {s['items_per_task']['min']}, median {s['items_per_task']['median']}, max {s['items_per_task']['max']}",
        "- routes: " + ", ".join(f"{k} {v:.1%}" for k, v in s["route_share"].items()),
        f"- item validity at first attempt: {s['item_validity_first_attempt']:.1%}; tasks valid at first attempt: {s['task_validity_first_attempt']:.1%}; after regeneration: {s['task_validity_after_regeneration']:.1%}",
        f"- generation attempts: {s['n_generation_attempts']}; rejections by gate: {s['rejections_by_gate'] or 'none'}",
        f"- re-check of frozen checklists: {'all gates pass' if not s['recheck_failures'] else '; '.join(s['recheck_failures'])}",
        "", "| benchmark | task | status | attempts | items | routes | categories |", "|---|---|---|---|---|---|---|",
    ]
    for r in report["tasks"]:
        routes = ", ".join(f"{k} {v}" for k, v in r["routes"].items())
        cats = ", ".join(f"{k} {v}" for k, v in r["categories"].items())
        lines.append(f"| {r['benchmark']} | {r['task_id']} | {r['status']} | {r['attempts']} | {r['n_items']} | {routes} | {cats} |")
    failed = [r for r in report["tasks"] if r["failure"]]
    if failed:
        lines += ["", "## Failed tasks", ""] + [f"- {r['task_id']}: {r['failure']}" for r in failed]
    return "\n".join(lines) + "\n"


def metrics(report: dict[str, Any]) -> dict[str, Any]:
    s = report["summary"]
    return {k: s[k] for k in ("n_tasks", "n_frozen", "n_items", "item_validity_first_attempt", "task_validity_after_regeneration", "route_share")} | {
        "items_per_task_median": s["items_per_task"]["median"]}
