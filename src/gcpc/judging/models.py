"""Judge outputs: one record per (trajectory, arm)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gcpc.llm.schemas import Evidence, Label, Route


class ItemLabel(BaseModel):
    item_id: str
    route: Route | Literal["endpoint"]
    label: Label
    raw_label: Label | None = Field(default=None, description="the judge's label before the evidence gate")
    evidence: list[Evidence] = Field(default_factory=list)
    reason: str = ""
    downgraded: bool = False
    downgrade_reason: str | None = None
    test_refs: list[str] = Field(default_factory=list)
    text: str | None = Field(default=None, description="the question, for arms whose items are not a frozen checklist (generic, TICK)")
    request_key: str | None = Field(default=None, description="the call that labelled this item, when items are judged one call each (TICK)")


class Judgment(BaseModel):
    trajectory_id: str
    benchmark: str
    task_id: str
    arm: str
    kind: str = Field(default="checklist", description="the arm's kind in judging.stage.ARM_KINDS")
    checklist_hash: str
    provider: str
    model: str
    request_key: str | None
    status: Literal["ok", "failed", "skipped"]
    error: str | None = None
    evidence_gate: bool
    labels: list[ItemLabel] = Field(default_factory=list)
    score: float | None = Field(default=None, description="holistic arms: the judge's 0-10 score; floor arms: the floor score "
                                                          "in [0, 1] (labels stay empty)")
    rationale: str | None = Field(default=None, description="holistic arms: the judge's short rationale")
    analysis: str | None = Field(default=None, description="TICK arms: the question generator's analysis of the instruction, "
                                                          "written before its questions (one per task, the same on each of its judgments)")
    floor: dict[str, int | list[int]] | None = Field(
        default=None, description="floor arms (no model): the outcome-blind features of the judge-visible log behind `score`")
    input_cuts: dict[str, Any] = Field(default_factory=dict, description="what the judge view removed from the log "
                                       "(harness setup, collapsed installation output, per-event cut, budget): gcpc.judging.view")
