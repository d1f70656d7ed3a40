"""The ingest stage: native Harbor corpora in, canonical JSONL records and a population summary out.

Every later stage reads only these outputs, so everything here is deterministic: inputs are
visited in sorted order, records are written sorted as canonical JSON, and nothing depends
on the machine (paths are relative to the corpus root).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc.corpus.harbor import display_path, find_trial_folders, read_tasks, read_trial
from gcpc.corpus.models import Exclusion, Task, Trajectory
from gcpc.corpus.render import render_log
from gcpc.io import sha256_text, write_json, write_jsonl, write_text

DEFAULT_OUT_DIR = "data/processed/ingest"
OUTCOMES = ("PASS", "FAIL", "other")


@dataclass
class IngestResult:
    corpora: list[str] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things skipped that are not trials: unreadable verifier files, ignored ctrf files."""


def _required(cfg: dict[str, Any], key: str) -> Any:
    if key not in cfg or cfg[key] in (None, ""):
        raise KeyError(f"corpus config {cfg.get('name', '?')!r}: missing required key '{key}'")
    return cfg[key]


def log_fingerprint(trajectory: Trajectory) -> str:
    """Identity for de-duplication: the task plus the full (untruncated) judge-visible log."""
    return sha256_text(f"{trajectory.benchmark}\n{trajectory.task_id}\n{render_log(trajectory.events, None)}")


def dedupe(trajectories: list[Trajectory]) -> tuple[list[Trajectory], list[Exclusion]]:
    """Collapse identical trajectories; the first by trajectory_id is kept."""
    kept: list[Trajectory] = []
    dropped: list[Exclusion] = []
    seen_fp: dict[str, str] = {}
    seen_id: set[str] = set()
    for t in sorted(trajectories, key=lambda t: (t.trajectory_id, t.source_path)):
        if t.trajectory_id in seen_id:
            dropped.append(Exclusion(path=t.source_path, reason=f"duplicate id: {t.trajectory_id} already read"))
            continue
        fp = log_fingerprint(t)
        if fp in seen_fp:
            dropped.append(Exclusion(path=t.source_path, reason=f"duplicate: same task and log as {seen_fp[fp]}"))
            continue
        seen_fp[fp] = t.trajectory_id
        seen_id.add(t.trajectory_id)
        kept.append(t)
    return kept, dropped


def ingest(corpus_cfg: dict[str, Any], root: Path) -> IngestResult:
    """Read one corpus: {name, benchmark, tasks_dir, trials_dirs[, root]}; dirs relative to `root`.

    Recorded paths are relative to the corpus root (`root/<corpus_cfg.root>` when given,
    else `root`), or to `root` for files outside it.
    """
    root = Path(root)
    benchmark = str(_required(corpus_cfg, "benchmark"))
    name = str(corpus_cfg.get("name") or benchmark)
    roots = [root / corpus_cfg["root"], root] if corpus_cfg.get("root") else [root]
    notes: list[str] = []
    tasks = read_tasks(root / _required(corpus_cfg, "tasks_dir"), benchmark, root=roots, notes=notes)
    tasks_by_id = {t.task_id: t for t in tasks}

    trials_dirs = corpus_cfg.get("trials_dirs") or []
    if isinstance(trials_dirs, str):
        trials_dirs = [trials_dirs]
    folders: set[Path] = set()
    for d in trials_dirs:
        path = root / d
        if not path.is_dir():
            raise FileNotFoundError(f"corpus {name!r}: trials directory {display_path(path, roots)} not found")
        folders.update(find_trial_folders(path))

    trajectories: list[Trajectory] = []
    exclusions: list[Exclusion] = []
    for folder in sorted(folders):
        item = read_trial(folder, benchmark, tasks_by_id, root=roots, notes=notes)
        (exclusions if isinstance(item, Exclusion) else trajectories).append(item)
    trajectories, duplicates = dedupe(trajectories)
    return IngestResult(
        corpora=[name],
        tasks=tasks,
        trajectories=trajectories,
        exclusions=sorted(exclusions + duplicates, key=lambda e: (e.path, e.reason)),
        notes=sorted(set(notes)),
    )


def merge_results(results: list[IngestResult]) -> IngestResult:
    """Combine corpora; a task present in two corpora must be identical, trajectory ids unique."""
    tasks: dict[tuple[str, str], Task] = {}
    for r in results:
        for t in r.tasks:
            key = (t.benchmark, t.task_id)
            if key in tasks and tasks[key] != t:
                raise ValueError(f"task {t.benchmark}/{t.task_id} differs between {tasks[key].source_path} "
                                 f"and {t.source_path}")
            tasks.setdefault(key, t)
    trajectories, duplicates = dedupe([t for r in results for t in r.trajectories])
    exclusions = [e for r in results for e in r.exclusions] + duplicates
    return IngestResult(
        corpora=[c for r in results for c in r.corpora],
        tasks=[tasks[k] for k in sorted(tasks)],
        trajectories=trajectories,
        exclusions=sorted(exclusions, key=lambda e: (e.path, e.reason)),
        notes=sorted({n for r in results for n in r.notes}),
    )


def reason_category(reason: str) -> str:
    """Exclusion reasons read '<category>: <detail>'; counts are per category."""
    return reason.split(":", 1)[0].strip()


def population(result: IngestResult) -> dict[str, Any]:
    counts: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: dict.fromkeys(OUTCOMES, 0)))
    for t in result.trajectories:
        counts[t.benchmark][t.condition][t.outcome.status] += 1
    by_benchmark = Counter(t.benchmark for t in result.tasks)
    tests_by_benchmark = Counter()
    for t in result.tasks:
        tests_by_benchmark[t.benchmark] += len(t.tests)
    return {
        "corpora": result.corpora,
        "n_tasks": len(result.tasks),
        "n_tasks_by_benchmark": dict(sorted(by_benchmark.items())),
        "n_tests_by_benchmark": dict(sorted(tests_by_benchmark.items())),
        "n_trajectories": len(result.trajectories),
        "n_excluded": len(result.exclusions),
        "excluded_by_reason": dict(sorted(Counter(reason_category(e.reason) for e in result.exclusions).items())),
        "counts": {b: {c: dict(o) for c, o in sorted(conds.items())} for b, conds in sorted(counts.items())},
        "notes": result.notes,
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def population_markdown(pop: dict[str, Any], exclusions: list[Exclusion]) -> str:
    lines = ["# Ingested population", ""]
    lines.append(f"Corpora: {', '.join(pop['corpora']) or '(none)'}")
    lines.append("")
    lines.append(f"- tasks: {pop['n_tasks']} "
                 + "(" + ", ".join(f"{b}: {n} tasks, {pop['n_tests_by_benchmark'].get(b, 0)} tests"
                                   for b, n in pop["n_tasks_by_benchmark"].items()) + ")")
    lines.append(f"- trajectories: {pop['n_trajectories']}")
    lines.append(f"- excluded: {pop['n_excluded']}")
    lines += ["", "## Trajectories by benchmark, condition and outcome", ""]
    lines.append("| benchmark | condition | " + " | ".join(OUTCOMES) + " | total |")
    lines.append("|---|---|" + "---:|" * (len(OUTCOMES) + 1))
    for b, conds in pop["counts"].items():
        for c, outcomes in conds.items():
            row = [str(outcomes[o]) for o in OUTCOMES]
            lines.append(f"| {b} | {c} | " + " | ".join(row) + f" | {sum(outcomes.values())} |")
    lines += ["", "## Exclusions by reason", "", "| reason | n |", "|---|---:|"]
    for reason, n in pop["excluded_by_reason"].items():
        lines.append(f"| {_cell(reason)} | {n} |")
    lines += ["", "## Excluded trials", "", "| path | reason |", "|---|---|"]
    for e in exclusions:
        lines.append(f"| {_cell(e.path)} | {_cell(e.reason)} |")
    if pop["notes"]:
        lines += ["", "## Notes", ""]
        lines += [f"- {_cell(n)}" for n in pop["notes"]]
    return "\n".join(lines) + "\n"


def write_outputs(result: IngestResult, out_dir: str | Path) -> dict[str, Any]:
    """Write tasks/trajectories/exclusions JSONL and population.{json,md}; returns the population."""
    out = Path(out_dir)
    write_jsonl(out / "tasks.jsonl", sorted(result.tasks, key=lambda t: (t.benchmark, t.task_id)))
    write_jsonl(out / "trajectories.jsonl", sorted(result.trajectories, key=lambda t: t.trajectory_id))
    write_jsonl(out / "exclusions.jsonl", sorted(result.exclusions, key=lambda e: (e.path, e.reason)))
    pop = population(result)
    write_json(out / "population.json", pop)
    write_text(out / "population.md", population_markdown(pop, result.exclusions))
    return pop


def corpora_from_params(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The `data` section is one corpus config, or has `corpora`: a list or a mapping name -> config."""
    corpora = data.get("corpora")
    if corpora is None:
        if "tasks_dir" not in data:
            raise KeyError("params.yaml: section 'data' needs 'tasks_dir' (one corpus) or 'corpora'")
        return [{k: v for k, v in data.items() if k != "out_dir"}]
    if isinstance(corpora, dict):
        return [{"name": name, **cfg} for name, cfg in corpora.items()]
    if isinstance(corpora, list):
        return list(corpora)
    raise ValueError("params.yaml: 'data.corpora' must be a list or a mapping")


def run(data: dict[str, Any], root: Path) -> dict[str, Any]:
    """The stage: ingest every configured corpus and write the merged outputs under data.out_dir."""
    result = merge_results([ingest(cfg, root) for cfg in corpora_from_params(data)])
    return write_outputs(result, Path(root) / data.get("out_dir", DEFAULT_OUT_DIR))
