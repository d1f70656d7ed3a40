"""bench/bench_repro.py: the PATH wrapper records each stage command's wall and CPU time and exit status.

The whole benchmark (a cold `dvc repro` in a clone, minutes) is not run here; the wrapper and the
parsing of what it writes are, because a wrapper that records nothing (CPU 0 from a subshell's
`times`) would make every figure of the benchmark wrong without failing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_repro  # noqa: E402

BUSY = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.3: pass')"


def _wrapped(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    wrapper = tmp_path / "python"
    wrapper.write_text(bench_repro.WRAPPER, encoding="utf-8")
    wrapper.chmod(0o755)
    env = dict(os.environ, GCPC_BENCH_PYTHON=sys.executable, GCPC_BENCH_LOG=str(tmp_path / "log.tsv"))
    return subprocess.run([str(wrapper), *args], env=env, capture_output=True, text=True)


def test_wrapper_records_wall_cpu_and_status(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("the wrapper is a bash script; bash is not available here")
    assert _wrapped(tmp_path, "-c", BUSY).returncode == 0
    failed = _wrapped(tmp_path, "-c", "import sys; print('out'); sys.exit(3)")
    assert failed.returncode == 3 and failed.stdout == "out\n"  # status and output pass through
    rows = bench_repro.read_log(tmp_path / "log.tsv", {f"python -c {BUSY}": "busy"})
    assert [r["stage"] for r in rows] == ["busy", "?"]
    assert [r["rc"] for r in rows] == [0, 3]
    busy = rows[0]
    assert busy["cpu_s"] >= 0.25  # the child's CPU, not the (empty) CPU of a subshell
    assert busy["wall_s"] >= busy["cpu_s"] * 0.9
    assert rows[0]["start_s"] == 0.0 and rows[1]["start_s"] >= busy["wall_s"]


def test_bash_times_fields():
    assert bench_repro._seconds("0m0.000s") == 0.0
    assert bench_repro._seconds("2m3.250s") == pytest.approx(123.25)
    with pytest.raises(ValueError, match="times"):
        bench_repro._seconds("1.5")


def test_log_with_a_missing_times_block_is_an_error(tmp_path):
    log = tmp_path / "log.tsv"
    log.write_text("1.0\t2.0\t0\t-m gcpc.corpus\n0m0.0s 0m0.0s\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3 lines per stage"):
        bench_repro.read_log(log, {})

