"""bench_store.py --footprint counts each file on disk once (a hard-linked output and its DVC cache object
are one file) and relates the total to the raw agent logs the ingest read (issue 29's storage ratio)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_footprint_counts_linked_files_once_and_writes_its_result(tmp_path):
    proj = tmp_path / "p"
    ingest = proj / "data" / "processed" / "ingest"
    ingest.mkdir(parents=True)
    (ingest / "trajectories.jsonl").write_text(json.dumps({"size": {"raw_bytes": 1000}}) + "\n")
    cache = proj / ".dvc" / "cache" / "files"
    cache.mkdir(parents=True)
    (proj / "data" / "processed" / "judge").mkdir()
    big = proj / "data" / "processed" / "judge" / "calls.jsonl"
    big.write_bytes(b"x" * 700)
    os.link(big, cache / "obj")  # the output and its cache object: one file
    (proj / "reports" / "audit" / "t").mkdir(parents=True)
    (proj / "reports" / "audit" / "t" / "a.html").write_bytes(b"y" * 300)
    out = tmp_path / "fp.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_store.py"), "--footprint", str(proj), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    traj_bytes = (ingest / "trajectories.jsonl").stat().st_size
    assert result["written_bytes"] == 700 + 300 + traj_bytes
    assert result["parts"][".dvc/cache"] == {"files": 1, "apparent_bytes": 700, "bytes_not_counted_before": 0}
    assert result["raw_agent_log_bytes"] == 1000 and result["audit_bytes_per_trajectory"] == 300
    assert result["target_met"] is (result["written_bytes"] <= 2000)
