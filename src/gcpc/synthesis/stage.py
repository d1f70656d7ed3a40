"""Synthesize stage library: one frozen checklist per task, all attempts logged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc.corpus.models import Task
from gcpc.io import forget_outputs, read_models, record_outputs, write_jsonl
from gcpc.llm import llm_session, request_identity
from gcpc.synthesis.generate import SynthesisSettings, synthesize_checklists
from gcpc.synthesis.models import Checklist, Provenance


def synthesize_all(tasks: list[Task], llm_cfg: dict[str, Any], settings: SynthesisSettings, out_dir: Path, *, progress: bool = True) -> list[Checklist]:
    out_dir.mkdir(parents=True, exist_ok=True)
    forget_outputs(out_dir)
    checklists, attempts = [], []
    ordered = sorted(tasks, key=lambda t: (t.benchmark, t.task_id))
    with llm_session(llm_cfg, out_dir / "llm_calls.jsonl", progress=progress) as client:
        outcomes = synthesize_checklists([(t.instruction, t.tests, (t.benchmark, t.task_id), t.verifier_files) for t in ordered],
                                         client=client, llm_cfg=llm_cfg, settings=settings)
        for task, outcome in zip(ordered, outcomes, strict=True):
            attempts.extend(outcome.attempts)
            provider, model = request_identity(llm_cfg)
            checklists.append(Checklist(
                benchmark=task.benchmark, task_id=task.task_id,
                status="frozen" if outcome.items is not None else "failed",
                items=outcome.items or [],
                provenance=outcome.provenance or Provenance(provider=provider, model=model, prompt_hash="", rules_hash=""),
                attempts=len(outcome.attempts),
                first_attempt_valid=bool(outcome.attempts and outcome.attempts[0].accepted),
                failure=outcome.failure,
            ).with_hash())
    write_jsonl(out_dir / "checklists.jsonl", checklists)
    write_jsonl(out_dir / "attempts.jsonl", attempts)
    record_outputs(out_dir, ["checklists.jsonl", "attempts.jsonl"])  # rows and hashes every reader checks
    return checklists


def run(params: dict[str, Any], ingest_dir: Path, out_dir: Path) -> list[Checklist]:
    tasks = read_models(ingest_dir / "tasks.jsonl", Task)
    settings = SynthesisSettings.from_params(params.get("synthesis", {}))
    return synthesize_all(tasks, params["generator"], settings, out_dir)
