"""Response schema of the category audit (an LLM request like any other, through LLMClient)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

NONE = "none"
"""The category of a requirement that no definition of the scheme covers."""


class AuditedRequirement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    quote: str = Field(description="verbatim span of the task instruction stating one requirement")
    category: str = Field(description="name of the scheme category whose definition covers it, or 'none'")
    item_ids: list[str] = Field(default_factory=list, description="ids of the checklist items that check this requirement")
    reason: str = Field(default="", description="one sentence: why this category (or none)")


class CategoryAudit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    requirements: list[AuditedRequirement] = Field(description="every requirement the instruction states, in order")
