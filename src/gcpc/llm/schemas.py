"""Structured outputs every provider must return, validated before anything downstream reads them."""

from __future__ import annotations

from typing import Literal

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
    """TICK step 1: yes/no questions generated from the instruction alone."""

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
