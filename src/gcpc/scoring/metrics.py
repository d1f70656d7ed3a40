"""GCPC scoring (paper §3.3-3.4): the official-outcome step and the per-trajectory metrics.

Plain GCPC uses the judge's log-only labels. "GCPC with official outcome" first applies the
deterministic official-outcome step: on PASS every assertion-route item becomes Yes; then one
virtual endpoint item is added, Yes on PASS and No on FAIL. Abstain never enters a denominator.

Extension, off by default (`scoring.per_test_propagation`) and reported as its own variant
(`gcpc_per_test`): per-test propagation sets each assertion-route item from the per-test verifier
results of its referenced tests (Yes when all passed, No when any failed), on PASS and FAIL alike.
The same per-test truth is what judge accuracy compares plain labels with (accuracy.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from gcpc.corpus.models import EVIDENCE_KINDS, Event
from gcpc.judging.models import ItemLabel
from gcpc.llm.schemas import Label

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


NO_ABSTAIN_KINDS = ("holistic", "tick", "floor")
"""Arm kinds whose answers cannot be Abstain (floors: no answers at all)."""

ACTION_FREE_EXTENSION_KINDS = ("holistic", "tick")
"""The paper's arms that cannot abstain. The paper's rule (every item Abstain) never marks them zero-evidence;
the named extension `action_free_zero_evidence` (`scoring.action_free_zero_evidence: true`) marks their
action-free logs instead. Floors (a project extension) always read zero evidence off the log."""


def action_free_rule(scoring: dict[str, Any] | None) -> bool:
    """Whether the extension `action_free_zero_evidence` is on (`scoring.action_free_zero_evidence`; off by default)."""
    value = (scoring or {}).get("action_free_zero_evidence", False)
    if not isinstance(value, bool):
        raise ValueError(f"params.yaml: scoring.action_free_zero_evidence must be true or false, got {value!r}")
    return value


def log_has_evidence(events: Sequence[Event]) -> bool:
    """Does the judge-visible log hold anything that counts as evidence (a non-empty tool output or file content)?"""
    return any(e.kind in EVIDENCE_KINDS and e.text.strip() for e in events)


ACTION_FREE_REASON = "action-free log: no tool output or file content to judge from"


def zero_evidence_reason(kind: str, labels: Sequence[ItemLabel], events: Sequence[Event], *,
                         action_free: bool = False) -> str | None:
    """Why a judged trajectory is zero-evidence (paper §4.1: excluded from outcome-free analyses), or None.

    Checklist-like arms: every item Abstain (the paper's rule). Holistic and TICK cannot abstain, so the
    paper's rule never excludes them (the default); with ``action_free`` (the named extension
    `action_free_zero_evidence`) an action-free log, no tool output or file content to decide from, is
    zero-evidence for them too. Floor arms (no model) always use the log rule.
    """
    if kind == "floor" or (action_free and kind in ACTION_FREE_EXTENSION_KINDS):
        return None if log_has_evidence(events) else ACTION_FREE_REASON
    if kind in NO_ABSTAIN_KINDS:
        return None
    if is_zero_evidence(labels):
        return "zero evidence: every item Abstain" if labels else "zero evidence: no items judged"
    return None


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


# --- Per-test verifier results: ground truth for assertion-route items, and the per-test propagation variant.

PASSED, FAILED = "passed", "failed"
_PASS_STATUSES = {"passed", "pass", "ok", "success"}
_FAIL_STATUSES = {"failed", "fail", "error", "errored", "broken", "failure"}
_PARAMS = re.compile(r"\[.*\]$")


def normalize_test_status(status: str | None) -> str | None:
    """'passed' / 'failed', or None for statuses that say nothing about the requirement (skipped, pending, ...)."""
    s = (status or "").strip().lower()
    return PASSED if s in _PASS_STATUSES else FAILED if s in _FAIL_STATUSES else None


def _split_test_id(test_id: str) -> tuple[str | None, str]:
    """(file or None, function name without parameters) of 'file.py::Class::test_x[p]' or 'test_x'."""
    parts = test_id.split("::")
    file = parts[0] if len(parts) > 1 else None
    return file, _PARAMS.sub("", parts[-1])


def verifier_test_status(ref: str, results: dict[str, str]) -> str | None:
    """Status of one referenced verifier test in a trajectory's per-test results.

    Matching, first rule that finds anything wins: the exact id; ids equal once parameters are
    dropped (a reference to `test_x[p]` matches a collapsed `test_x` result and vice versa);
    when either side names no file (Terminal-Bench `parser_results` are bare names), the function
    name. Several matches (parametrized cases): failed if any failed, passed if all passed.
    """
    if ref in results:
        matched = [results[ref]]
    else:
        base = _PARAMS.sub("", ref)
        matched = [s for k, s in results.items() if _PARAMS.sub("", k) == base]
        if not matched:
            file, name = _split_test_id(ref)
            matched = [s for k, s in results.items()
                       if _split_test_id(k)[1] == name and (file is None or _split_test_id(k)[0] is None)]
    statuses = [normalize_test_status(s) for s in matched]
    if FAILED in statuses:
        return FAILED
    if statuses and all(s == PASSED for s in statuses):
        return PASSED
    return None


def per_test_truth(label: ItemLabel, results: dict[str, str]) -> Label | None:
    """What the verifier's per-test results say about an assertion-route item: Yes when every
    referenced test passed, No when any failed, None when the item is not assertion-route, has no
    references, or some reference has no result (and none failed)."""
    if label.route != "assertion" or not label.test_refs or not results:
        return None
    statuses = [verifier_test_status(ref, results) for ref in label.test_refs]
    if FAILED in statuses:
        return "No"
    if all(s == PASSED for s in statuses):
        return "Yes"
    return None


def apply_per_test(labels: Sequence[ItemLabel], results: dict[str, str]) -> list[ItemLabel]:
    """Per-test propagation (extension, off by default): assertion-route items take the label their
    referenced tests' results give them, on PASS and FAIL alike; other items are unchanged."""
    out = []
    for lab in labels:
        truth = per_test_truth(lab, results)
        if truth is not None and truth != lab.label:
            lab = lab.model_copy(update={"label": truth, "reason": f"per-test verifier results: referenced tests {'passed' if truth == 'Yes' else 'failed'}"})
        out.append(lab)
    return out


def ungated(labels: Sequence[ItemLabel]) -> list[ItemLabel]:
    """The labels as the judge gave them, before the evidence gate."""
    return [lab.model_copy(update={"label": lab.raw_label}) if lab.raw_label and lab.raw_label != lab.label else lab for lab in labels]


class VariantScores(BaseModel):
    """One scoring variant of one judged trajectory."""

    variant: Literal["plain", "plain_ungated", "outcome", "per_test"]
    score: float | None
    perfect: bool | None
    n_yes: int
    n_no: int
    n_abstain: int


def _variant(name: str, labels: Sequence[ItemLabel] | None) -> VariantScores:
    """Scores of one variant; every field but the counts is None when the variant is undefined (labels None)."""
    labs = list(labels or [])
    return VariantScores(variant=name, score=gcpc_score(labs) if labels is not None else None,
                         perfect=is_perfect(labs) if labels is not None else None,
                         n_yes=sum(lab.label == "Yes" for lab in labs), n_no=sum(lab.label == "No" for lab in labs),
                         n_abstain=sum(lab.label == "Abstain" for lab in labs))


def score_variants(
    labels: Sequence[ItemLabel],
    outcome: str,
    *,
    test_results: dict[str, str] | None = None,
    pass_propagation: bool = True,
    endpoint: bool = True,
    per_test: bool = False,
) -> dict[str, VariantScores]:
    """Every variant of a checklist-like judgment:

    * plain: the judge's labels after the evidence gate (log only);
    * plain_ungated: the labels before the gate (equals plain when the arm's gate is off);
    * outcome: the official-outcome step (§3.3); undefined unless the outcome is PASS / FAIL;
    * per_test: the official-outcome step, then per-test propagation (a referenced test's own
      result overrides PASS propagation); computed only when `per_test` is on and the outcome
      is PASS / FAIL (None otherwise). With consistent data (PASS = every test passed) the order
      does not matter.
    `perfect` of the plain variants is "no item No"; of the outcome variants, after the step.
    """
    binary = outcome in ("PASS", "FAIL")
    out = {"plain": _variant("plain", labels), "plain_ungated": _variant("plain_ungated", ungated(labels))}
    after = apply_official_outcome(labels, outcome, pass_propagation=pass_propagation, endpoint=endpoint) if binary else None
    out["outcome"] = _variant("outcome", after)
    propagated = None
    if per_test and binary:
        propagated = apply_per_test(apply_official_outcome(labels, outcome, pass_propagation=pass_propagation, endpoint=endpoint),
                                    test_results or {})
    out["per_test"] = _variant("per_test", propagated)
    return out
