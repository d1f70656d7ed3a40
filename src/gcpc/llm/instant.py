"""The `instant` provider: a BENCHMARK provider for bench/bench_scale.py, never a default.

The heuristic judge scans every log line for every item's anchors (about a second per
trajectory here), which would turn a paper-scale run (20,818 trajectories x 6 judge arms) into
a day of rule evaluation instead of a measurement of the pipeline. This provider answers each
log-reading request (ChecklistJudgment, TickAnswer, HolisticJudgment) in constant time with a
schema-valid reply derived from a hash of what is sent (hash-seeded labels; Yes/No cite the first line
of a displayed tool output or file content, verbatim, so the evidence gate has real work), and
requests that read only the task (checklist and TICK question generation, the category audit)
with the heuristic rules. It goes through the same client path as every provider (validation,
call store, blobs). Its labels carry no information about the trajectory: results computed from
them measure time and bytes, nothing else. Recorded as provider 'instant'.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gcpc.llm.base import LLMRequest, ProviderError, RawResponse

EVIDENCE_KINDS = ("tool_output", "file_content")
QUOTE_CHARS = 80


def _seed(request: LLMRequest) -> str:
    """What the draws depend on: what a provider is sent (model, schema name, messages). Not request.key,
    which also hashes the structured `inputs` (the log's events again): a real provider never pays that."""
    h = hashlib.sha256(f"{request.model}\x00{request.output_schema}".encode())
    for m in request.messages:
        h.update(f"\x00{m.role}\x00{m.content}".encode())
    return h.hexdigest()


def _draws(key: str, salt: str) -> bytes:
    return hashlib.sha256(f"{key}|{salt}".encode()).digest()


def _evidence(shown: list[dict[str, Any]], pick: int) -> list[dict[str, Any]]:
    """One verbatim quote from a displayed event (the pick-th of `shown`, cyclically), or none."""
    if not shown:
        return []
    ev = shown[pick % len(shown)]
    line = next(ln.strip() for ln in str(ev["text"]).splitlines() if ln.strip())
    return [{"event_index": ev["index"], "quote": line[:QUOTE_CHARS]}]


def _checklist(request: LLMRequest) -> dict[str, Any]:
    events = request.inputs.get("events", [])
    shown = [e for e in events if e.get("kind") in EVIDENCE_KINDS and str(e.get("text", "")).strip()]
    key = _seed(request)
    verdicts = []
    for item in request.inputs["items"]:
        d = _draws(key, item["item_id"])
        label = ("Yes", "No", "Abstain")[d[0] % 3]
        evidence = _evidence(shown, int.from_bytes(d[1:3], "big")) if label != "Abstain" else []
        if not evidence:
            label = "Abstain"
        verdicts.append({"item_id": item["item_id"], "label": label, "evidence": evidence,
                         "reason": f"instant benchmark provider: label drawn from the request hash ({label})."})
    return {"verdicts": verdicts}


def _tick(request: LLMRequest) -> dict[str, Any]:
    verdict = ("YES", "NO")[_draws(_seed(request), "tick")[0] % 2]
    return {"reasoning": "instant benchmark provider: verdict drawn from the request hash.", "verdict": verdict}


def _holistic(request: LLMRequest) -> dict[str, Any]:
    score = _draws(_seed(request), "holistic")[0] % 11
    return {"rationale": "instant benchmark provider: score drawn from the request hash.", "score": score}


INSTANT = {"ChecklistJudgment": _checklist, "TickAnswer": _tick, "HolisticJudgment": _holistic}


class InstantProvider:
    name = "instant"

    def __init__(self, model: str = "instant-v1", **_: object):
        self.model = model

    def complete(self, request: LLMRequest) -> RawResponse:
        handler = INSTANT.get(request.output_schema)
        if handler is not None:
            answer = handler(request)
        else:
            from gcpc.llm.heuristic import HANDLERS

            if request.output_schema not in HANDLERS:
                raise ProviderError(f"instant provider has no answer for schema '{request.output_schema}'")
            answer = HANDLERS[request.output_schema](request.inputs)
        return RawResponse(text=json.dumps(answer, ensure_ascii=False, sort_keys=True), usage={}, request_id=None, latency_s=None)
