"""Structured outputs every provider must return, validated before anything downstream reads them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Route = Literal["assertion", "generated", "judge"]
Category = Literal["comprehension", "acquisition", "computation", "construction", "validation"]
Label = Literal["Yes", "No", "Abstain"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GeneratedItem(Strict):
    text: str = Field(description="one self-contained requirement, stated as something the trajectory should achieve")
    quote: str = Field(description="verbatim span of the task instruction this item comes from")
    route: Route
    test_refs: list[str] = Field(default_factory=list, description="verifier test ids (assertion route)")
    category: Category


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
