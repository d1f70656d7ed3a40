"""GCPC as an Inspect AI scorer: `inspect score LOG --scorer gcpc/gcpc -S checklists=...` or `Task(scorer=gcpc(...))`.

The scorer reads frozen checklists written by gcpc's synthesis stage (`checklists.jsonl`); it never
synthesizes (the paper freezes checklists before any trajectory is read). For each sample it builds
the same judge request as the pipeline's judge stage (`gcpc.judging.checklist_arm.build_request` over
the events `gcpc.corpus.inspect_log.events_from_messages` reads from the sample's messages, run
metadata redacted, the arm's view and prompt from `params.yaml`), asks the judge through Inspect's
own model API (`get_model(role=...)`: Inspect's providers, caching, batch mode and model roles
apply; `gcpc/heuristic` is the offline heuristic), validates the reply with the pipeline's client
validation (request JSON schema, one verdict per item; `max_attempts` tries), gates it with the arm's
evidence rules (`label_items`) and scores it with `gcpc.scoring.metrics.score_trajectory`. So a log
scored here and the same log run through `dvc repro` give the same numbers for the same judge answers.

Score value (a dict): `gcpc_plain` (log only), `gcpc_outcome` (with the official outcome, when the
sample has an official PASS/FAIL score in `state.scores`: a Task's earlier scorer, or `inspect score
--action append`), `perfect` (1/0 after the official-outcome step, else for the plain labels) and
`evidence_coverage`. A sample that cannot be scored (zero evidence: every item Abstain, paper §4; no frozen
checklist; a log too long; no valid judge reply) is unscored in Inspect's own convention, `Score.unscored(...)`:
its value is NaN, the sentinel Inspect's metrics and reducers leave out and its results count as
`unscored_samples`, never 0; the reason is the score's `reason` and `explanation`. A value that does not exist
for a scored sample (`gcpc_outcome` without an official outcome) is NaN too, so that key's metric leaves the
sample out and counts it unscored for that key. Every item's label, reason, cited evidence and the judge's raw
replies are in `metadata`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai.model import (ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig,
                              get_model)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from gcpc.corpus.inspect_log import GCPC_SCORER_NAMES, events_from_messages, outcome_of
from gcpc.corpus.models import Outcome, Trajectory
from gcpc.io import read_models
from gcpc.judging.checklist_arm import build_request, check_one_verdict_per_item, checklist_items, label_items
from gcpc.judging.spec import ArmSpec, LogTooLong, redact_run_metadata
from gcpc.llm.base import LLMRequest, Message
from gcpc.llm.client import parse_reply
from gcpc.llm.inspect_model import REQUEST_KEY, expect
from gcpc.llm.schemas import ChecklistJudgment
from gcpc.params import load_params
from gcpc.scoring.metrics import score_trajectory
from gcpc.synthesis.models import Checklist

VALUE_KEYS = ("gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage")
HARNESS = "inspect"
"""The harness recorded for Inspect samples (gcpc.corpus.inspect_log's default): its name is redacted from the log."""


@metric
def scored_mean() -> Metric:
    """Mean over the samples that have this value. Inspect already leaves unscored samples (NaN) out; a value that
    is None or NaN is left out here too, never averaged as 0."""

    def compute(scores: list[SampleScore]) -> float:
        values = [float(s.score.value) for s in scores if _present(s.score.value)]  # type: ignore[arg-type]
        return sum(values) / len(values) if values else math.nan

    return compute


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@lru_cache(maxsize=8)
def load_checklists(path: str) -> dict[tuple[str, str], Checklist]:
    """checklists.jsonl of a synthesis stage, by (benchmark, task id)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"gcpc scorer: checklists file {p} not found (the synthesize stage's "
                                "data/processed/synthesize/checklists.jsonl)")
    return {(c.benchmark, c.task_id): c for c in read_models(p, Checklist)}


def _resolve(base: Path, value: str | None) -> str | None:
    if not value:
        return value
    p = Path(value)
    return str(p if p.is_absolute() else base / p)


@lru_cache(maxsize=8)
def load_settings(params_path: str, arm_name: str) -> tuple[ArmSpec, dict[str, Any]]:
    """The arm (view, prompt, evidence gate) and `scoring` settings of a params.yaml; its relative paths resolve
    against the params file's folder (the repository root)."""
    params = load_params(params_path)
    base = Path(params_path).resolve().parent
    arms = params.get("arm") or {}
    if arm_name not in arms:
        raise KeyError(f"gcpc scorer: arm {arm_name!r} is not in {params_path} (arms: {', '.join(sorted(arms))})")
    cfg = dict(arms[arm_name])
    if cfg.get("kind") != "checklist":
        raise ValueError(f"gcpc scorer: arm {arm_name!r} is kind {cfg.get('kind')!r}; the scorer judges checklist arms")
    cfg["template"] = _resolve(base, cfg.get("template"))
    judging = dict(params.get("judging") or {})
    judging["layout"] = _resolve(base, judging.get("layout") or "prompts/judging/layout")
    return ArmSpec.from_params(arm_name, cfg, judging), dict(params.get("scoring") or {})


def to_inspect(messages: Sequence[Message], key: str) -> list[ChatMessage]:
    """gcpc prompt messages as Inspect chat messages; the last one carries the request key (gcpc/heuristic reads it)."""
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    out: list[ChatMessage] = []
    for n, m in enumerate(messages):
        meta = {REQUEST_KEY: key} if n == len(messages) - 1 else None
        out.append(kinds[m.role](content=m.content, metadata=meta))
    return out


def unscored(reason: str, **metadata: Any) -> Score:
    """Inspect's unscored sample (NaN value: left out of every metric and reducer, counted in `unscored_samples`)."""
    return Score.unscored(reason=reason, answer="unscored", explanation=reason,
                          metadata={"status": "unscored", "reason": reason, **metadata})


def _number(value: float | None) -> float:
    """A score value: the number, or NaN where it does not exist (Inspect leaves NaN out of that key's metric)."""
    return math.nan if value is None else float(value)


def trajectory_of(state: TaskState, benchmark: str, outcome: Outcome) -> Trajectory:
    """The sample as the pipeline's Inspect reader makes it (same events, model and harness, so the same redaction)."""
    label = f"sample {state.sample_id}/epoch{state.epoch}"
    return Trajectory(trajectory_id=f"{benchmark}/{state.sample_id}/{state.epoch}", benchmark=benchmark,
                      task_id=str(state.sample_id), harness=HARNESS, model=str(state.model), condition="unknown",
                      source="inspect", trial=f"{state.sample_id}/epoch{state.epoch}", outcome=outcome,
                      events=events_from_messages(state.messages, label), source_path=label)


async def ask_judge(request: LLMRequest, role: str, attempts: int, cache: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The judge's validated reply (or None after `attempts` invalid ones) and every reply with its error."""
    model = get_model(role=role)
    key = expect(request)
    messages = to_inspect(request.messages, key)
    replies: list[dict[str, Any]] = []
    for attempt in range(1, attempts + 1):
        output = await model.generate(messages, config=GenerateConfig(cache=cache or None))
        text = output.completion
        try:
            parsed = parse_reply(text, ChecklistJudgment, request.json_schema)
            check_one_verdict_per_item(parsed, request)
        except ValueError as exc:
            replies.append({"attempt": attempt, "model": str(model), "text": text, "error": str(exc)})
            continue
        replies.append({"attempt": attempt, "model": str(model), "text": text, "error": None})
        return parsed.model_dump(mode="json"), replies
    return None, replies


@scorer(metrics={k: [scored_mean()] for k in VALUE_KEYS})
def gcpc(checklists: str = "data/processed/synthesize/checklists.jsonl", benchmark: str | None = None,
         params: str = "params.yaml", arm: str = "gcpc", role: str = "grader", outcome_scorer: str | None = None,
         pass_threshold: float | None = None, max_attempts: int = 3, cache: bool = False) -> Scorer:
    """GCPC of each sample against its frozen checklist (module docstring).

    Args:
        checklists: the synthesize stage's checklists.jsonl (frozen before any trajectory is read).
        benchmark: the benchmark id the checklists were made for (default: the file's only benchmark).
        params: gcpc's params.yaml (the arm's prompt and view, the scoring settings).
        arm: a checklist arm of params.yaml (`gcpc`: no evidence gate, the paper's setting; `gcpc_gate`: gated).
        role: the Inspect model role of the judge (`--model-role grader=...`; unbound: Inspect's default model).
        outcome_scorer: the sample score that is the official outcome (default: the only one besides gcpc).
        pass_threshold: numeric official scores >= this are PASS (default: only 1 / 0, C / I, true / false).
        max_attempts: judge replies tried per sample until one validates.
        cache: use Inspect's model cache for judge calls.
    """
    arm_spec, scoring = load_settings(str(params), arm)
    template = arm_spec.judge_template()
    book = load_checklists(str(checklists))
    benchmarks = sorted({b for b, _ in book})
    if benchmark is None:
        if len(benchmarks) != 1:
            raise ValueError(f"gcpc scorer: {checklists} holds checklists of {len(benchmarks)} benchmarks "
                             f"({', '.join(benchmarks)}); pass -S benchmark=...")
        benchmark = benchmarks[0]

    async def score(state: TaskState, target: Target) -> Score:
        outcome = outcome_of(state.scores, scorer=outcome_scorer, pass_threshold=pass_threshold, ignore=GCPC_SCORER_NAMES)
        cl = book.get((benchmark, str(state.sample_id)))
        if cl is None or cl.status != "frozen":
            why = (f"no checklist for task {benchmark}/{state.sample_id} in {checklists}" if cl is None
                   else f"checklist not frozen: {cl.failure}")
            return unscored(why, outcome=outcome.status)
        traj = redact_run_metadata(trajectory_of(state, benchmark, outcome))
        llm_cfg = {"provider": "inspect", "model": str(get_model(role=role))}
        try:
            request = build_request(traj.events, cl, arm=arm_spec, llm_cfg=llm_cfg, template=template)
        except LogTooLong as exc:
            return unscored(str(exc), checklist_hash=cl.checklist_hash, outcome=outcome.status)
        parsed, replies = await ask_judge(request, role, max_attempts, cache)
        if parsed is None:
            return unscored(f"judge reply invalid after {max_attempts} attempts: {replies[-1]['error']}",
                            checklist_hash=cl.checklist_hash, request_key=request.key, replies=replies,
                            outcome=outcome.status)
        labels = label_items(parsed, traj.events, checklist_items(cl), arm_spec)
        s = score_trajectory(labels, outcome.status, pass_propagation=bool(scoring.get("pass_propagation", True)),
                             endpoint=bool(scoring.get("endpoint", True)))
        metadata = {"status": "ok", "arm": arm_spec.name, "evidence_gate": arm_spec.evidence_gate,
                    "checklist_hash": cl.checklist_hash, "request_key": request.key, "replies": replies,
                    "outcome": outcome.status, "outcome_raw": outcome.raw, "outcome_reason": outcome.reason,
                    "counts": {"items": s.n_items, "yes": s.n_yes, "no": s.n_no, "abstain": s.n_abstain,
                               "downgraded": s.n_downgraded},
                    "labels": [lab.model_dump(mode="json") for lab in labels]}
        if s.zero_evidence:
            return unscored("zero evidence: every item Abstain (unscored, not 0; paper §4)", **metadata
                            | {"status": "zero_evidence"})
        perfect = s.perfect if s.perfect is not None else not any(lab.label == "No" for lab in labels)
        value = {"gcpc_plain": _number(s.gcpc_plain), "gcpc_outcome": _number(s.gcpc_outcome),
                 "perfect": 1.0 if perfect else 0.0, "evidence_coverage": _number(s.evidence_coverage)}
        return Score(value=value, answer=f"{s.n_yes} Yes, {s.n_no} No, {s.n_abstain} Abstain",
                     explanation="; ".join(f"[{lab.item_id}] {lab.label}: {lab.reason}" for lab in labels),
                     metadata=metadata)

    return score
