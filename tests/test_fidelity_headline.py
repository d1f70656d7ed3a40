"""Issue 10 acceptance: the headline compares arms on equal information (§4.1) with zero-evidence excluded (§4)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gcpc.analysis.common import OUTCOME_USING_SCORES
from gcpc.analysis.rq1 import _delta_rows, resolve_config, rq1

ROOT = Path(__file__).resolve().parents[1]
FAST = {"bootstrap": {"n_resamples": 40, "seed": 0, "ci": 0.95}}


def _metrics(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(6):
        for k in range(6):
            outcome = "PASS" if k % 2 else "FAIL"
            for arm, kind in (("gcpc", "checklist"), ("gcpc_gate", "checklist"), ("generic", "generic"),
                              ("tick", "tick"), ("holistic", "holistic")):
                zero = arm in ("gcpc", "gcpc_gate", "generic") and k == 0 and t < 2
                plain = np.nan if zero else float(rng.random())
                rows.append({"trajectory_id": f"t{t}-{k}", "task_id": f"t{t}", "condition": "c", "outcome": outcome, "arm": arm,
                             "arm_kind": kind, "gcpc_plain": plain,
                             "gcpc_outcome": np.nan if arm == "holistic" else float(rng.random()),
                             "perfect": bool(rng.random() < 0.5), "zero_evidence": zero})
    return pd.DataFrame(rows)


def _score_of(side: str) -> str:
    return side.rsplit(":", 1)[1]


def assert_equal_information(rows: list[tuple[str, list[str]]]) -> None:
    """Every paired row: an outcome-using score only ever meets another outcome-using score."""
    assert rows
    for kind, cells in rows:
        a, b = _score_of(cells[0]), _score_of(cells[1])
        if kind.startswith(("headline", "equal information")):
            assert a not in OUTCOME_USING_SCORES and b not in OUTCOME_USING_SCORES, (kind, cells)
        assert (a in OUTCOME_USING_SCORES) == (b in OUTCOME_USING_SCORES), (kind, cells)


def test_headline_rows_never_difference_an_outcome_score_against_an_outcome_blind_arm():
    res = rq1(_metrics(), FAST)
    rows = _delta_rows(res)
    assert_equal_information(rows)
    head = [r for k, r in rows if k.startswith("headline")]
    assert len(head) == 1 and head[0][:2] == ["gcpc:gcpc_plain", "holistic:gcpc_plain"]
    refs = [d["reference_arm"] for d in res["reference"]["deltas"]]
    assert refs == ["holistic", "generic", "tick"]  # tick_adapted is absent: reported as not compared
    assert [m["arm"] for m in res["reference"]["missing"]] == ["tick_adapted"]


def test_headline_pairs_on_shared_trajectories_without_zero_evidence():
    m = _metrics(1)
    res = rq1(m, FAST)
    d = res["reference"]["deltas"][0]
    ze = set(m.loc[m["zero_evidence"], "trajectory_id"])
    assert d["n"] == m["trajectory_id"].nunique() - len(ze)
    assert {r["trajectory_id"] for r in res["zero_evidence_excluded"]} == ze


@pytest.mark.parametrize("key", ["headline_score", "reference_score"])
@pytest.mark.parametrize("score", OUTCOME_USING_SCORES)
def test_an_outcome_using_headline_score_is_refused(key, score):
    with pytest.raises(ValueError, match="equal information"):
        resolve_config({key: score})


def test_the_checker_itself_catches_a_mixed_row():
    bad = [("headline: GCPC (log only) − reference", ["gcpc:gcpc_outcome", "holistic:gcpc_plain", "0.3", "", "", "", ""])]
    with pytest.raises(AssertionError):
        assert_equal_information(bad)


def _table_rows(md: str) -> list[tuple[str, list[str]]]:
    out = []
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and ":" in cells[1] and not cells[0].startswith("Comparison"):
            out.append((cells[0], cells[1:]))
    return out


def test_committed_demo_report_headline_is_plain_gcpc_minus_holistic():
    paired = (ROOT / "figures" / "rq1_paired.md").read_text(encoding="utf-8")
    rows = _table_rows(paired)
    assert_equal_information(rows)
    head = [r for k, r in rows if k.startswith("headline")]
    assert len(head) == 1 and head[0][:2] == ["gcpc:gcpc_plain", "holistic:gcpc_plain"]
    report = (ROOT / "figures" / "report.md").read_text(encoding="utf-8")
    assert re.search(r"\*\*Headline\.\*\* ΔAUC gcpc:gcpc_plain − holistic:gcpc_plain = ", report)
    assert "zero-evidence (trajectory, arm) rows excluded, as in the paper" in report
