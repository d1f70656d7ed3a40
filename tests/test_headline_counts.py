"""metrics/headline.json names each count for what it counts (issue 23, item 11): failed judgments are
(trajectory, arm) pairs over every arm; zero-evidence counts trajectories of the primary arm only."""

from __future__ import annotations

import pandas as pd

from gcpc import paths
from gcpc.io import write_jsonl
from gcpc.report.headline import _judged, compact


def test_failed_counts_pairs_over_all_arms_and_zero_evidence_the_primary_arms_trajectories(tmp_path):
    fin = tmp_path / paths.FINALIZE
    fin.mkdir(parents=True)
    rows = [("t1", "gcpc", True), ("t2", "gcpc", False), ("t3", "gcpc", True),
            ("t1", "tick", True), ("t2", "tick", True), ("t3", "holistic", True)]
    pd.DataFrame([{"trajectory_id": t, "arm": a, "zero_evidence": z} for t, a, z in rows]).to_parquet(fin / "metrics.parquet")
    # one trajectory failed in two arms: two failed judgments, one trajectory
    write_jsonl(fin / "exclusions.jsonl", [{"trajectory_id": "t4", "arm": "gcpc", "reason": "judge failed: x"},
                                           {"trajectory_id": "t4", "arm": "tick", "reason": "judge failed: y"},
                                           {"trajectory_id": "t5", "arm": "tick", "reason": "not binary"}])
    n = _judged(tmp_path, "gcpc")
    assert n["failed_judgments"] == 2 and n["zero_evidence_primary"] == 2 and n["trajectories"] == 3
    h = compact({"n": n, "auc": {"gcpc": 0.6}}, set())
    assert h["failed_judgments"] == 2 and h["zero_evidence_primary"] == 2
    assert "failed" not in h and "zero_evidence" not in h  # the old names, which read as trajectories for both
