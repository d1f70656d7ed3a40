"""Session fixtures shared by several test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def demo_pipeline(tmp_path_factory):
    """(work dir, params) with the demo corpus's pipeline outputs up to finalize, built once per session.

    Tests may add files under the work dir but must not change data/processed.
    """
    from demo_outputs import build_demo_outputs

    work = tmp_path_factory.mktemp("demo-pipeline")
    return work, build_demo_outputs(work)
