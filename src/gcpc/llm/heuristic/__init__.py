"""The offline, deterministic `heuristic` provider: transparent rules, not a language model.

It answers the same requests as the real providers, with the same response schemas, but
reads the structured inputs the prompt was rendered from instead of the prompt text.
Every output it produces is recorded with provider 'heuristic' so it is never taken for an LLM.
Like a real provider it must satisfy the JSON schema of each request: its answer is fitted to it
(`fit.py`: strings to their maxLength, arrays to their maxItems) before it is returned.
"""

from __future__ import annotations

import json

from gcpc.llm.base import LLMRequest, ProviderError, RawResponse
from gcpc.llm.heuristic.holistic import score_holistic
from gcpc.llm.heuristic.audit import audit_requirements
from gcpc.llm.heuristic.fit import fit_to_schema
from gcpc.llm.heuristic.generic import judge_generic
from gcpc.llm.heuristic.judge import judge_checklist
from gcpc.llm.heuristic.synthesize import generate_checklist
from gcpc.llm.heuristic.tick import answer_tick_question, generate_tick_checklist


def checklist_judgment(inputs: dict) -> dict:
    """Both arms that answer with a ChecklistJudgment: the Generic arm's questions (`mode: generic`) and GCPC's checklist."""
    return judge_generic(inputs) if inputs.get("mode") == "generic" else judge_checklist(inputs)


HANDLERS = {
    "GeneratedChecklist": generate_checklist,
    "ChecklistJudgment": checklist_judgment,
    "CategoryAudit": audit_requirements,
    "TickChecklist": generate_tick_checklist,
    "TickAnswer": answer_tick_question,
    "HolisticJudgment": score_holistic,
}


class HeuristicProvider:
    name = "heuristic"

    def __init__(self, model: str = "gcpc-heuristic-v1", **_: object):
        self.model = model

    def complete(self, request: LLMRequest) -> RawResponse:
        handler = HANDLERS.get(request.output_schema)
        if handler is None:
            raise ProviderError(f"heuristic provider has no rule set for schema '{request.output_schema}'")
        answer = fit_to_schema(handler(request.inputs), request.json_schema)
        return RawResponse(text=json.dumps(answer, ensure_ascii=False, sort_keys=True), usage={}, request_id=None, latency_s=None)
