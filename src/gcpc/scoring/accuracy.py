"""Judge accuracy where ground truth exists: assertion-route items against per-test verifier results.

An assertion-route item references verifier tests. When the trajectory's per-test results
(CTRF, Terminal-Bench `parser_results`) cover its references, they say what the item's label
should be: Yes when every referenced test passed, No when any failed (`metrics.per_test_truth`).
This compares the judge's plain labels (log only, before the official-outcome step) with that
truth. Abstain is no agreement and no disagreement: it is counted and reported on its own, and
agreement is over decided (Yes/No) labels. The same is reported for the labels before the
evidence gate (`raw`) and split by official outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gcpc.corpus.models import Trajectory
from gcpc.judging.models import Judgment
from gcpc.scoring.metrics import per_test_truth

LABELS = ("Yes", "No", "Abstain")


def _tally(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Agreement figures from (truth, label) pairs."""
    confusion = {t: {lab: 0 for lab in LABELS} for t in ("Yes", "No")}
    for truth, label in pairs:
        confusion[truth][label] += 1
    n = sum(sum(row.values()) for row in confusion.values())
    n_abstain = confusion["Yes"]["Abstain"] + confusion["No"]["Abstain"]
    n_decided = n - n_abstain
    n_agree = confusion["Yes"]["Yes"] + confusion["No"]["No"]

    def share(k: int, d: int) -> float | None:
        return round(k / d, 6) if d else None

    def per_truth(t: str) -> dict[str, Any]:
        row = confusion[t]
        decided = row["Yes"] + row["No"]
        return {"n": sum(row.values()), "n_decided": decided, "n_abstain": row["Abstain"],
                "agreement": share(row[t], decided)}

    return {
        "n": n, "n_decided": n_decided, "n_abstain": n_abstain, "n_agree": n_agree,
        "agreement": share(n_agree, n_decided),
        "abstain_share": share(n_abstain, n),
        "agreement_counting_abstain_as_wrong": share(n_agree, n),
        "truth_yes": per_truth("Yes"), "truth_no": per_truth("No"),
        "confusion": confusion,
    }


def item_truth_rows(judgments: Sequence[Judgment], trajectories: dict[str, Trajectory]) -> list[dict[str, Any]]:
    """One row per (trajectory, arm, assertion-route item) whose per-test results give a truth."""
    rows = []
    for j in judgments:
        if j.status != "ok":
            continue
        traj = trajectories[j.trajectory_id]
        for lab in j.labels:
            truth = per_test_truth(lab, traj.test_results)
            if truth is None:
                continue
            rows.append({"trajectory_id": j.trajectory_id, "task_id": j.task_id, "arm": j.arm, "item_id": lab.item_id,
                         "outcome": traj.outcome.status, "truth": truth, "label": lab.label,
                         "raw_label": lab.raw_label or lab.label})
    return rows


def judge_accuracy(judgments: Sequence[Judgment], trajectories: dict[str, Trajectory]) -> dict[str, Any]:
    rows = item_truth_rows(judgments, trajectories)
    arms: dict[str, Any] = {}
    for arm in sorted({j.arm for j in judgments}):
        ok = [j for j in judgments if j.arm == arm and j.status == "ok"]
        assertion = [(j, lab) for j in ok for lab in j.labels if lab.route == "assertion"]
        mine = [r for r in rows if r["arm"] == arm]
        if not assertion:
            arms[arm] = {"applicable": False, "why": "the arm labels no assertion-route items"}
            continue
        entry: dict[str, Any] = {
            "applicable": True,
            "n_trajectories": len(ok),
            "n_trajectories_with_truth": len({r["trajectory_id"] for r in mine}),
            "n_tasks_with_truth": len({r["task_id"] for r in mine}),
            "n_assertion_items": len(assertion),
            "n_assertion_items_without_truth": len(assertion) - len(mine),
            "plain": _tally((r["truth"], r["label"]) for r in mine),
            "raw": _tally((r["truth"], r["raw_label"]) for r in mine),
            "by_outcome": {o: _tally((r["truth"], r["label"]) for r in mine if r["outcome"] == o)
                           for o in sorted({r["outcome"] for r in mine})},
        }
        arms[arm] = entry
    return {
        "definition": ("assertion-route items whose referenced tests all have per-test results (or one failed): truth Yes "
                       "when all passed, No when any failed; compared with the plain judge label (after the evidence "
                       "gate, before the official-outcome step) and the raw label (before the gate); agreement is over "
                       "decided labels, Abstain reported separately"),
        "arms": arms,
    }


def compact_accuracy(result: dict[str, Any]) -> dict[str, Any]:
    """The headline figures for metrics/finalize.json."""
    out = {}
    for arm, e in result["arms"].items():
        if e.get("applicable"):
            out[arm] = {"n_items": e["plain"]["n"], "agreement": e["plain"]["agreement"],
                        "abstain_share": e["plain"]["abstain_share"], "agreement_raw": e["raw"]["agreement"]}
    return out
