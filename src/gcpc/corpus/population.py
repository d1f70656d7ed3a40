"""Study-population filters as data-config keys, so `dvc exp run -S data=<name>` reproduces any study
population (e.g. Terminal-Bench 1 runs of one harness), not only a hand-run script.

    population:                # conf/data/<name>.yaml; every key optional
      harness: mini-swe-agent  # a name or a list
      model: null              # a name or a list
      min_agent_steps: 1       # at least this many tool calls in the log
      outcomes: [PASS, FAIL]   # outcome classes kept (PASS, FAIL, other)
      tasks: [task-a, task-b]  # task ids kept (other tasks, and their trajectories, are dropped)
      trajectories: [...]      # trajectory ids kept (a named subset, e.g. conf/data/smoke.yaml)
      exclude_exceptions: false  # named extension, off by default: drop PASS / FAIL trials that recorded an
                                 # exception (Harbor exception_info, e.g. an agent timeout scored 0.0); the
                                 # paper's population keeps them (every trajectory with a binary reward)

Applied at ingest, after reading and de-duplication: every trajectory (and, for `tasks`, every task)
dropped is written to ingest/exclusions.jsonl with the filter that dropped it, so nothing disappears
silently. A `tasks` or `trajectories` entry that names nothing ingested is an error, not an empty set.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gcpc.corpus.models import EventKind, Exclusion, Trajectory

KEYS = ("harness", "model", "min_agent_steps", "outcomes", "tasks", "trajectories", "exclude_exceptions")
OUTCOME_CLASSES = ("PASS", "FAIL", "other")


def agent_steps(traj: Trajectory) -> int:
    return sum(e.kind == EventKind.TOOL_CALL for e in traj.events)


def _names(value: Any) -> set[str] | None:
    if value is None:
        return None
    return {str(v) for v in (value if isinstance(value, list | tuple) else [value])}


def check(cfg: dict[str, Any] | None, where: str = "data.population") -> dict[str, Any]:
    cfg = dict(cfg or {})
    unknown = sorted(set(cfg) - set(KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
    outcomes = _names(cfg.get("outcomes"))
    if outcomes is not None and outcomes - set(OUTCOME_CLASSES):
        raise ValueError(f"{where}.outcomes: {', '.join(sorted(outcomes - set(OUTCOME_CLASSES)))} is not an outcome class "
                         f"({', '.join(OUTCOME_CLASSES)})")
    for key in ("tasks", "trajectories"):
        value = cfg.get(key)
        if value is not None and (not isinstance(value, list | tuple) or not value
                                  or not all(isinstance(v, str) and v for v in value)):
            raise ValueError(f"{where}.{key}: must be a non-empty list of ids, got {value!r}")
    if cfg.get("exclude_exceptions") is not None and not isinstance(cfg["exclude_exceptions"], bool):
        raise ValueError(f"{where}.exclude_exceptions: must be true or false, got {cfg['exclude_exceptions']!r}")
    steps = cfg.get("min_agent_steps") or 0
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"{where}.min_agent_steps: must be a non-negative integer, got {steps!r}")
    return cfg


def reason(t: Trajectory, cfg: dict[str, Any]) -> str | None:
    """Why `t` is outside the population, or None when it is in."""
    harness, model, outcomes = _names(cfg.get("harness")), _names(cfg.get("model")), _names(cfg.get("outcomes"))
    steps = int(cfg.get("min_agent_steps") or 0)
    tasks, ids = _names(cfg.get("tasks")), _names(cfg.get("trajectories"))
    if tasks is not None and t.task_id not in tasks:
        return f"population filter: task {t.task_id!r} is not in data.population.tasks"
    if ids is not None and t.trajectory_id not in ids:
        return "population filter: trajectory not in data.population.trajectories"
    if harness is not None and t.harness not in harness:
        return f"population filter: harness {t.harness!r} is not {' / '.join(sorted(harness))}"
    if model is not None and t.model not in model:
        return f"population filter: model {t.model!r} is not {' / '.join(sorted(model))}"
    if outcomes is not None:
        cls = t.outcome.status if t.outcome.status in ("PASS", "FAIL") else "other"
        if cls not in outcomes:
            return f"population filter: outcome {cls} is not {' / '.join(sorted(outcomes))}"
    if cfg.get("exclude_exceptions") and t.outcome.status in ("PASS", "FAIL") and t.outcome.reason:
        return f"population filter: exclude_exceptions (official {t.outcome.status} with {t.outcome.reason})"
    if agent_steps(t) < steps:
        return f"population filter: {agent_steps(t)} agent steps (< {steps})"
    return None


def _unknown(result: Any, cfg: dict[str, Any]) -> str:
    """Ids in `tasks` / `trajectories` that name nothing ingested ('' when every id is found)."""
    problems = []
    for key, have in (("tasks", {t.task_id for t in result.tasks} | {t.task_id for t in result.trajectories}),
                      ("trajectories", {t.trajectory_id for t in result.trajectories})):
        unknown = sorted((_names(cfg.get(key)) or set()) - have)
        if unknown:
            problems.append(f"{key} names ids that were not ingested: {', '.join(unknown)}")
    return "; ".join(problems)


def apply(result: Any, cfg: dict[str, Any] | None) -> Any:
    """An IngestResult restricted to the population; the others become exclusions with their reason."""
    cfg = check(cfg)
    if not cfg:
        return result
    missing = _unknown(result, cfg)
    if missing:
        raise ValueError(f"data.population: {missing}")
    kept, dropped = [], []
    tasks = _names(cfg.get("tasks"))
    kept_tasks = result.tasks if tasks is None else [t for t in result.tasks if t.task_id in tasks]
    dropped += [Exclusion(path=t.source_path, reason=f"population filter: task {t.task_id!r} is not in data.population.tasks",
                          benchmark=t.benchmark, task_id=t.task_id) for t in result.tasks if tasks is not None and t.task_id not in tasks]
    for t in result.trajectories:
        why = reason(t, cfg)
        if why is None:
            kept.append(t)
        else:
            dropped.append(Exclusion(path=t.source_path, reason=why, benchmark=t.benchmark, source=t.source, task_id=t.task_id))
    return dataclasses.replace(result, tasks=kept_tasks, trajectories=kept,
                               exclusions=sorted([*result.exclusions, *dropped], key=lambda e: (e.path, e.reason)))
