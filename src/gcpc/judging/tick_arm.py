"""TICK (Cook et al. 2024, "TICKing All the Boxes"), as published and adapted to agent trajectories.

1. Generation: from the task instruction alone, the judge model first analyses the instruction, then
   writes 2-8 yes/no questions whose YES answer means a requirement is met (one call per task;
   `generate.jinja`; the reply's `analysis` comes before its `questions` and is recorded on every
   judgment of the task as `Judgment.analysis`).
2. Evaluation: every question is judged in its own call (not batched), given the instruction, the
   rendered trajectory and that one question; the judge reasons first, then answers YES or NO
   (`judge.jinja`). There is no abstention and no evidence citation, so no evidence gate.
3. Score: the share of YES answers (the pass rate), which finalize computes as Yes / decided.

Kind `tick` serves both arms: `tick` (prompts/judging/tick/, "response" as in the paper) and
`tick_adapted` (prompts/judging/tick_adapted/, the same text with "response" replaced by
"agent execution trajectory"; tests/test_judging_arms.py checks that nothing else differs).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from gcpc.corpus.models import Trajectory
from gcpc.io import content_hash
from gcpc.judging.checklist_arm import judgment_fields, make_request
from gcpc.judging.models import ItemLabel, Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, LogTooLong, fit_view, task_key
from gcpc.llm import LLMClient, LLMRequest
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.settings import prompt_schema
from gcpc.llm.schemas import TickAnswer, TickChecklist, tick_answer_schema, tick_checklist_schema

GENERATE, JUDGE = "generate.jinja", "judge.jinja"
LIMITS = {"min_questions": 2, "max_questions": 8}


def check_distinct_questions(parsed: BaseModel, request: LLMRequest) -> None:
    """Reject (and so retry) a checklist with an empty analysis or empty or repeated questions."""
    assert isinstance(parsed, TickChecklist)
    if not parsed.analysis.strip():
        raise ValueError("analysis must not be empty")
    stripped = [" ".join(q.split()) for q in parsed.questions]
    if any(not q for q in stripped):
        raise ValueError("questions must not be empty")
    if len(set(stripped)) != len(stripped):
        raise ValueError("questions must be distinct")


def build_generation_request(instruction: str, *, arm: ArmSpec, llm_cfg: dict[str, Any], template: PromptTemplate) -> LLMRequest:
    schema = arm.schema(tick_checklist_schema(**LIMITS), TickChecklist, llm_cfg)
    shown = prompt_schema(llm_cfg, schema)
    messages = template.render(shown, instruction=instruction)
    return make_request(f"tick_checklist:{arm.requests_of}", messages, TickChecklist, template, llm_cfg,
                        {"instruction": instruction, "limits": dict(LIMITS)}, schema)


def build_question_requests(traj: Trajectory, instruction: str, questions: list[str], *, arm: ArmSpec, llm_cfg: dict[str, Any],
                            template: PromptTemplate) -> list[LLMRequest]:
    """One request per question, all over the same log: fitted to the context window with the longest question."""
    longest = max(questions, key=len, default="")
    schema = arm.schema(tick_answer_schema(), TickAnswer, llm_cfg)
    shown = prompt_schema(llm_cfg, schema)
    log, visible, _, cut = fit_view(traj.events, arm.view, llm_cfg, mark_authored=arm.mark_authored,
                                    render=lambda log: template.render(shown, instruction=instruction, log=log, question=longest))
    extra = {"context_cut": cut} if cut else {}
    return [make_request(f"judgment:{arm.requests_of}", template.render(shown, instruction=instruction, log=log, question=q),
                         TickAnswer, template, llm_cfg, {"instruction": instruction, "question": q, "events": visible} | extra,
                         schema)
            for q in questions]


def judge_tick_arm(inputs: ArmInputs, *, arm: ArmSpec, llm_cfg: dict[str, Any], client: LLMClient) -> list[Judgment]:
    gen_template = PromptTemplate(arm.template_file(GENERATE))
    judge_template = arm.judge_template(arm.template_file(JUDGE))
    out: list[Judgment] = []

    keys = sorted({task_key(t) for t in inputs.trajectories if task_key(t) in inputs.tasks})
    gen_requests = [build_generation_request(inputs.tasks[k].instruction, arm=arm, llm_cfg=llm_cfg, template=gen_template) for k in keys]
    gen_results = dict(zip(keys, client.run(gen_requests, TickChecklist, check=check_distinct_questions,
                                            desc=f"{arm.name} questions"), strict=True))

    pending: list[tuple[Trajectory, list[str], str, str, list[LLMRequest]]] = []
    for traj in inputs.trajectories:
        key = task_key(traj)
        if key not in inputs.tasks:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg, evidence_gate=False), checklist_hash="", request_key=None,
                                status="skipped", error="task instruction not found among ingested tasks"))
            continue
        generated = gen_results[key]
        if not generated.ok or generated.parsed is None:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg, evidence_gate=False), checklist_hash="",
                                request_key=generated.key, status="failed", error=f"question generation failed: {generated.error}"))
            continue
        checklist = TickChecklist.model_validate(generated.parsed)
        questions = [" ".join(q.split()) for q in checklist.questions]
        try:
            requests = build_question_requests(traj, inputs.tasks[key].instruction, questions, arm=arm, llm_cfg=llm_cfg,
                                               template=judge_template)
        except LogTooLong as exc:
            out.append(Judgment(**judgment_fields(traj, arm, llm_cfg, evidence_gate=False), checklist_hash="",
                                request_key=generated.key, status="skipped", error=str(exc)))
            continue
        pending.append((traj, questions, checklist.analysis, generated.key, requests))

    answers = client.run([r for p in pending for r in p[4]], TickAnswer, desc=f"judge {arm.name}")
    at = 0
    for traj, questions, analysis, gen_key, requests in pending:
        mine, at = answers[at:at + len(requests)], at + len(requests)
        common = judgment_fields(traj, arm, llm_cfg, evidence_gate=False) | {
            "checklist_hash": content_hash({"questions": questions}), "request_key": gen_key, "analysis": analysis}
        failed = [(n, r) for n, r in enumerate(mine, 1) if not r.ok or r.parsed is None]
        if failed:
            n, r = failed[0]
            out.append(Judgment(**common, status="failed", error=f"question q{n:02d} ({len(failed)} failed): {r.error}"))
            continue
        labels = []
        for n, (question, result) in enumerate(zip(questions, mine, strict=True), 1):
            answer = TickAnswer.model_validate(result.parsed)
            label = "Yes" if answer.verdict == "YES" else "No"
            labels.append(ItemLabel(item_id=f"q{n:02d}", route="judge", label=label, raw_label=label, reason=answer.reasoning,
                                    text=question, request_key=result.key))
        out.append(Judgment(**common, status="ok", labels=labels))
    return sorted(out, key=lambda j: j.trajectory_id)
