"""Outputs do not hang on the last bit (issue 24): sums that BLAS would order by CPU are computed in a
fixed order, and every float a writer emits goes through gcpc.io.stable_float (docs/reproducibility.md)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from gcpc.io import FLOAT_DIGITS, float_text, stable_float, write_csv, write_json, write_jsonl, write_parquet

# Bootstrap sums of non-integer per-cluster values, printed exactly, and the same product through BLAS
# (the control: it must differ between kernels, or this machine cannot show the difference).
PROBE = r"""
import hashlib, json, numpy as np
from gcpc.analysis.stats import alpha_bootstrap, clustered_mean_difference, resample_counts
rng = np.random.default_rng(7)
n, k = 3000, 150
values, labels, clusters = rng.random(n) / 3, rng.random(n) < 0.5, rng.integers(0, k, n)
md = clustered_mean_difference(values, labels, clusters, n_resamples=500, seed=1)
data = rng.random((3, 400)) * 7 / 3
al = alpha_bootstrap(data, rng.integers(0, 60, 400), level="interval", n_resamples=500, seed=1)
w = resample_counts(k, 500, 1).astype(float)
agg = rng.random((k, 4)) / 3
print(json.dumps({"ours": hashlib.sha256(md.draws.tobytes() + repr(md.estimate).encode() + al.draws.tobytes()).hexdigest(),
                  "blas": hashlib.sha256((w @ agg).tobytes()).hexdigest()}))
"""


def _probe(**env: str) -> dict[str, str]:
    run = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OPENBLAS_CORETYPE names x86-64 kernels")
def test_bootstrap_sums_are_the_same_bits_under_another_blas_kernel():
    """The cause of the rq4.json difference: `w @ agg` through OpenBLAS gives other last bits with another
    CPU's kernel. OPENBLAS_CORETYPE=Prescott (SSE3, runs on any x86-64) stands in for another machine."""
    here, other = _probe(), _probe(OPENBLAS_CORETYPE="Prescott")
    if here["blas"] == other["blas"]:
        pytest.skip("this machine's OpenBLAS gives the same bits with the Prescott kernel: nothing to compare")
    assert here["ours"] == other["ours"], "a bootstrap sum depends on the BLAS kernel (see gcpc.analysis.stats.cluster_sums)"


def test_stable_float_rounds_to_the_stated_digits():
    assert FLOAT_DIGITS == 12
    # rq4.json's separation on two BLAS kernels (issue 24): one value after rounding
    assert stable_float(0.12394029581529564) == stable_float(0.12394029581529598) == 0.123940295815
    assert stable_float(0.28260869565217395) == stable_float(0.28260869565217406)
    assert stable_float(0.1 + 0.2) == 0.3 and stable_float(-2.5e-17) == -2.5e-17 and stable_float(0.0) == 0.0
    assert stable_float(1e308 * 10) == float("inf") and stable_float(float("nan")) != stable_float(float("nan"))
    assert float_text(0.1245000000000001, ".3f") == float_text(0.1244999999999999, ".3f")


def test_json_jsonl_and_csv_writers_round_floats(tmp_path):
    write_json(tmp_path / "a.json", {"x": 0.1 + 0.2, "y": [np.float64(2 / 3)], "n": 3})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": 0.3, "y": [0.666666666667], "n": 3}
    write_jsonl(tmp_path / "a.jsonl", [{"score": 1 / 7, "s": "0.30000000000000004"}])
    assert (tmp_path / "a.jsonl").read_text() == '{"s":"0.30000000000000004","score":0.142857142857}\n'  # strings untouched
    write_csv(pd.DataFrame({"v": [0.1 + 0.2, np.nan], "t": ["a", "b"]}), tmp_path / "a.csv", float_format="%.17g")
    assert (tmp_path / "a.csv").read_text() == "v,t\n0.29999999999999999,a\n,b\n"  # the float 0.3, printed with 17 digits


def test_parquet_has_no_library_versions_and_one_string_type(tmp_path):
    frame = pd.DataFrame({"b": ["x", None], "a": [0.1 + 0.2, None], "n": [1, 2]})
    write_parquet(tmp_path / "f.parquet", frame)
    meta = pq.read_metadata(tmp_path / "f.parquet")
    pandas_meta = json.loads(meta.metadata[b"pandas"])
    assert "creator" not in pandas_meta and "pandas_version" not in pandas_meta
    table = pq.read_table(tmp_path / "f.parquet")
    assert table.column_names == ["b", "a", "n"] and str(table.schema.field("b").type) == "string"
    assert table.column("a").to_pylist() == [0.1 + 0.2, None]  # every bit kept: later stages compute with it
    back = pd.read_parquet(tmp_path / "f.parquet")
    assert back["a"].tolist()[0] == 0.1 + 0.2 and back["n"].tolist() == [1, 2]
    first = (tmp_path / "f.parquet").read_bytes()
    write_parquet(tmp_path / "f.parquet", frame.copy())
    assert (tmp_path / "f.parquet").read_bytes() == first


def test_uv_lock_matches_pyproject():
    """uv.lock pins what pyproject.toml asks for (a dependency or extra added without `uv lock` is stale)."""
    import shutil

    from pathlib import Path

    uv = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if uv is None:
        pytest.skip("uv is not installed (README command 1 installs it)")
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([uv, "lock", "--check", "--offline"], cwd=root, capture_output=True, text=True, timeout=300)
    if run.returncode and "uv lock" not in run.stderr:
        pytest.skip(f"uv could not check the lock offline: {run.stderr.strip()[-300:]}")
    assert run.returncode == 0, f"uv.lock does not match pyproject.toml; run `uv lock` and commit uv.lock:\n{run.stderr[-1500:]}"
