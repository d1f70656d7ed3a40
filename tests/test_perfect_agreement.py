"""Perfect's agreement with the official outcome, as the paper states it (§3.4): over every trajectory
with a PASS/FAIL verdict, once with the endpoint item included and once excluded (issue 23, item 2)."""
from __future__ import annotations

import itertools

import pandas as pd
import pytest

from gcpc.analysis.rq1 import decided, perfect_agreement
from gcpc.judging.models import ItemLabel
from gcpc.report.build import perfect_section
from gcpc.scoring.metrics import ENDPOINT_ID, apply_official_outcome, is_perfect


def _labels(kinds: str) -> list[ItemLabel]:
    """One item per character: route `a` assertion / `g` generated, label from the case of the letter."""
    out = []
    for i, ch in enumerate(kinds):
        route = "assertion" if ch.lower() == "a" else "generated"
        label = "Yes" if ch.isupper() else "No"
        out.append(ItemLabel(item_id=f"i{i:02d}", route=route, label=label))
    return out


def _perfect_with_endpoint(labels: list[ItemLabel]) -> bool:
    """Perfect read literally with the endpoint item counted: no item No at all."""
    return not any(lab.label == "No" for lab in labels)


CASES = [("AG", "PASS"), ("aG", "PASS"), ("Ag", "PASS"), ("AG", "FAIL"), ("aG", "FAIL"), ("ag", "FAIL"), ("GG", "PASS"), ("gG", "FAIL")]


def _rows(cases, arm="gcpc", zero=()):
    recs = []
    for i, (kinds, outcome) in enumerate(cases):
        labs = apply_official_outcome(_labels(kinds), outcome)
        recs.append({"trajectory_id": f"t{i}", "task_id": f"task{i % 3}", "arm": arm, "outcome": outcome,
                     "perfect": is_perfect(labs), "zero_evidence": i in zero})
    return pd.DataFrame.from_records(recs)


def test_agreement_is_the_papers_quantity_with_and_without_endpoint():
    rows = decided(_rows(CASES))
    got = perfect_agreement(rows, None)["gcpc"]
    incl = excl = 0
    for kinds, outcome in CASES:
        labs = apply_official_outcome(_labels(kinds), outcome)
        assert labs[-1].item_id == ENDPOINT_ID
        incl += _perfect_with_endpoint(labs) == (outcome == "PASS")
        excl += is_perfect(labs) == (outcome == "PASS")
    assert got["agreement_endpoint_included"] == pytest.approx(incl / len(CASES))
    assert got["agreement_endpoint_excluded"] == pytest.approx(excl / len(CASES))
    # PASS: AG, aG (assertion set to Yes), GG Perfect, Ag not; FAIL: AG Perfect only without the endpoint
    assert (incl, excl) == (7, 6)
    assert got["n_pass"] == 4 and got["n_fail"] == 4
    # the extras stay available, labelled as such
    assert got["perfect_given_pass"] == 0.75 and got["not_perfect_given_fail"] == 0.75


def test_zero_evidence_rows_stay_in_both_agreements():
    """Perfect uses the official outcome, so zero-evidence rows stay (the paper excludes them from outcome-free
    analyses only, §4.1; issue 35, item 1). Before, row 3 (AG on FAIL) left both agreements: 6/7 each."""
    for zes in (None, 0.0):
        got = perfect_agreement(decided(_rows(CASES, zero=(3,))), zes)["gcpc"]
        assert got == perfect_agreement(decided(_rows(CASES)), zes)["gcpc"] | {"n_zero_evidence": 1}
        assert got["n_fail"] == 4
        assert got["agreement_endpoint_excluded"] == pytest.approx(6 / 8)
        assert got["agreement_endpoint_included"] == pytest.approx(7 / 8)


@pytest.mark.parametrize("cases", [list(c) for c in itertools.combinations(CASES, 3)][:12])
def test_endpoint_included_equals_perfect_and_pass(cases):
    rows = decided(_rows(cases))
    got = perfect_agreement(rows, None)["gcpc"]
    want = sum(_perfect_with_endpoint(apply_official_outcome(_labels(k), o)) == (o == "PASS") for k, o in cases) / len(cases)
    assert got["agreement_endpoint_included"] == pytest.approx(want)


def test_report_words_it_as_the_paper_and_labels_the_shares_as_extra():
    pa = perfect_agreement(decided(_rows(CASES)), None)
    text = "\n".join(perfect_section(pa))
    assert "| Arm | Agreement, endpoint included | Agreement, endpoint excluded | n (pass/fail) |" in text
    assert "| gcpc | 87.5% | 75.0% | 8 (4/4) |" in text
    assert "agrees with the official outcome on 97.6 % of trajectories with the endpoint included and 66.4 % with it excluded" in text
    # the old reading is never attributed to the paper
    assert "97.6 % of PASS" not in text and "66.4 % of FAIL" not in text
    extra = [line for line in text.splitlines() if "of PASS Perfect" in line]
    assert extra and all(line.startswith("Extra (not a figure of the paper)") for line in extra)
    assert perfect_section({}) == []
