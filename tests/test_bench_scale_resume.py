"""bench_scale --resume continues an interrupted --keep run: the stages already measured are kept, not run again
(the 20,818-trajectory run takes over an hour; one failing stage must not cost the rest)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_scale.py"), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_resume_keeps_measured_stages_and_runs_the_rest(tmp_path):
    keep = tmp_path / "k"
    _run("--n", "6", "--keep", str(keep), "--out", str(tmp_path / "a.json"), "--stages", "ingest", "synthesize")
    first = json.loads((tmp_path / "a.json").read_text())
    _run("--n", "6", "--keep", str(keep), "--out", str(tmp_path / "b.json"), "--resume",
         "--stages", "ingest", "synthesize", "validate")
    second = json.loads((tmp_path / "b.json").read_text())
    assert sorted(second["stages"]) == ["ingest", "synthesize", "validate"]
    assert second["stages"]["ingest"] == first["stages"]["ingest"]  # measured once, kept
    assert second["corpus"] == first["corpus"] and second["command"].endswith("--resume")
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_scale.py"), "--n", "7", "--keep", str(keep),
                           "--resume", "--out", str(tmp_path / "c.json")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0 and "is a run with n=6" in proc.stdout + proc.stderr
