"""GCPC scoring (paper §3.3-3.4): the official-outcome step and the per-trajectory metrics.

Plain GCPC uses the judge's log-only labels. "GCPC with official outcome" first applies the
deterministic official-outcome step: on PASS every assertion-route item becomes Yes; then one
virtual endpoint item is added, Yes on PASS and No on FAIL. Abstain never enters a denominator.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from gcpc.judging.models import ItemLabel

ENDPOINT_ID = "endpoint"


def apply_official_outcome(
    labels: Sequence[ItemLabel],
    outcome: str,
    *,
    pass_propagation: bool = True,
    endpoint: bool = True,
) -> list[ItemLabel]:
    """The official-outcome step. Only defined for a binary outcome (PASS / FAIL)."""
    if outcome not in ("PASS", "FAIL"):
        raise ValueError(f"official-outcome step needs a PASS/FAIL outcome, got {outcome!r}")
    out = []
    for lab in labels:
        if outcome == "PASS" and pass_propagation and lab.route == "assertion" and lab.label != "Yes":
            lab = lab.model_copy(update={"label": "Yes", "reason": "official outcome PASS: assertion-route item set to Yes"})
        out.append(lab)
    if endpoint:
        out.append(ItemLabel(item_id=ENDPOINT_ID, route="endpoint", label="Yes" if outcome == "PASS" else "No",
                             reason=f"official outcome {outcome}"))
    return out


def gcpc_score(labels: Sequence[ItemLabel]) -> float | None:
    """Yes / decided. None when nothing is decided (all Abstain or no items)."""
    yes = sum(lab.label == "Yes" for lab in labels)
    decided = yes + sum(lab.label == "No" for lab in labels)
    return yes / decided if decided else None


def is_perfect(labels: Sequence[ItemLabel]) -> bool:
    """No item is No; the endpoint item is excluded (it is an outcome-using metric), Abstain is no violation."""
    return not any(lab.label == "No" for lab in labels if lab.item_id != ENDPOINT_ID)


def evidence_coverage(labels: Sequence[ItemLabel]) -> float | None:
    items = [lab for lab in labels if lab.item_id != ENDPOINT_ID]
    if not items:
        return None
    return sum(lab.label != "Abstain" for lab in items) / len(items)


def is_zero_evidence(labels: Sequence[ItemLabel]) -> bool:
    items = [lab for lab in labels if lab.item_id != ENDPOINT_ID]
    return all(lab.label == "Abstain" for lab in items)


class TrajectoryScores(BaseModel):
    n_items: int
    n_yes: int
    n_no: int
    n_abstain: int
    n_downgraded: int
    gcpc_plain: float | None
    gcpc_outcome: float | None
    perfect: bool | None
    evidence_coverage: float | None
    zero_evidence: bool


def score_trajectory(labels: Sequence[ItemLabel], outcome: str, *, pass_propagation: bool = True, endpoint: bool = True) -> TrajectoryScores:
    binary = outcome in ("PASS", "FAIL")
    after = apply_official_outcome(labels, outcome, pass_propagation=pass_propagation, endpoint=endpoint) if binary else None
    return TrajectoryScores(
        n_items=len(labels),
        n_yes=sum(lab.label == "Yes" for lab in labels),
        n_no=sum(lab.label == "No" for lab in labels),
        n_abstain=sum(lab.label == "Abstain" for lab in labels),
        n_downgraded=sum(lab.downgraded for lab in labels),
        gcpc_plain=gcpc_score(labels),
        gcpc_outcome=gcpc_score(after) if after is not None else None,
        perfect=is_perfect(after) if after is not None else None,
        evidence_coverage=evidence_coverage(labels),
        zero_evidence=is_zero_evidence(labels),
    )
