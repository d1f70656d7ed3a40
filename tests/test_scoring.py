"""The paper's worked examples (§3.3-3.4) and the metric edge cases."""

import pytest

from gcpc.judging.models import ItemLabel
from gcpc.scoring.metrics import (
    ENDPOINT_ID,
    apply_official_outcome,
    evidence_coverage,
    gcpc_score,
    is_perfect,
    is_zero_evidence,
    score_trajectory,
)


def labels(*specs: tuple[str, str]) -> list[ItemLabel]:
    return [ItemLabel(item_id=f"i{n:02d}", route=route, label=label) for n, (label, route) in enumerate(specs, 1)]


def n_of(k: int, n: int, route: str = "generated") -> list[ItemLabel]:
    return labels(*([("Yes", route)] * k + [("No", route)] * (n - k)))


def test_nine_of_nine_with_official_fail():
    s = score_trajectory(n_of(9, 9), "FAIL")
    assert s.gcpc_plain == 1.0
    assert s.gcpc_outcome == pytest.approx(0.900)


@pytest.mark.parametrize(("k", "expected"), [(3, 0.300), (5, 0.500), (9, 0.900)])
def test_fail_runs_satisfying_k_of_nine(k, expected):
    assert score_trajectory(n_of(k, 9), "FAIL").gcpc_outcome == pytest.approx(expected)


def test_abstain_leaves_the_denominator():
    labs = labels(("Yes", "judge"), ("Abstain", "judge"), ("No", "judge"), ("Abstain", "generated"))
    assert gcpc_score(labs) == 0.5
    assert evidence_coverage(labs) == 0.5


def test_all_abstain_is_zero_evidence_and_undefined_plain():
    labs = labels(("Abstain", "judge"), ("Abstain", "assertion"))
    s = score_trajectory(labs, "FAIL")
    assert s.zero_evidence and s.gcpc_plain is None and s.evidence_coverage == 0.0
    assert s.gcpc_outcome == 0.0  # only the endpoint is decided
    assert score_trajectory(labs, "PASS").gcpc_outcome == 1.0  # assertion item -> Yes, endpoint Yes


def test_pass_propagates_to_assertion_items_only():
    labs = labels(("No", "assertion"), ("Abstain", "assertion"), ("No", "generated"), ("Abstain", "judge"))
    after = apply_official_outcome(labs, "PASS")
    assert [a.label for a in after] == ["Yes", "Yes", "No", "Abstain", "Yes"]
    assert after[-1].item_id == ENDPOINT_ID
    fail_after = apply_official_outcome(labs, "FAIL")
    assert [a.label for a in fail_after] == ["No", "Abstain", "No", "Abstain", "No"]


def test_perfect_ignores_the_endpoint_and_abstain():
    labs = labels(("Yes", "generated"), ("Abstain", "judge"))
    assert is_perfect(apply_official_outcome(labs, "FAIL"))  # endpoint No does not count
    assert not is_perfect(apply_official_outcome(labels(("No", "generated")), "FAIL"))
    # a PASS run whose only No is an assertion item becomes perfect after propagation
    assert score_trajectory(labels(("No", "assertion"), ("Yes", "judge")), "PASS").perfect


def test_switches_for_the_two_by_two():
    labs = labels(("No", "assertion"), ("Yes", "generated"))
    assert score_trajectory(labs, "PASS", pass_propagation=False, endpoint=False).gcpc_outcome == 0.5
    assert score_trajectory(labs, "PASS", pass_propagation=True, endpoint=False).gcpc_outcome == 1.0
    assert score_trajectory(labs, "PASS", pass_propagation=False, endpoint=True).gcpc_outcome == pytest.approx(2 / 3)


def test_non_binary_outcome_has_no_outcome_scores():
    s = score_trajectory(n_of(2, 4), "other")
    assert s.gcpc_plain == 0.5 and s.gcpc_outcome is None and s.perfect is None
    with pytest.raises(ValueError, match="PASS/FAIL"):
        apply_official_outcome(n_of(1, 1), "other")


def test_zero_evidence_flag_needs_all_abstain():
    assert not is_zero_evidence(labels(("Abstain", "judge"), ("No", "judge")))
