"""Suite-wide settings and session fixtures shared by several test modules.

The shared call cache (gcpc.llm.shared_cache) lives outside the workspace and would let one test's
recorded answers serve another's requests (and a developer's ~/.cache serve the suite), so it is off
for every test and every subprocess a test starts; tests of the cache switch it on with their own
folder (GCPC_CACHE_DIR or `cache_dir`).
"""

from __future__ import annotations

import os

import pytest

os.environ["GCPC_CACHE_DIR"] = "off"


@pytest.fixture(scope="session")
def demo_pipeline(tmp_path_factory):
    """(work dir, params) with the demo corpus's pipeline outputs up to finalize, built once per session.

    Tests may add files under the work dir but must not change data/processed.
    """
    from demo_outputs import build_demo_outputs

    work = tmp_path_factory.mktemp("demo-pipeline")
    return work, build_demo_outputs(work)
