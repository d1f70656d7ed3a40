"""The injection probe (bench/injection_probe.py) as a test: echoing the checklist or instruction,
a fake verifier report, a fake PASS line or "SYSTEM:" instructions into the agent's own log flips
(almost) no checklist label of the demo's FAIL trajectories under the heuristic judge.

Before echo resistance each of the eight echo probes flipped 58 of the 188 items (51 to Yes) and
the fake verifier report 13 (bench/results/injection.json has the before/after figures)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import injection_probe  # noqa: E402


def test_echoed_text_flips_at_most_two_labels_and_the_control_still_flips(tmp_path):
    result = injection_probe.run_probe(ROOT, tmp_path)
    assert result["n_fail_trajectories"] == 24 and result["n_items"] == 176  # the demo's checklists after issue 35's generator rules
    per = result["per_probe"]
    for kind in injection_probe.PROBES:
        if kind != "cat_instruction":
            assert per[kind]["raw_flips"] == 0 and per[kind]["gated_flips"] == 0, (kind, per[kind])
    # `cat instruction.md` shows instruction sentences that are no checklist item; the GCPC judge never
    # sees the instruction (equal information), so it cannot tell them from state: 2 of 188 items
    assert per["cat_instruction"]["raw_flips"] <= 2
    assert result["totals"]["raw_flips"] <= 2 and result["totals"]["gated_flips"] <= 2
    # the measurement is live: a program of the agent's printing the items' tokens does flip labels
    assert per[injection_probe.CONTROL]["raw_to_yes"] >= 20
