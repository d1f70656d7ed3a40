"""The annotation study in SQLite: what annotators see, who rates what, and their answers.

A study database is created from pipeline outputs (ingest trajectories and tasks, frozen
checklists) and holds only what an annotator may see: the task instruction, the log as the judges
saw it (run metadata redacted, events cut to `judging.max_event_chars`) and, after the overall
ratings, the checklist items. Outcomes, verifier results, trajectory ids' run metadata and scores
are never copied into it, so no page can leak them. Trajectory ids and source paths are kept in
one table the web pages never read, only export does.

Protocol per annotator and task, in the paper's order (§4.3; docs/annotation-app.md): Q1 and Q1b
for every assigned trajectory of the task, then the task's pairs (Q2), all before any checklist is
shown; then the checklist is revealed and the items of a subset of the task's trajectories are
labelled (Q3; by default the paper's five trajectories of the study, `Q3_TRAJECTORIES`, the same
subset for every annotator of the task). Answers are saved
as they are submitted, so a session resumes where it stopped. Export writes the format of
docs/annotations.md; import reads it back.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from gcpc.analysis.annotations import CRITERION_LABELS, PREFERRED, RATING_RANGE, TrajectoryResolver, read_annotations
from gcpc.corpus.models import Task, Trajectory
from gcpc.corpus.render import event_header, truncate_middle
from gcpc.io import canonical_json, read_models, sha256_text
from gcpc.judging.spec import redact_run_metadata
from gcpc.synthesis.models import Checklist

PROTOCOL = Path("prompts/annotation/protocol.yaml")
QUESTION_KEYS = ("Q1", "Q1b", "Q2", "Q3")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (task INTEGER PRIMARY KEY, benchmark TEXT NOT NULL, task_id TEXT NOT NULL,
    instruction TEXT NOT NULL, checklist_hash TEXT, UNIQUE (benchmark, task_id));
CREATE TABLE IF NOT EXISTS items (task INTEGER NOT NULL REFERENCES tasks(task), position INTEGER NOT NULL,
    item_id TEXT NOT NULL, text TEXT NOT NULL, quote TEXT NOT NULL, PRIMARY KEY (task, item_id));
CREATE TABLE IF NOT EXISTS logs (log INTEGER PRIMARY KEY, task INTEGER NOT NULL REFERENCES tasks(task));
CREATE TABLE IF NOT EXISTS events (log INTEGER NOT NULL REFERENCES logs(log), position INTEGER NOT NULL,
    head TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (log, position));
-- the only link from a displayed log to the pipeline's ids; pages never read this table
CREATE TABLE IF NOT EXISTS identities (log INTEGER PRIMARY KEY REFERENCES logs(log), trajectory_id TEXT NOT NULL UNIQUE,
    source_path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (annotator TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS assignments (annotator TEXT NOT NULL REFERENCES annotators(annotator),
    log INTEGER NOT NULL REFERENCES logs(log), position INTEGER NOT NULL, PRIMARY KEY (annotator, log));
CREATE TABLE IF NOT EXISTS pairs (pair INTEGER PRIMARY KEY, task INTEGER NOT NULL REFERENCES tasks(task),
    a INTEGER NOT NULL REFERENCES logs(log), b INTEGER NOT NULL REFERENCES logs(log), UNIQUE (a, b));
CREATE TABLE IF NOT EXISTS pair_assignments (annotator TEXT NOT NULL REFERENCES annotators(annotator),
    pair INTEGER NOT NULL REFERENCES pairs(pair), position INTEGER NOT NULL, PRIMARY KEY (annotator, pair));
-- the trajectories whose checklist items are labelled (Q3): a per-task subset, the same for every annotator
CREATE TABLE IF NOT EXISTS q3_logs (log INTEGER PRIMARY KEY REFERENCES logs(log));
CREATE TABLE IF NOT EXISTS ratings (annotator TEXT NOT NULL, log INTEGER NOT NULL, question TEXT NOT NULL,
    rating REAL NOT NULL, answered_at TEXT NOT NULL, PRIMARY KEY (annotator, log, question));
CREATE TABLE IF NOT EXISTS labels (annotator TEXT NOT NULL, log INTEGER NOT NULL, item_id TEXT NOT NULL,
    label TEXT NOT NULL, checklist_hash TEXT, answered_at TEXT NOT NULL, PRIMARY KEY (annotator, log, item_id));
CREATE TABLE IF NOT EXISTS preferences (annotator TEXT NOT NULL, pair INTEGER NOT NULL REFERENCES pairs(pair),
    preferred TEXT NOT NULL, answered_at TEXT NOT NULL, PRIMARY KEY (annotator, pair));
"""


def load_protocol(path: str | Path = PROTOCOL) -> dict[str, Any]:
    """Question wordings and scale labels (a versioned file under prompts/annotation/)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: annotation protocol not found")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for q in QUESTION_KEYS:
        if not isinstance(data.get(q), dict) or not str(data[q].get("text", "")).strip():
            raise ValueError(f"{path}: field '{q}.text' is required")
    return data


def connect(path: str | Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), check_same_thread=False)
    con.row_factory = sqlite3.Row
    con.execute("PRAGMA foreign_keys = ON")
    return con


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- assignment


@dataclass(frozen=True)
class StudyPlan:
    """Which trajectories each annotator rates, and the within-task pairs they compare."""

    trajectories: dict[str, list[str]]            # task key "benchmark/task_id" -> chosen trajectory ids (sorted)
    assignments: dict[str, list[str]]             # annotator -> trajectory ids in presentation order
    pairs: dict[str, list[tuple[str, str]]]       # task key -> (a, b) pairs, a/b order randomized
    excluded: list[dict[str, str]] = field(default_factory=list)
    q3: dict[str, list[str]] = field(default_factory=dict)  # task key -> trajectory ids whose items get Q3 (sorted)


Q3_TRAJECTORIES = 5
"""Default Q3 subset, the paper's (§4.3): Q3 "was then conducted on five selected trajectories, each
evaluated by two annotators". Five trajectories of the whole study, drawn with a seed round-robin over
its tasks (one per task in a seeded task order, then a second, ...); each is rated by its task's
`overlap` annotators (default 2, the paper's two). The paper does not say how it selected them."""

Q3_PER_TASK: int | None = None
"""Optional cap per task on the Q3 subset before the study-wide draw (None: no cap)."""


def q3_subset(chosen: dict[str, list[str]], *, seed: int, q3_per_task: int | None = Q3_PER_TASK,
              q3_trajectories: int | None = Q3_TRAJECTORIES) -> dict[str, list[str]]:
    """Task key -> the trajectories whose checklist items get Q3 (sorted; [] for a task without any).

    Each task's pool is its chosen trajectories, or a seeded `q3_per_task` of them; then, unless
    `q3_trajectories` is None (every pooled trajectory), that many are drawn from the pools: tasks in a
    seeded order, one seeded trajectory per task and round, so the subset spreads over tasks. Its own
    seeded draws, so it leaves the assignment and pair draws as they were."""
    pool = {k: ids if q3_per_task is None or q3_per_task >= len(ids)
            else sorted(random.Random(f"q3:{seed}:{k}").sample(ids, q3_per_task)) for k, ids in chosen.items()}
    if q3_trajectories is None:
        return pool
    rng = random.Random(f"q3-study:{seed}")
    order = sorted(pool)
    rng.shuffle(order)
    queues = {k: rng.sample(pool[k], len(pool[k])) for k in order}
    picked: dict[str, list[str]] = {k: [] for k in pool}
    left = q3_trajectories
    while left > 0 and any(queues.values()):
        for k in order:
            if left > 0 and queues[k]:
                picked[k].append(queues[k].pop(0))
                left -= 1
    return {k: sorted(v) for k, v in picked.items()}


def plan_study(trajectories: Sequence[Trajectory], annotators: Sequence[str], *, overlap: int = 2, seed: int = 0,
               n_tasks: int | None = None, per_task: int | None = None, max_pairs_per_task: int | None = None,
               tasks: Sequence[str] | None = None, q3_per_task: int | None = Q3_PER_TASK,
               q3_trajectories: int | None = Q3_TRAJECTORIES) -> StudyPlan:
    """Task-level assignment with overlap: each chosen task goes to `overlap` annotators (the least
    loaded, ties broken by a seeded order), who rate all its chosen trajectories, so Q2 pairs exist
    and every rated unit has `overlap` raters for agreement. Q3 is asked on `q3_subset`: by default
    the paper's five trajectories of the study, each rated by its task's `overlap` annotators (shared
    by them, so Q3 units keep `overlap` raters). Deterministic for a given seed.
    """
    if q3_per_task is not None and q3_per_task < 1:
        raise ValueError(f"q3_per_task must be at least 1 (or None for every trajectory), got {q3_per_task}")
    if q3_trajectories is not None and q3_trajectories < 1:
        raise ValueError(f"q3_trajectories must be at least 1 (or None for every trajectory), got {q3_trajectories}")
    annotators = list(annotators)
    if len(set(annotators)) != len(annotators) or not annotators:
        raise ValueError("annotators must be a non-empty list of distinct ids")
    if not 1 <= overlap <= len(annotators):
        raise ValueError(f"overlap must be between 1 and the number of annotators ({len(annotators)}), got {overlap}")
    rng = random.Random(seed)
    by_task: dict[str, list[str]] = {}
    for t in trajectories:
        by_task.setdefault(f"{t.benchmark}/{t.task_id}", []).append(t.trajectory_id)
    excluded: list[dict[str, str]] = []
    keys = sorted(by_task)
    if tasks is not None:
        unknown = sorted(set(tasks) - set(keys) - {k.split("/", 1)[1] for k in keys})
        if unknown:
            raise ValueError(f"tasks not in the corpus: {', '.join(unknown)}")
        wanted = set(tasks)
        for k in keys:
            if k not in wanted and k.split("/", 1)[1] not in wanted:
                excluded.append({"task": k, "reason": "task not selected (--task)"})
        keys = [k for k in keys if k in wanted or k.split("/", 1)[1] in wanted]
    rng.shuffle(keys)
    if n_tasks is not None and n_tasks < len(keys):
        excluded += [{"task": k, "reason": f"not sampled (n_tasks={n_tasks}, seed={seed})"} for k in sorted(keys[n_tasks:])]
        keys = keys[:n_tasks]
    chosen: dict[str, list[str]] = {}
    for k in keys:
        ids = sorted(by_task[k])
        if per_task is not None and per_task < len(ids):
            keep = sorted(rng.sample(ids, per_task))
            excluded += [{"trajectory": i, "reason": f"not sampled (per_task={per_task}, seed={seed})"} for i in ids if i not in keep]
            ids = keep
        chosen[k] = ids
    load = dict.fromkeys(annotators, 0)
    order = annotators[:]
    rng.shuffle(order)
    tie = {a: n for n, a in enumerate(order)}
    assignments: dict[str, list[str]] = {a: [] for a in annotators}
    pairs: dict[str, list[tuple[str, str]]] = {}
    q3 = q3_subset(chosen, seed=seed, q3_per_task=q3_per_task, q3_trajectories=q3_trajectories)
    for k in keys:
        ids = chosen[k]
        raters = sorted(annotators, key=lambda a: (load[a], tie[a]))[:overlap]
        for a in raters:
            mine = ids[:]
            rng.shuffle(mine)
            assignments[a] += mine
            load[a] += len(ids)
        task_pairs = [tuple(p) if rng.random() < 0.5 else (p[1], p[0]) for p in itertools.combinations(ids, 2)]
        if max_pairs_per_task is not None and max_pairs_per_task < len(task_pairs):
            dropped = len(task_pairs) - max_pairs_per_task
            task_pairs = rng.sample(task_pairs, max_pairs_per_task)
            excluded.append({"task": k, "reason": f"{dropped} pairs not sampled (max_pairs_per_task={max_pairs_per_task})"})
        rng.shuffle(task_pairs)
        pairs[k] = task_pairs  # type: ignore[assignment]
    return StudyPlan(trajectories=chosen, assignments=assignments, pairs=pairs, excluded=excluded, q3=q3)


# --------------------------------------------------------------------------- creating a study


def create_study(db_path: str | Path, trajectories: Sequence[Trajectory], tasks: dict[tuple[str, str], Task],
                 checklists: dict[tuple[str, str], Checklist], plan: StudyPlan, *, max_event_chars: int,
                 protocol: dict[str, Any], description: str = "", illustrative: bool = False,
                 extra_meta: dict[str, Any] | None = None) -> None:
    """Write a new study database. Refuses to overwrite one (answers are irreplaceable)."""
    db_path = Path(db_path)
    if db_path.exists():
        raise FileExistsError(f"{db_path}: a study database already exists (it holds annotations; move it away first)")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    by_id = {t.trajectory_id: t for t in trajectories}
    con = connect(db_path)
    try:
        with con:
            con.executescript(SCHEMA)
            meta = {"description": description, "illustrative": illustrative, "max_event_chars": max_event_chars,
                    "protocol": protocol, "protocol_hash": sha256_text(canonical_json(protocol)),
                    "excluded": plan.excluded, **(extra_meta or {})}
            con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items()])
            task_row: dict[str, int] = {}
            log_of: dict[str, int] = {}
            # log numbers follow a seeded shuffle, so they say nothing about ids or conditions
            all_ids = sorted(i for ids in plan.trajectories.values() for i in ids)
            random.Random(f"logs:{len(all_ids)}:{plan_hash(plan)}").shuffle(all_ids)
            for n, tid in enumerate(all_ids, 1):
                log_of[tid] = n
            for key in sorted(plan.trajectories):
                first = by_id[plan.trajectories[key][0]]
                tkey = (first.benchmark, first.task_id)
                task = tasks.get(tkey)
                if task is None:
                    raise ValueError(f"tasks.jsonl: task {key} of trajectory {first.trajectory_id} is missing")
                cl = checklists.get(tkey)
                frozen = cl is not None and cl.status == "frozen"
                cur = con.execute("INSERT INTO tasks (benchmark, task_id, instruction, checklist_hash) VALUES (?, ?, ?, ?)",
                                  (first.benchmark, first.task_id, task.instruction, cl.checklist_hash if frozen else None))
                task_row[key] = int(cur.lastrowid)
                if frozen:
                    con.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)",
                                    [(task_row[key], n, i.item_id, i.text, i.quote) for n, i in enumerate(cl.items)])
            for tid in sorted(log_of, key=log_of.get):
                traj = by_id[tid]
                key = f"{traj.benchmark}/{traj.task_id}"
                con.execute("INSERT INTO logs VALUES (?, ?)", (log_of[tid], task_row[key]))
                con.execute("INSERT INTO identities VALUES (?, ?, ?)", (log_of[tid], tid, traj.source_path))
                shown = redact_run_metadata(traj)
                con.executemany("INSERT INTO events VALUES (?, ?, ?, ?)",
                                [(log_of[tid], n, event_header(e), truncate_middle(e.text, max_event_chars))
                                 for n, e in enumerate(shown.events)])
            con.executemany("INSERT INTO q3_logs VALUES (?)", [(log_of[t],) for key in sorted(plan.q3) for t in plan.q3[key]])
            for a, ids in plan.assignments.items():
                con.execute("INSERT INTO annotators VALUES (?)", (a,))
                con.executemany("INSERT INTO assignments VALUES (?, ?, ?)", [(a, log_of[t], n) for n, t in enumerate(ids)])
            for key in sorted(plan.pairs):
                for x, y in plan.pairs[key]:
                    con.execute("INSERT INTO pairs (task, a, b) VALUES (?, ?, ?)", (task_row[key], log_of[x], log_of[y]))
            pos: dict[str, int] = {}
            for a, ids in plan.assignments.items():
                mine = {log_of[t] for t in ids}
                for row in con.execute("SELECT pair, a, b FROM pairs ORDER BY pair").fetchall():
                    if row["a"] in mine and row["b"] in mine:
                        con.execute("INSERT INTO pair_assignments VALUES (?, ?, ?)", (a, row["pair"], pos.setdefault(a, 0)))
                        pos[a] += 1
    except BaseException:
        con.close()
        db_path.unlink(missing_ok=True)
        raise
    con.close()


def plan_hash(plan: StudyPlan) -> str:
    return sha256_text(canonical_json({"t": plan.trajectories, "p": {k: [list(x) for x in v] for k, v in plan.pairs.items()}}))


def study_from_outputs(db_path: str | Path, params: dict[str, Any], annotators: Sequence[str], *,
                       ingest_dir: Path = Path("data/processed/ingest"), synth_dir: Path = Path("data/processed/synthesize"),
                       protocol_path: str | Path = PROTOCOL, description: str = "", illustrative: bool = False,
                       **plan_options: Any) -> StudyPlan:
    """Create a study from the ingest and synthesis outputs (never from judgments or metrics)."""
    if Path(db_path).exists():
        raise FileExistsError(f"{db_path}: a study database already exists (it holds annotations; move it away first)")
    for p in (ingest_dir / "trajectories.jsonl", ingest_dir / "tasks.jsonl", synth_dir / "checklists.jsonl"):
        if not p.exists():
            raise FileNotFoundError(f"{p}: not found (run `dvc repro synthesize` first)")
    trajectories = read_models(ingest_dir / "trajectories.jsonl", Trajectory)
    tasks = {(t.benchmark, t.task_id): t for t in read_models(ingest_dir / "tasks.jsonl", Task)}
    checklists = {(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)}
    plan = plan_study(trajectories, annotators, **plan_options)
    max_chars = int((params.get("judging") or {}).get("max_event_chars", 4000))
    create_study(db_path, trajectories, tasks, checklists, plan, max_event_chars=max_chars, protocol=load_protocol(protocol_path),
                 description=description, illustrative=illustrative,
                 extra_meta={"plan": {"q3_per_task": Q3_PER_TASK, "q3_trajectories": Q3_TRAJECTORIES} | plan_options, "data": (params.get("data") or {}).get("name")})
    return plan


# --------------------------------------------------------------------------- reading and answering


class ProtocolError(Exception):
    """A step that the protocol does not allow yet (or any more)."""


class Study:
    """Queries and answers over one study database (what the web app calls)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: study database not found (create it with `python -m gcpc.annotate init`)")
        self.con = connect(self.path)
        # a study created before the Q3 subset existed asks Q3 on every trajectory
        self._q3_subset = self.con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'q3_logs'").fetchone() is not None

    def close(self) -> None:
        self.con.close()

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row["value"]) if row else default

    @property
    def protocol(self) -> dict[str, Any]:
        return self.meta("protocol")

    def annotators(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT annotator FROM annotators ORDER BY annotator")]

    def has_annotator(self, annotator: str) -> bool:
        return self.con.execute("SELECT 1 FROM annotators WHERE annotator = ?", (annotator,)).fetchone() is not None

    # ---- display data (never identities)
    def task(self, task: int) -> sqlite3.Row:
        return self.con.execute("SELECT task, task_id, instruction, checklist_hash FROM tasks WHERE task = ?", (task,)).fetchone()

    def task_of(self, log: int) -> int:
        return int(self.con.execute("SELECT task FROM logs WHERE log = ?", (log,)).fetchone()[0])

    def events(self, log: int) -> list[sqlite3.Row]:
        return self.con.execute("SELECT position, head, text FROM events WHERE log = ? ORDER BY position", (log,)).fetchall()

    def items(self, task: int) -> list[sqlite3.Row]:
        return self.con.execute("SELECT item_id, text, quote FROM items WHERE task = ? ORDER BY position", (task,)).fetchall()

    def pair(self, pair: int) -> sqlite3.Row:
        return self.con.execute("SELECT pair, task, a, b FROM pairs WHERE pair = ?", (pair,)).fetchone()

    # ---- protocol state
    def _assigned(self, annotator: str) -> list[sqlite3.Row]:
        return self.con.execute(
            "SELECT s.log, l.task, s.position FROM assignments s JOIN logs l ON l.log = s.log WHERE s.annotator = ? "
            "ORDER BY s.position", (annotator,)).fetchall()

    def is_assigned(self, annotator: str, log: int) -> bool:
        return self.con.execute("SELECT 1 FROM assignments WHERE annotator = ? AND log = ?", (annotator, log)).fetchone() is not None

    def rated(self, annotator: str, log: int) -> bool:
        n = self.con.execute("SELECT COUNT(*) FROM ratings WHERE annotator = ? AND log = ?", (annotator, log)).fetchone()[0]
        return n == 2

    def labelled(self, annotator: str, log: int) -> bool:
        want = self.con.execute("SELECT COUNT(*) FROM items i JOIN logs l ON l.task = i.task WHERE l.log = ?", (log,)).fetchone()[0]
        have = self.con.execute("SELECT COUNT(*) FROM labels WHERE annotator = ? AND log = ?", (annotator, log)).fetchone()[0]
        return have >= want

    def in_q3(self, log: int) -> bool:
        """Is this trajectory in the Q3 subset (its checklist items are labelled)?"""
        return not self._q3_subset or self.con.execute("SELECT 1 FROM q3_logs WHERE log = ?", (log,)).fetchone() is not None

    def checklist_revealed(self, annotator: str, task: int) -> bool:
        """The task's checklist may be shown once every assigned trajectory of the task has Q1 and Q1b
        and every assigned pair of the task has Q2 (the paper asks Q1, Q1b and Q2 before any checklist)."""
        return (all(self.rated(annotator, r["log"]) for r in self._assigned(annotator) if r["task"] == task)
                and all(self.compared(annotator, p["pair"]) for p in self._pairs(annotator) if p["task"] == task))

    def checklist_shown(self, annotator: str, task: int) -> bool:
        """Has the annotator labelled any item of this task (so has seen its checklist)?"""
        return self.con.execute("SELECT 1 FROM labels WHERE annotator = ? AND log IN (SELECT log FROM logs WHERE task = ?)",
                                (annotator, task)).fetchone() is not None

    def _pairs(self, annotator: str) -> list[sqlite3.Row]:
        return self.con.execute(
            "SELECT p.pair, p.task, p.a, p.b FROM pair_assignments s JOIN pairs p ON p.pair = s.pair WHERE s.annotator = ? "
            "ORDER BY s.position", (annotator,)).fetchall()

    def is_pair_assigned(self, annotator: str, pair: int) -> bool:
        return self.con.execute("SELECT 1 FROM pair_assignments WHERE annotator = ? AND pair = ?", (annotator, pair)).fetchone() is not None

    def compared(self, annotator: str, pair: int) -> bool:
        return self.con.execute("SELECT 1 FROM preferences WHERE annotator = ? AND pair = ?", (annotator, pair)).fetchone() is not None

    def next_step(self, annotator: str) -> tuple[str, int] | None:
        """('rate', log) | ('pair', pair) | ('items', log) | None when the annotator is done.

        Tasks come in the order of the annotator's queue; within a task: every Q1/Q1b, then Q2, then Q3
        on the task's Q3 subset.
        """
        assigned = self._assigned(annotator)
        task_order: list[int] = []
        for r in assigned:
            if r["task"] not in task_order:
                task_order.append(r["task"])
        pairs = self._pairs(annotator)
        for task in task_order:
            logs = [r["log"] for r in assigned if r["task"] == task]
            for log in logs:
                if not self.rated(annotator, log):
                    return "rate", log
            for p in pairs:
                if p["task"] == task and not self.compared(annotator, p["pair"]):
                    return "pair", p["pair"]
            for log in logs:
                if self.in_q3(log) and not self.labelled(annotator, log):
                    return "items", log
        return None

    def progress(self, annotator: str) -> dict[str, int]:
        assigned = self._assigned(annotator)
        pairs = self._pairs(annotator)
        q3 = [r["log"] for r in assigned if self.in_q3(r["log"])]
        return {"trajectories": len(assigned), "rated": sum(self.rated(annotator, r["log"]) for r in assigned),
                "q3": len(q3),
                "labelled": sum(self.labelled(annotator, log) for log in q3 if self.checklist_revealed(annotator, self.task_of(log))),
                "pairs": len(pairs), "compared": sum(self.compared(annotator, p["pair"]) for p in pairs)}

    def position(self, annotator: str, log: int) -> tuple[int, int]:
        assigned = [r["log"] for r in self._assigned(annotator)]
        return assigned.index(log) + 1, len(assigned)

    # ---- answers
    def missing_ratings(self, annotator: str, log: int) -> list[str]:
        """Q1 / Q1b still to ask (an import may have brought one of them)."""
        have = {r[0] for r in self.con.execute("SELECT question FROM ratings WHERE annotator = ? AND log = ?", (annotator, log))}
        return [q for q in ("Q1", "Q1b") if q not in have]

    def missing_items(self, annotator: str, log: int) -> list[sqlite3.Row]:
        """Checklist items of this trajectory's task not yet labelled by the annotator, in checklist order."""
        have = {r[0] for r in self.con.execute("SELECT item_id FROM labels WHERE annotator = ? AND log = ?", (annotator, log))}
        return [i for i in self.items(self.task_of(log)) if i["item_id"] not in have]

    def save_ratings(self, annotator: str, log: int, ratings: dict[str, float]) -> None:
        if not self.is_assigned(annotator, log):
            raise ProtocolError("this trajectory is not assigned to you")
        asked = self.missing_ratings(annotator, log)
        if not asked:
            raise ProtocolError("overall ratings for this trajectory were already submitted")
        if self.checklist_shown(annotator, self.task_of(log)):
            raise ProtocolError("the checklist of this task was already shown to you")
        for q in asked:
            v = ratings.get(q)
            if v is None or not (RATING_RANGE[0] <= float(v) <= RATING_RANGE[1]):
                raise ProtocolError(f"{q} needs a rating from 0 to 10")
        with self.con:
            self.con.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)",
                                 [(annotator, log, q, float(ratings[q]), _now()) for q in asked])

    def save_labels(self, annotator: str, log: int, labels: dict[str, str]) -> None:
        if not self.is_assigned(annotator, log):
            raise ProtocolError("this trajectory is not assigned to you")
        task = self.task_of(log)
        if not self.in_q3(log):
            raise ProtocolError("this trajectory is not in the Q3 subset: its checklist items are not asked")
        if not self.checklist_revealed(annotator, task):
            raise ProtocolError("rate every trajectory of this task (Q1, Q1b) and compare its pairs (Q2) before the checklist")
        items = [r["item_id"] for r in self.missing_items(annotator, log)]
        if self.labelled(annotator, log):
            raise ProtocolError("item labels for this trajectory were already submitted")
        missing = [i for i in items if labels.get(i) not in CRITERION_LABELS]
        if missing:
            raise ProtocolError(f"label every item (missing: {', '.join(missing)})")
        h = self.task(task)["checklist_hash"]
        with self.con:
            self.con.executemany("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?)",
                                 [(annotator, log, i, labels[i], h, _now()) for i in items])

    def save_preference(self, annotator: str, pair: int, preferred: str) -> None:
        if not self.is_pair_assigned(annotator, pair):
            raise ProtocolError("this pair is not assigned to you")
        p = self.pair(pair)
        if not (self.rated(annotator, p["a"]) and self.rated(annotator, p["b"])):
            raise ProtocolError("rate both trajectories (Q1, Q1b) before comparing them")
        if self.checklist_shown(annotator, p["task"]):
            raise ProtocolError("the checklist of this task was already shown to you: Q2 comes before it")
        if preferred not in PREFERRED:
            raise ProtocolError("choose a, b or tie")
        if self.compared(annotator, pair):
            raise ProtocolError("this comparison was already submitted")
        with self.con:
            self.con.execute("INSERT INTO preferences VALUES (?, ?, ?, ?)", (annotator, pair, preferred, _now()))


# --------------------------------------------------------------------------- export / import


def export_records(study: Study) -> list[dict[str, Any]]:
    """The study's answers in the format of docs/annotations.md (meta record first), in a fixed order."""
    con = study.con
    ident = {r["log"]: r["trajectory_id"] for r in con.execute("SELECT log, trajectory_id FROM identities")}
    task_id = {r["task"]: r["task_id"] for r in con.execute("SELECT task, task_id FROM tasks")}
    protocol = study.protocol
    meta = {"illustrative": bool(study.meta("illustrative", False)), "description": study.meta("description", ""),
            "tool": "gcpc.annotate", "annotators": study.annotators(), "protocol_hash": study.meta("protocol_hash"),
            "questions": {q: protocol[q]["text"] for q in QUESTION_KEYS}}
    recs: list[dict[str, Any]] = []
    for r in con.execute("SELECT annotator, log, question, rating FROM ratings"):
        rating = r["rating"]
        recs.append({"question": r["question"], "annotator": r["annotator"], "trajectory": ident[r["log"]],
                     "rating": int(rating) if float(rating).is_integer() else rating})
    for r in con.execute("SELECT s.annotator, s.preferred, p.task, p.a, p.b FROM preferences s JOIN pairs p ON p.pair = s.pair"):
        recs.append({"question": "Q2", "annotator": r["annotator"], "task_id": task_id[r["task"]], "a": ident[r["a"]],
                     "b": ident[r["b"]], "preferred": r["preferred"]})
    for r in con.execute("SELECT annotator, log, item_id, label, checklist_hash FROM labels"):
        rec = {"question": "Q3", "annotator": r["annotator"], "trajectory": ident[r["log"]], "item_id": r["item_id"],
               "label": r["label"]}
        if r["checklist_hash"]:
            rec["checklist_hash"] = r["checklist_hash"]
        recs.append(rec)
    order = {q: n for n, q in enumerate(QUESTION_KEYS)}
    recs.sort(key=lambda x: (order[x["question"]], x["annotator"], x.get("trajectory", ""), x.get("a", ""), x.get("b", ""),
                             x.get("item_id", "")))
    return [{"meta": meta}, *recs]


def export_jsonl(study: Study, out: str | Path) -> int:
    recs = export_records(study)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return len(recs) - 1


@dataclass
class ImportReport:
    added: int = 0
    unchanged: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)  # records not imported, with their reason


def import_annotations(study: Study, path: str | Path) -> ImportReport:
    """Read a docs/annotations.md file into the study. Records for trajectories outside the study are
    skipped and listed; a record that contradicts a stored answer is an error naming file and line."""
    ann = read_annotations(path)
    con = study.con
    rows = con.execute("SELECT log, trajectory_id, source_path FROM identities").fetchall()
    log_of = {r["trajectory_id"]: r["log"] for r in rows}
    resolver = TrajectoryResolver(list(log_of), {r["source_path"]: r["trajectory_id"] for r in rows})
    rep = ImportReport()

    def resolve(ref: str, line: int, q: str) -> int | None:
        tid, why = resolver.resolve(str(ref))
        if tid is None:
            rep.skipped.append({"line": line, "question": q, "reason": why})
            return None
        return log_of[tid]

    def ensure(annotator: str, log: int) -> None:
        con.execute("INSERT OR IGNORE INTO annotators VALUES (?)", (annotator,))
        if not study.is_assigned(annotator, log):
            n = con.execute("SELECT COUNT(*) FROM assignments WHERE annotator = ?", (annotator,)).fetchone()[0]
            con.execute("INSERT INTO assignments VALUES (?, ?, ?)", (annotator, log, n))

    def conflict(line: int, what: str, old: Any, new: Any) -> ValueError:
        return ValueError(f"{path}:{line}: {what} conflicts with the stored answer ({old!r} in the study, {new!r} in the file)")

    with con:
        for _, r in ann.progress.iterrows():
            log = resolve(r["trajectory"], int(r["line"]), r["question"])
            if log is None:
                continue
            ensure(r["annotator"], log)
            old = con.execute("SELECT rating FROM ratings WHERE annotator = ? AND log = ? AND question = ?",
                              (r["annotator"], log, r["question"])).fetchone()
            if old is not None:
                if float(old[0]) != float(r["rating"]):
                    raise conflict(int(r["line"]), f"field 'rating' ({r['question']})", old[0], r["rating"])
                rep.unchanged += 1
                continue
            con.execute("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)", (r["annotator"], log, r["question"], float(r["rating"]), "imported"))
            rep.added += 1
        for _, r in ann.criteria.iterrows():
            log = resolve(r["trajectory"], int(r["line"]), "Q3")
            if log is None:
                continue
            task = study.task_of(log)
            if r["item_id"] not in {i["item_id"] for i in study.items(task)}:
                rep.skipped.append({"line": int(r["line"]), "question": "Q3",
                                    "reason": f"item '{r['item_id']}' is not in the study's checklist of this task"})
                continue
            ensure(r["annotator"], log)
            old = con.execute("SELECT label FROM labels WHERE annotator = ? AND log = ? AND item_id = ?",
                              (r["annotator"], log, r["item_id"])).fetchone()
            if old is not None:
                if old[0] != r["label"]:
                    raise conflict(int(r["line"]), "field 'label'", old[0], r["label"])
                rep.unchanged += 1
                continue
            h = r["checklist_hash"] if isinstance(r["checklist_hash"], str) else None
            con.execute("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?)", (r["annotator"], log, r["item_id"], r["label"], h, "imported"))
            rep.added += 1
        for _, r in ann.preferences.iterrows():
            line = int(r["line"])
            a, b = resolve(r["a"], line, "Q2"), None
            if a is None:
                continue
            b = resolve(r["b"], line, "Q2")
            if b is None:
                continue
            task = study.task_of(a)
            if study.task_of(b) != task or study.task(task)["task_id"] != r["task_id"]:
                rep.skipped.append({"line": line, "question": "Q2", "reason": f"trajectories are not both of task '{r['task_id']}'"})
                continue
            pair = con.execute("SELECT pair, a FROM pairs WHERE (a = ? AND b = ?) OR (a = ? AND b = ?)", (a, b, b, a)).fetchone()
            if pair is None:
                pair_id = int(con.execute("INSERT INTO pairs (task, a, b) VALUES (?, ?, ?)", (task, a, b)).lastrowid)
                flipped = False
            else:
                pair_id, flipped = int(pair["pair"]), pair["a"] != a
            preferred = {"a": "b", "b": "a", "tie": "tie"}[r["preferred"]] if flipped else r["preferred"]
            con.execute("INSERT OR IGNORE INTO annotators VALUES (?)", (r["annotator"],))
            if not study.is_pair_assigned(r["annotator"], pair_id):
                n = con.execute("SELECT COUNT(*) FROM pair_assignments WHERE annotator = ?", (r["annotator"],)).fetchone()[0]
                con.execute("INSERT INTO pair_assignments VALUES (?, ?, ?)", (r["annotator"], pair_id, n))
            old = con.execute("SELECT preferred FROM preferences WHERE annotator = ? AND pair = ?", (r["annotator"], pair_id)).fetchone()
            if old is not None:
                if old[0] != preferred:
                    raise conflict(line, "field 'preferred'", old[0], preferred)
                rep.unchanged += 1
                continue
            con.execute("INSERT INTO preferences VALUES (?, ?, ?, ?)", (r["annotator"], pair_id, preferred, "imported"))
            rep.added += 1
    return rep


def identities_text(study: Study) -> Iterable[str]:
    """Every string the study stores for display (for leak checks): instruction, events, items."""
    con = study.con
    for r in con.execute("SELECT task_id, instruction FROM tasks"):
        yield r["task_id"]
        yield r["instruction"]
    for r in con.execute("SELECT head, text FROM events"):
        yield r["head"]
        yield r["text"]
    for r in con.execute("SELECT item_id, text, quote FROM items"):
        yield from (r["item_id"], r["text"], r["quote"])
