"""Holistic baseline: one call per trajectory, one 0-10 score with a short rationale.

The judge sees the task instruction and the rendered log (the same view as every arm). Finalize
rescales the score to [0, 1] (score / 10) and reports it as `gcpc_plain` for this arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gcpc.corpus.models import Event
from gcpc.judging.checklist_arm import judgment_fields, make_request
from gcpc.judging.models import Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, LogTooLong, fit_view, task_key
from gcpc.llm import LLMClient, LLMRequest
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.settings import prompt_schema
from gcpc.llm.schemas import HolisticJudgment, holistic_schema

SCALE_MAX = 10


def build_holistic_request(events: Sequence[Event], instruction: str, *, arm: ArmSpec, llm_cfg: dict[str, Any],
                           template: PromptTemplate) -> LLMRequest:
    schema = arm.schema(holistic_schema(), HolisticJudgment, llm_cfg)
    shown = prompt_schema(llm_cfg, schema)
    _, visible, messages, cut = fit_view(events, arm.view, llm_cfg, mark_authored=arm.mark_authored,
                                         render=lambda log: template.render(shown, instruction=instruction, log=log))
    return make_request(f"judgment:{arm.requests_of}", messages, HolisticJudgment, template, llm_cfg,
                        {"instruction": instruction, "events": visible} | ({"context_cut": cut} if cut else {}), schema)


def judge_holistic_arm(inputs: ArmInputs, *, arm: ArmSpec, llm_cfg: dict[str, Any], client: LLMClient) -> list[Judgment]:
    template = arm.judge_template()
    out: list[Judgment] = []
    pending = []
    for traj in inputs.trajectories:
        task = inputs.tasks.get(task_key(traj))
        if task is None:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg, evidence_gate=False), checklist_hash="", request_key=None,
                                status="skipped", error="task instruction not found among ingested tasks"))
            continue
        try:
            request = build_holistic_request(traj.events, task.instruction, arm=arm, llm_cfg=llm_cfg, template=template)
        except LogTooLong as exc:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg, evidence_gate=False), checklist_hash="", request_key=None,
                                status="skipped", error=str(exc)))
            continue
        pending.append((traj, request))
    results = client.run([p[1] for p in pending], HolisticJudgment, desc=f"judge {arm.name}")
    for (traj, _), result in zip(pending, results, strict=True):
        common = judgment_fields(traj, arm, llm_cfg, evidence_gate=False) | {"checklist_hash": "", "request_key": result.key}
        if not result.ok or result.parsed is None:
            out.append(Judgment(**common, status="failed", error=result.error))
            continue
        parsed = HolisticJudgment.model_validate(result.parsed)
        out.append(Judgment(**common, status="ok", score=float(parsed.score), rationale=parsed.rationale))
    return sorted(out, key=lambda j: j.trajectory_id)
