"""Transfer table (the paper's Table 4): synthesis on several benchmarks, gated and frozen.

For each configured benchmark, its tasks are read by the benchmark's own corpus reader, synthesized
into checklists (into the benchmark's own folder and call store, so a re-run with unchanged rules,
prompts and tasks makes no LLM call), every frozen checklist is re-checked against every gate, and
the category audit runs on its checklists. One row per benchmark: tasks, frozen checklists, items,
item validity at first attempt and after regeneration, route mix and the items-per-task
distribution, shown beside the paper's (4–15, median 8; observed, never enforced). A benchmark's
`sample: N` (with `seed`) synthesizes a seeded sample of N of its tasks, said in the table's notes
(SWE-bench Verified: 100, as the paper). A task without
any item is listed, never padded. A benchmark whose tasks cannot be read is a row saying why,
never silently dropped.

`python -m gcpc.synthesis.transfer` reads params.yaml (`transfer`, `generator`, `synthesis`) and
writes data/processed/transfer/ (per benchmark: checklists.jsonl, attempts.jsonl, llm_calls.jsonl,
audit/), data/processed/transfer/transfer.json, figures/table4_transfer.{md,tex} and
figures/category_audit.{md,tex}.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcpc.corpus.models import Task
from gcpc.io import read_models, write_json, write_text
from gcpc.llm import request_identity
from gcpc.synthesis.audit import AuditSettings, coverage_latex, coverage_markdown, run_audit
from gcpc.synthesis.generate import SynthesisSettings
from gcpc.synthesis.models import SynthesisAttempt
from gcpc.synthesis.stage import synthesize_all
from gcpc.synthesis.validate import PAPER_ITEMS_PER_TASK, recheck, summarize

OUT_DIR = Path("data/processed/transfer")
FIGURES = Path("figures")


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    label: str
    reader: str
    root: str
    tasks_dir: str
    sample: int | None = None
    """Synthesize a seeded sample of this many tasks (the paper samples 100 SWE-bench Verified instances); None: all."""
    seed: int = 0

    @classmethod
    def from_cfg(cls, cfg: dict[str, Any], i: int) -> BenchmarkSpec:
        missing = [k for k in ("name", "reader", "tasks_dir") if not cfg.get(k)]
        if missing:
            raise KeyError(f"params.yaml: transfer.benchmarks[{i}] is missing {', '.join(missing)}")
        sample = cfg.get("sample")
        if sample is not None and (not isinstance(sample, int) or isinstance(sample, bool) or sample < 1):
            raise ValueError(f"params.yaml: transfer.benchmarks[{i}].sample must be a positive integer, got {sample!r}")
        seed = cfg.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"params.yaml: transfer.benchmarks[{i}].seed must be an integer, got {seed!r}")
        return cls(name=str(cfg["name"]), label=str(cfg.get("label") or cfg["name"]), reader=str(cfg["reader"]),
                   root=str(cfg.get("root") or "."), tasks_dir=str(cfg["tasks_dir"]), sample=sample, seed=seed)


def sample_tasks(tasks: list[Task], n: int | None, seed: int) -> list[Task]:
    """A seeded sample of n tasks (by task id, so the order tasks were read in does not matter), in task-id order."""
    import random

    ordered = sorted(tasks, key=lambda t: t.task_id)
    if n is None or n >= len(ordered):
        return ordered
    picked = set(random.Random(seed).sample(range(len(ordered)), n))
    return [t for i, t in enumerate(ordered) if i in picked]


def _read_harbor(spec: BenchmarkSpec, repo: Path, notes: list[str]) -> list[Task]:
    from gcpc.corpus.harbor import read_tasks

    root = repo / spec.root
    return read_tasks(root / spec.tasks_dir, spec.name, root=[root, repo], notes=notes)


def _read_terminal_bench_1(spec: BenchmarkSpec, repo: Path, notes: list[str]) -> list[Task]:
    from gcpc.corpus import terminal_bench1 as tb1

    root = repo / spec.root
    roots = [root, repo]
    scan = tb1.scan([root / spec.tasks_dir], roots)
    notes.extend(scan.notes)
    return tb1.read_tasks(scan, roots, notes)


def _read_swe_bench(spec: BenchmarkSpec, repo: Path, notes: list[str]) -> list[Task]:
    """SWE-bench instances (`tasks_dir` names the instances file): problem statement and test ids, and
    the test patch as verifier source when a row carries one."""
    from gcpc.corpus.swe_bench import read_tasks

    root = repo / spec.root
    return read_tasks(root / spec.tasks_dir, spec.name, root=[root, repo])


READERS: dict[str, Callable[[BenchmarkSpec, Path, list[str]], list[Task]]] = {
    "harbor": _read_harbor,
    "terminal-bench-1": _read_terminal_bench_1,
    "swe-bench": _read_swe_bench,
}
"""Task readers by name; each imports its corpus module only when used."""


def read_benchmark(spec: BenchmarkSpec, repo: Path) -> tuple[list[Task] | None, str | None]:
    """(tasks, None) or (None, why they cannot be read)."""
    reader = READERS.get(spec.reader)
    if reader is None:
        return None, f"no task reader '{spec.reader}' (known: {', '.join(sorted(READERS))})"
    path = repo / spec.root / spec.tasks_dir
    if not (path.is_file() if spec.reader == "swe-bench" else path.is_dir()):
        return None, f"tasks {'file' if spec.reader == 'swe-bench' else 'folder'} {spec.root}/{spec.tasks_dir} not found"
    try:
        tasks = reader(spec, repo, [])
    except ImportError as exc:
        return None, f"the '{spec.reader}' corpus reader is not available ({exc})"
    if not tasks:
        return None, f"no tasks in {spec.root}/{spec.tasks_dir}"
    return tasks, None


def transfer_row(spec: BenchmarkSpec, tasks: list[Task], llm_cfg: dict[str, Any], settings: SynthesisSettings,
                 audit: AuditSettings | None, out_dir: Path, *, progress: bool = False) -> dict[str, Any]:
    bench_dir = out_dir / spec.name
    checklists = synthesize_all(tasks, llm_cfg, settings, bench_dir, progress=progress)
    attempts = read_models(bench_dir / "attempts.jsonl", SynthesisAttempt)
    summary = summarize(checklists, attempts)
    failures = recheck(tasks, checklists)
    summary["recheck_failures"] = sorted(f"{task}: {m}" for (_, task), ms in failures.items() for m in ms)
    summary["n_tasks_without_verifier_source"] = sum(bool(t.tests) and not any(v.source for v in t.tests) for t in tasks)
    summary["n_tasks_without_tests"] = sum(not t.tests for t in tasks)
    row: dict[str, Any] = {"name": spec.name, "label": spec.label, "available": True, "tasks_dir": f"{spec.root}/{spec.tasks_dir}"}
    row |= summary
    if audit is not None:
        row["audit"] = run_audit(tasks, checklists, llm_cfg, audit, bench_dir / "audit", progress=progress)
    return row


def transfer_table(specs: list[BenchmarkSpec], llm_cfg: dict[str, Any], settings: SynthesisSettings,
                   audit: AuditSettings | None, out_dir: Path, repo: Path = Path("."), *, progress: bool = False) -> dict[str, Any]:
    provider, model = request_identity(llm_cfg)
    rows = []
    for spec in specs:
        tasks, why = read_benchmark(spec, repo)
        if tasks is None:
            rows.append({"name": spec.name, "label": spec.label, "available": False, "reason": why,
                         "tasks_dir": f"{spec.root}/{spec.tasks_dir}"})
            continue
        picked = sample_tasks(tasks, spec.sample, spec.seed)
        row = transfer_row(spec, picked, llm_cfg, settings, audit, out_dir, progress=progress)
        if spec.sample is not None:
            row["sample"] = {"n": len(picked), "of": len(tasks), "seed": spec.seed}
        rows.append(row)
    return {"provider": provider, "model": model,
            "settings": {"max_regenerations": settings.max_regenerations},
            "paper_items_per_task": PAPER_ITEMS_PER_TASK,
            "benchmarks": rows}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _dist(r: dict[str, Any]) -> str:
    d = r["items_per_task"]
    return f"{d['min']}–{d['max']} (median {d['median']:g})"


def _paper(result: dict[str, Any]) -> dict[str, Any]:
    return result.get("paper_items_per_task") or PAPER_ITEMS_PER_TASK


def table_markdown(result: dict[str, Any]) -> str:
    paper = _paper(result)
    lines = [
        f"Checklist synthesis across benchmarks (provider {result['provider']}, model {result['model']}; "
        f"at most {result['settings']['max_regenerations']} generation attempts; the number of items is observed, "
        f"not enforced: the paper reports {paper['min']}–{paper['max']} items, median {paper['median']}).", "",
        "| benchmark | tasks | frozen | items | validity, first attempt | validity, after regeneration | "
        f"routes A / G / J | items per task | below {paper['min']} / above {paper['max']} items |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for r in result["benchmarks"]:
        if not r["available"]:
            lines.append(f"| {r['label']} | – | – | – | – | – | – | – | – |")
            notes.append(f"- {r['label']}: not available: {r['reason']}")
            continue
        rs = r["route_share"]
        lines.append(
            f"| {r['label']} | {r['n_tasks']} | {r['n_frozen']} | {r['n_items']} | "
            f"{_pct(r['item_validity_first_attempt'])} ({r['items_first_attempt_valid']}/{r['items_first_attempt']}) | "
            f"{_pct(r['item_validity_after_regeneration'])} ({r['items_final_attempt_valid']}/{r['items_final_attempt']}) | "
            f"{_pct(rs['assertion'])} / {_pct(rs['generated'])} / {_pct(rs['judge'])} | {_dist(r)} | "
            f"{r['items_per_task']['n_below_paper_min']} / {r['items_per_task']['n_above_paper_max']} |")
        if r["n_failed"]:
            by_reason: dict[str, list[str]] = {}
            for t, why in sorted(r["failed_tasks"].items()):
                by_reason.setdefault(why.split(";")[0], []).append(t)
            notes.append(f"- {r['label']}: {r['n_failed']} task(s) not synthesizable (judging skips their trajectories): "
                         + "; ".join(f"{why}: {', '.join(ts)}" for why, ts in sorted(by_reason.items())))
        if r["recheck_failures"]:
            notes.append(f"- {r['label']}: frozen items failing a gate on re-check: {len(r['recheck_failures'])}")
        if r.get("sample"):
            sm = r["sample"]
            notes.append(f"- {r['label']}: a seeded sample of {sm['n']} of its {sm['of']} tasks (seed {sm['seed']}; "
                         "the paper also samples 100 SWE-bench Verified instances)")
        if r["n_tasks_without_verifier_source"]:
            notes.append(f"- {r['label']}: {r['n_tasks_without_verifier_source']} task(s) with test names but no verifier "
                         "source: assertion references are checked against names only, and the restatement gate has no code to compare")
    available = [r for r in result["benchmarks"] if r["available"]]
    if available:
        lo, hi = 1, max([paper["max"], *(r["items_per_task"]["max"] for r in available)])
        lines += ["", "Items per task (frozen checklists): number of tasks with each checklist length.", "",
                  "| benchmark | " + " | ".join(str(n) for n in range(lo, hi + 1)) + " |",
                  "|---|" + "---|" * (hi - lo + 1)]
        for r in available:
            hist = {h["items"]: h["tasks"] for h in r["items_per_task"]["histogram"]}
            lines.append(f"| {r['label']} | " + " | ".join(str(hist.get(n, 0)) for n in range(lo, hi + 1)) + " |")
    lines += ["", "Validity: share of generated items passing every per-item gate (verbatim quote, test references, "
              "no test restatement), at each task's first generation attempt and at its final one. Routes: assertion / "
              "generated / judge share of frozen items. Items per task: min–max (median) over frozen checklists; a task "
              "whose checklist has no item is not synthesizable and is listed below.", ""]
    return "\n".join(lines + notes) + "\n"


def _tex(text: str) -> str:
    return text.replace("&", r"\&").replace("%", r"\%").replace("_", r"\_").replace("#", r"\#")


def table_latex(result: dict[str, Any]) -> str:
    lines = [r"\begin{tabular}{lrrrrrl}", r"\toprule",
             r"Benchmark & Tasks & Frozen & Items & Valid (1st) & Valid (regen.) & Routes A/G/J (\%) \\",
             r"\midrule"]
    for r in result["benchmarks"]:
        if not r["available"]:
            lines.append(f"{_tex(r['label'])} & \\multicolumn{{6}}{{l}}{{not available}} \\\\")
            continue
        rs = r["route_share"]
        lines.append(
            f"{_tex(r['label'])} & {r['n_tasks']} & {r['n_frozen']} & {r['n_items']} & "
            f"{100 * r['item_validity_first_attempt']:.1f}\\% & {100 * r['item_validity_after_regeneration']:.1f}\\% & "
            f"{100 * rs['assertion']:.1f} / {100 * rs['generated']:.1f} / {100 * rs['judge']:.1f} \\\\")
    lines += [r"\midrule", r"\multicolumn{7}{l}{Items per task: " + "; ".join(
        f"{_tex(r['label'])} {r['items_per_task']['min']}--{r['items_per_task']['max']}, median {r['items_per_task']['median']:g}"
        for r in result["benchmarks"] if r["available"]) + r"} \\",
              r"\multicolumn{7}{l}{Observed, not enforced; the paper reports " + f"{_paper(result)['min']}--{_paper(result)['max']}, "
              f"median {_paper(result)['median']}" + r".} \\", r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_outputs(result: dict[str, Any], out_dir: Path = OUT_DIR, figures: Path = FIGURES) -> None:
    write_json(out_dir / "transfer.json", result)
    write_text(figures / "table4_transfer.md", table_markdown(result))
    write_text(figures / "table4_transfer.tex", table_latex(result))
    audits = {r["label"]: r["audit"] for r in result["benchmarks"] if r.get("audit")}
    if audits:
        write_text(figures / "category_audit.md", "Category audit: stated requirements covered by each scheme.\n\n" + coverage_markdown(audits))
        write_text(figures / "category_audit.tex", coverage_latex(audits))


def main() -> None:
    from gcpc.params import load_params, section, stage_args

    params = load_params(stage_args("`python -m gcpc.synthesis.transfer`: the transfer table (Table 4)").params)
    cfg = section(params, "transfer")
    specs = [BenchmarkSpec.from_cfg(b, i) for i, b in enumerate(cfg.get("benchmarks") or [])]
    if not specs:
        raise KeyError("params.yaml: transfer.benchmarks is empty")
    synthesis_cfg = params.get("synthesis", {})
    audit = AuditSettings.from_params(synthesis_cfg) if cfg.get("audit", True) else None
    result = transfer_table(specs, params["generator"], SynthesisSettings.from_params(synthesis_cfg), audit, OUT_DIR)
    write_outputs(result)
    for r in result["benchmarks"]:
        if r["available"]:
            print(f"transfer: {r['label']}: {r['n_frozen']}/{r['n_tasks']} frozen, {r['n_items']} items, "
                  f"validity {r['item_validity_first_attempt']:.1%} -> {r['item_validity_after_regeneration']:.1%}")
        else:
            print(f"transfer: {r['label']}: not available ({r['reason']})")


if __name__ == "__main__":
    main()
