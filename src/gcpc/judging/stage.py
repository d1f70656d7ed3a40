"""Judge stage library: one arm per invocation (dvc.yaml runs it for each configured arm).

ARM_KINDS is the registry of arm kinds. An arm in params.yaml (`arm.<name>`, from conf/arm/<name>.yaml)
names its kind, its prompt template (file or folder) and kind-specific settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcpc.corpus.models import Task, Trajectory
from gcpc.io import read_models, write_jsonl, write_text
from gcpc.judging.checklist_arm import judge_checklist_arm, judge_generic_arm
from gcpc.judging.floor_arm import judge_floor_arm
from gcpc.judging.holistic_arm import judge_holistic_arm
from gcpc.judging.models import Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, redact_run_metadata
from gcpc.judging.tick_arm import judge_tick_arm
from gcpc.llm import LLMClient, LLMSettings, llm_session
from gcpc.llm.budget import check_failure_budget
from gcpc.synthesis.models import Checklist


@dataclass(frozen=True)
class ArmKind:
    run: Callable[..., list[Judgment]]
    reads: tuple[str, ...]
    """Ingest/synthesis outputs the kind reads besides trajectories: 'checklists' and/or 'tasks' (instructions)."""
    summary: str
    uses_model: bool = True
    """False for floor arms: no LLM request is made (their call store stays empty)."""


ARM_KINDS: dict[str, ArmKind] = {
    "checklist": ArmKind(judge_checklist_arm, ("checklists",), "GCPC: frozen checklist, one call, evidence gate"),
    "generic": ArmKind(judge_generic_arm, ("tasks",), "fixed task-agnostic questions judged like a checklist"),
    "tick": ArmKind(judge_tick_arm, ("tasks",), "TICK: generated yes/no questions, one call per question"),
    "holistic": ArmKind(judge_holistic_arm, ("tasks",), "one 0-10 score with a rationale"),
    "floor": ArmKind(judge_floor_arm, (), "outcome-blind floor: one feature of the judge-visible log, no model", uses_model=False),
}


def arm_spec(params: dict[str, Any], arm_name: str) -> ArmSpec:
    arms = params.get("arm") or {}
    if arm_name not in arms:
        raise KeyError(f"params.yaml: arm '{arm_name}' is not configured (configured: {', '.join(sorted(arms)) or 'none'})")
    arm = ArmSpec.from_params(arm_name, arms[arm_name], params.get("judging", {}))
    if arm.kind not in ARM_KINDS:
        raise ValueError(f"params.yaml: arm '{arm_name}' has unknown kind '{arm.kind}' (known: {', '.join(ARM_KINDS)})")
    return arm


def judge_arm(arm: ArmSpec, trajectories: Sequence[Trajectory], *, llm_cfg: dict[str, Any], client: LLMClient | None,
              checklists: dict[tuple[str, str], Checklist] | None = None,
              tasks: dict[tuple[str, str], Task] | None = None) -> list[Judgment]:
    """Judge trajectories with one arm (what the stage does, without the files)."""
    if arm.kind not in ARM_KINDS:
        raise ValueError(f"arm '{arm.name}' has unknown kind '{arm.kind}' (known: {', '.join(ARM_KINDS)})")
    trajectories = [redact_run_metadata(t) for t in trajectories]
    inputs = ArmInputs(trajectories=trajectories, checklists=checklists or {}, tasks=tasks or {})
    return ARM_KINDS[arm.kind].run(inputs, arm=arm, llm_cfg=llm_cfg, client=client)


def run(params: dict[str, Any], arm_name: str, ingest_dir: Path, synth_dir: Path, out_dir: Path, *, progress: bool = True) -> list[Judgment]:
    arm = arm_spec(params, arm_name)
    reads = ARM_KINDS[arm.kind].reads
    trajectories = read_models(ingest_dir / "trajectories.jsonl", Trajectory)
    checklists = ({(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)}
                  if "checklists" in reads else {})
    tasks = {(t.benchmark, t.task_id): t for t in read_models(ingest_dir / "tasks.jsonl", Task)} if "tasks" in reads else {}
    out_dir.mkdir(parents=True, exist_ok=True)
    if not ARM_KINDS[arm.kind].uses_model:
        # floors: no provider is built (none is needed, no key is read); the call store is empty by construction
        judgments = judge_arm(arm, trajectories, llm_cfg=params["judge"], client=None, checklists=checklists, tasks=tasks)
        write_text(out_dir / "llm_calls.jsonl", "")
    else:
        with llm_session(params["judge"], out_dir / "llm_calls.jsonl", progress=progress) as client:
            judgments = judge_arm(arm, trajectories, llm_cfg=params["judge"], client=client, checklists=checklists, tasks=tasks)
    write_jsonl(out_dir / "judgments.jsonl", judgments)
    if ARM_KINDS[arm.kind].uses_model:  # floors make no request, so they have nothing to fail
        enforce_failure_budget(judgments, params["judge"], stage=f"judge[{arm_name}]")
    return judgments


def enforce_failure_budget(judgments: Sequence[Judgment], llm_cfg: dict[str, Any], *, stage: str) -> str:
    """Failed judgments (refused, or invalid after every attempt) against the judge's `failure_budget`."""
    asked = [j for j in judgments if j.status in ("ok", "failed")]
    failed = [(j.request_key, j.error) for j in asked if j.status == "failed"]
    budget = LLMSettings.from_cfg(llm_cfg, where="params.yaml judge").failure_budget
    return check_failure_budget(failed, len(asked), budget, stage=stage)
