"""Suite-wide settings and session fixtures shared by several test modules.

The shared call cache (gcpc.llm.shared_cache) lives outside the workspace and would let one test's
recorded answers serve another's requests (and a developer's ~/.cache serve the suite), so it is off
for every test and every subprocess a test starts; tests of the cache switch it on with their own
folder (GCPC_CACHE_DIR or `cache_dir`).

Bytecode: where PYTHONDONTWRITEBYTECODE is set (this machine, and CI's fresh `uv sync`, which compiles
nothing), every process the suite starts (DVC, each stage, fake-server workers: several hundred) would
compile pandas, scipy, the SDKs and gcpc from source again, 2-5 CPU-s each. As the benchmarks do
(bench/bench_judge_stage.py), the suite caches bytecode in a temporary folder of its own
(PYTHONPYCACHEPREFIX, removed at exit), written by this process and every subprocess: nothing is written
into the environment or the working tree, and a module's code is the same whether compiled or cached.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

os.environ["GCPC_CACHE_DIR"] = "off"

if (sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE")) and not os.environ.get("PYTHONPYCACHEPREFIX"):
    _pycache = tempfile.mkdtemp(prefix="gcpc-tests-pycache-")
    atexit.register(shutil.rmtree, _pycache, True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = _pycache
    sys.dont_write_bytecode, sys.pycache_prefix = False, _pycache


@pytest.fixture(scope="session")
def demo_pipeline(tmp_path_factory):
    """(work dir, params) with the demo corpus's pipeline outputs up to finalize, built once per session.

    Tests may add files under the work dir but must not change data/processed.
    """
    from demo_outputs import build_demo_outputs

    work = tmp_path_factory.mktemp("demo-pipeline")
    return work, build_demo_outputs(work)
