"""Frozen checklists and the synthesis attempt log."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gcpc.io import content_hash
from gcpc.llm.schemas import Route
from gcpc.synthesis.gates import GateResult


class ChecklistItem(BaseModel):
    item_id: str
    text: str
    quote: str
    route: Route
    test_refs: list[str] = Field(default_factory=list, description="resolved verifier test ids")


class Provenance(BaseModel):
    """Who wrote a checklist and from which rules: shared by every item of the checklist."""

    provider: str
    model: str
    prompt_hash: str = Field(description="hash of the generator template and every rules file it embeds")
    rules_hash: str = Field(description="hash of the rules files alone")
    request_key: str = Field(default="", description="call-store key of the accepted generation request")


class Checklist(BaseModel):
    benchmark: str
    task_id: str
    status: Literal["frozen", "failed"]
    items: list[ChecklistItem]
    provenance: Provenance
    attempts: int
    first_attempt_valid: bool
    failure: str | None = None
    checklist_hash: str = ""

    def with_hash(self) -> Checklist:
        body = self.model_dump(mode="json", exclude={"checklist_hash"})
        return self.model_copy(update={"checklist_hash": content_hash(body)})


class SynthesisAttempt(BaseModel):
    benchmark: str
    task_id: str
    attempt: int
    request_key: str
    prompt_hash: str
    previous_rejections: list[str]
    call_attempts: int
    raw_responses: list[str | None]
    parsed: dict[str, Any] | None
    error: str | None
    gate_results: list[GateResult]
    accepted: bool
