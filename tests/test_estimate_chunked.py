"""The cost estimate reads trajectories chunk by chunk, as the judge stage does (all at once took 15 GB at
the paper's 20,818 trajectories and kept growing), and chunking changes no figure: a one-trajectory chunk
gives the same estimate as one chunk for all."""

from __future__ import annotations

from pathlib import Path

import yaml
from judge_corpus import ingest_and_freeze

import gcpc.judging.estimate as est

ROOT = Path(__file__).resolve().parents[1]


def test_estimate_is_the_same_whatever_the_chunk_size(tmp_path, monkeypatch):
    ingest_and_freeze(tmp_path / "ingest", tmp_path / "synth")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["judge"] = yaml.safe_load((ROOT / "conf" / "llm" / "gpt-5-4-mini.yaml").read_text())
    for arm in params["arm"].values():
        arm["template"] = str(ROOT / arm["template"])
    arms = ["gcpc", "gcpc_gate", "tick", "holistic"]
    whole = est.estimate(params, tmp_path / "ingest", tmp_path / "synth", arms)
    monkeypatch.setattr(est, "CHUNK_TRAJECTORIES", 1)
    chunked = est.estimate(params, tmp_path / "ingest", tmp_path / "synth", arms)
    assert chunked == whole
    assert whole["trajectories"] > 1 and whole["arms"]["tick"]["requests"] > whole["trajectories"]
    assert whole["arms"]["gcpc_gate"]["new_calls"] == 0
