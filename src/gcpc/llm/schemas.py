"""Structured outputs every provider must return, validated before anything downstream reads them."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Route = Literal["assertion", "generated", "judge"]
Label = Literal["Yes", "No", "Abstain"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# No category field: the scheme does not guide synthesis (paper §3.2); the category audit assigns
# categories afterwards. (A comment, not a docstring: docstrings become schema text the generator sees.)
class GeneratedItem(Strict):
    text: str = Field(description="one self-contained requirement, stated as something the trajectory should achieve")
    quote: str = Field(description="verbatim span of the task instruction this item comes from")
    route: Route
    test_refs: list[str] = Field(default_factory=list, description="verifier test ids (assertion route)")


class GeneratedChecklist(Strict):
    items: list[GeneratedItem]


class Evidence(Strict):
    event_index: int
    quote: str = Field(description="verbatim text copied from that event")


class ItemVerdict(Strict):
    item_id: str
    label: Label
    evidence: list[Evidence] = Field(default_factory=list)
    reason: str


class ChecklistJudgment(Strict):
    verdicts: list[ItemVerdict]


SCHEMAS: dict[str, type[BaseModel]] = {
    "GeneratedChecklist": GeneratedChecklist,
    "ChecklistJudgment": ChecklistJudgment,
}


# --- Baseline judging arms (TICK, Holistic). Descriptions avoid the word "response" so that the
# --- TICK-adapted prompts, which only swap that word, show the same schema text as TICK as published.


class TickChecklist(Strict):
    """TICK step 1: yes/no questions generated from the instruction alone, after an analysis of it."""

    analysis: str = Field(min_length=1, description="analysis of the instruction, written before the questions")
    questions: list[str] = Field(min_length=2, max_length=8,
                                 description="2 to 8 yes/no questions; YES means the instruction's requirement is met")


class TickAnswer(Strict):
    """TICK step 2: one checklist question judged in its own call, reasoning before the verdict."""

    reasoning: str = Field(description="step-by-step reasoning, written before the verdict")
    verdict: Literal["YES", "NO"]


class HolisticJudgment(Strict):
    """Holistic baseline: one overall score with a short rationale."""

    rationale: str = Field(description="one to three sentences justifying the score, written before it")
    score: int = Field(ge=0, le=10, description="0 = nothing the task asks for was achieved, 10 = everything was")


SCHEMAS["TickChecklist"] = TickChecklist
SCHEMAS["TickAnswer"] = TickAnswer
SCHEMAS["HolisticJudgment"] = HolisticJudgment


# --- Per-request JSON schemas ----------------------------------------------------------------
# The pydantic models above are the shape every stage reads back; the schema a request carries
# (`LLMRequest.json_schema`, hence its key) is narrower: the ids that exist, how many verdicts,
# the labels, and how long free text may be. A constrained decoder (llama.cpp grammars, vLLM,
# OpenAI strict mode) then cannot produce an invented id or a reply cut off mid-string, and the
# client validates every reply against the same schema (gcpc.llm.client) for servers that only
# parse. Length limits leave room above the heuristic provider's longest texts on the demo corpus
# (reason 457 characters, quote 176, 3 evidence entries, TICK question 226, TICK reasoning 429).

REASON_MAX_CHARS = 600
QUOTE_MAX_CHARS = 300
MAX_EVIDENCE = 3
TICK_QUESTION_MAX_CHARS = 400
TICK_REASONING_MAX_CHARS = 1500
TICK_ANALYSIS_MAX_CHARS = 1500
RATIONALE_MAX_CHARS = 600


def _obj(title: str | None, properties: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """A closed object whose every property is required (the form OpenAI strict mode accepts)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": list(properties),
                              "additionalProperties": False}
    if title:
        schema = {"title": title, **schema}
    if description:
        schema["description"] = description
    return schema


def _text(max_chars: int, description: str) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_chars, "description": description}


def checklist_judgment_schema(item_ids: Sequence[str], *, reason_max: int = REASON_MAX_CHARS,
                              quote_max: int = QUOTE_MAX_CHARS, max_evidence: int = MAX_EVIDENCE) -> dict[str, Any]:
    """ChecklistJudgment for exactly these items: `item_id` is an enum of the request's ids and the
    array has exactly one entry per item (duplicates, which a fixed length still allows, are caught
    by the post-check `check_one_verdict_per_item`)."""
    ids = list(item_ids)
    if not ids or len(set(ids)) != len(ids):
        raise ValueError(f"checklist_judgment_schema: item ids must be non-empty and distinct, got {ids}")
    evidence = _obj(None, {"event_index": {"type": "integer", "minimum": 0},
                           "quote": _text(quote_max, "short verbatim text copied from that event")})
    verdict = _obj(None, {"item_id": {"type": "string", "enum": ids},
                          "label": {"type": "string", "enum": list(get_args(Label))},
                          "evidence": {"type": "array", "items": evidence, "maxItems": max_evidence},
                          "reason": _text(reason_max, "one or two sentences")})
    return _obj("ChecklistJudgment", {"verdicts": {"type": "array", "items": verdict, "minItems": len(ids),
                                                   "maxItems": len(ids),
                                                   "description": f"exactly one verdict for each of the {len(ids)} items"}})


def tick_checklist_schema(*, min_questions: int = 2, max_questions: int = 8,
                          question_max: int = TICK_QUESTION_MAX_CHARS, analysis_max: int = TICK_ANALYSIS_MAX_CHARS) -> dict[str, Any]:
    # the analysis first: published TICK has the model analyse the instruction before it writes the questions
    return _obj("TickChecklist", {"analysis": {"type": "string", "minLength": 1, "maxLength": analysis_max,
                                               "description": "analysis of the instruction, written before the questions"},
                                  "questions": {
        "type": "array", "items": {"type": "string", "minLength": 1, "maxLength": question_max},
        "minItems": min_questions, "maxItems": max_questions,
        "description": f"{min_questions} to {max_questions} yes/no questions; YES means the instruction's requirement is met"}})


def tick_answer_schema(*, reasoning_max: int = TICK_REASONING_MAX_CHARS) -> dict[str, Any]:
    return _obj("TickAnswer", {"reasoning": _text(reasoning_max, "step-by-step reasoning, written before the verdict"),
                               "verdict": {"type": "string", "enum": ["YES", "NO"]}})


def holistic_schema(*, rationale_max: int = RATIONALE_MAX_CHARS) -> dict[str, Any]:
    return _obj("HolisticJudgment", {
        "rationale": _text(rationale_max, "one to three sentences justifying the score, written before it"),
        "score": {"type": "integer", "minimum": 0, "maximum": 10,
                  "description": "0 = nothing the task asks for was achieved, 10 = everything was"}})


# Bounds of the generator's and the category audit's request schemas, sent only where the generator's
# llm config sizes max_tokens from the schema (`max_tokens_from_schema`, the compatible-server configs):
# the paper's configs keep the response models' own schemas, so their requests, keys and outputs are
# unchanged. Each bound sits above the heuristic provider's longest on the demo corpus (9 items, item
# text and quote 173 characters, 9 test references of at most 71 characters; audit: 9 requirements,
# quote 173, reason 65, 1 item id per requirement).

CHECKLIST_MAX_ITEMS = 16
ITEM_TEXT_MAX_CHARS = 400
ITEM_QUOTE_MAX_CHARS = 400
MAX_TEST_REFS = 12
TEST_REF_MAX_CHARS = 200
AUDIT_MAX_REQUIREMENTS = 16
AUDIT_REASON_MAX_CHARS = 300


def generated_checklist_schema(*, max_items: int = CHECKLIST_MAX_ITEMS, text_max: int = ITEM_TEXT_MAX_CHARS,
                               quote_max: int = ITEM_QUOTE_MAX_CHARS, max_test_refs: int = MAX_TEST_REFS,
                               test_ref_max: int = TEST_REF_MAX_CHARS) -> dict[str, Any]:
    """GeneratedChecklist with every array and string bounded, so `max_reply_tokens` can size the reply
    (issue 30: the generator's replies were cut at a fixed max_tokens). Same fields and descriptions as the
    response model; `test_refs` is required here (closed objects, every property required) and may be empty."""
    fields = GeneratedItem.model_fields
    item = _obj(None, {
        "text": _text(text_max, str(fields["text"].description)),
        "quote": _text(quote_max, str(fields["quote"].description)),
        "route": {"type": "string", "enum": list(get_args(Route))},
        "test_refs": {"type": "array", "items": {"type": "string", "maxLength": test_ref_max}, "maxItems": max_test_refs,
                      "description": str(fields["test_refs"].description)},
    })
    return _obj("GeneratedChecklist", {"items": {"type": "array", "items": item, "maxItems": max_items}})


def category_audit_schema(item_ids: Sequence[str], category_names: Sequence[str], *,
                          max_requirements: int = AUDIT_MAX_REQUIREMENTS, quote_max: int = ITEM_QUOTE_MAX_CHARS,
                          reason_max: int = AUDIT_REASON_MAX_CHARS) -> dict[str, Any]:
    """The category audit's reply for one request, bounded: `category` an enum of the scheme's names (with
    'none'), `item_ids` an enum of the checklist's ids (at most each once), every string bounded."""
    ids = sorted(set(item_ids))
    names = list(dict.fromkeys(category_names))
    id_schema: dict[str, Any] = {"type": "string", "enum": ids} if ids else {"type": "string", "maxLength": 0}
    requirement = _obj(None, {
        "quote": _text(quote_max, "verbatim span of the task instruction stating one requirement"),
        "category": {"type": "string", "enum": names, "description": "name of the scheme category whose definition covers it, or 'none'"},
        "item_ids": {"type": "array", "items": id_schema, "maxItems": len(ids),
                     "description": "ids of the checklist items that check this requirement"},
        "reason": _text(reason_max, "one sentence: why this category (or none)"),
    })
    return _obj("CategoryAudit", {"requirements": {"type": "array", "items": requirement, "maxItems": max_requirements,
                                                   "description": "every requirement the instruction states, in order"}})


def _import_jsonschema() -> Any:
    """jsonschema, imported without its optional 'iri' format checker: `rfc3987_syntax` (installed beside
    jupyter through jsonschema[format-nongpl]) builds 39 Earley grammars when imported, seconds of CPU in every
    stage that validates a reply (issue 29's profile). gcpc's schemas assert no formats, so nothing is lost; a
    later import of rfc3987_syntax by anything else still works."""
    import sys

    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    blocked = "rfc3987_syntax" not in sys.modules
    if blocked:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment] - makes `import rfc3987_syntax` raise ImportError
    try:
        import jsonschema
    finally:
        if blocked and sys.modules.get("rfc3987_syntax", 0) is None:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Any:
    """One compiled validator per distinct schema: a stage validates thousands of replies against a few schemas."""
    return _import_jsonschema().Draft202012Validator(json.loads(schema_json))


def fit_schema_limits(schema: dict[str, Any], limits: dict[str, Any] | None) -> dict[str, Any]:
    """The schema within what a server's decoder can compile (the llm config's `schema_limits`): every
    `maxLength` above `max_string_length` lowered to it (and a `minLength` above it too), and, with
    `integer_range_as_enum: N`, an integer bounded by `minimum` and `maximum` to at most N values sent as
    the `enum` of them, for decoders that ignore integer bounds (llama-cpp-python's Python converter let
    Holistic scores 100 and 1e15 through; issue 30). Unchanged without limits. Issue 30: llama.cpp turns
    `maxLength: 1500` into 1,500 nested grammar rules and its server died parsing them; 1,000 compiled.
    The narrower schema is the one shown, sent, validated and keyed, so a cached answer is always an
    answer to it."""
    if not limits:
        return schema
    cap = None if limits.get("max_string_length") is None else int(limits["max_string_length"])
    as_enum = None if limits.get("integer_range_as_enum") is None else int(limits["integer_range_as_enum"])
    if cap is None and as_enum is None:
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if cap is not None:
                for k in ("maxLength", "minLength"):
                    if isinstance(out.get(k), int) and out[k] > cap:
                        out[k] = cap
            lo, hi = out.get("minimum"), out.get("maximum")
            if (as_enum is not None and out.get("type") == "integer" and isinstance(lo, int) and isinstance(hi, int)
                    and 0 < hi - lo + 1 <= as_enum and "enum" not in out):
                out["enum"] = list(range(lo, hi + 1))
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def schema_errors(instance: Any, schema: dict[str, Any], *, limit: int = 5) -> list[str]:
    """JSON Schema (2020-12) violations of a parsed reply, as 'path: message' lines (empty = valid)."""
    # jsonschema is imported here, not at the top: stages that only read judgments (scoring, analyses) need not
    validator = _validator(json.dumps(schema, sort_keys=True))
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    out = []
    for e in errors[:limit]:
        path = "/".join(str(p) for p in e.absolute_path) or "(root)"
        message = e.message if len(e.message) <= 200 else f"fails {e.validator} {json.dumps(e.validator_value)[:120]}"
        out.append(f"{path}: {message}")
    if len(errors) > limit:
        out.append(f"and {len(errors) - limit} more")
    return out


# Decoding cost of a reply: upper bound on its characters when every string and array is bounded.
CHARS_PER_TOKEN_FLOOR = 2.5
"""Characters per token assumed for JSON replies (English prose averages about 4; JSON punctuation fewer)."""


def max_reply_chars(schema: dict[str, Any]) -> int | None:
    """Longest compact JSON text the schema admits, or None when some string or array is unbounded."""
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return len(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "object":
        total = 2
        for name, sub in (schema.get("properties") or {}).items():
            inner = max_reply_chars(sub)
            if inner is None:
                return None
            total += len(json.dumps(name)) + 2 + inner
        return total
    if kind == "array":
        n, items = schema.get("maxItems"), schema.get("items")
        if n is None or not isinstance(items, dict):
            return None
        inner = max_reply_chars(items)
        return None if inner is None else 2 + n * (inner + 1)
    if kind == "string":
        return None if schema.get("maxLength") is None else 2 + int(schema["maxLength"])
    if kind == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        return max(len(str(lo)), len(str(hi))) if lo is not None and hi is not None else 20
    if kind in ("number",):
        return 24
    if kind == "boolean":
        return 5
    return None


def max_reply_tokens(schema: dict[str, Any]) -> int | None:
    """`max_tokens` for a reply of the longest size the schema admits (None: some field is unbounded)."""
    chars = max_reply_chars(schema)
    return None if chars is None else int(math.ceil(chars / CHARS_PER_TOKEN_FLOOR)) + 16
