"""An arm that sends another arm's requests stores its calls once (issue 29): `gcpc_gate` differs from
`gcpc` only in the evidence gate, which post-processes replies, so its requests are `gcpc`'s (same
purpose, same keys), its call store is byte-identical, and the judge stage hard-links it to `gcpc`'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from judge_corpus import ingest_and_freeze

from gcpc.io import read_models
from gcpc.judging.models import Judgment
from gcpc.judging.stage import arm_spec, share_call_store
from gcpc.judging.stage import run as judge_stage

ROOT = Path(__file__).resolve().parents[1]


def test_requests_of_names_the_arm_whose_requests_an_arm_sends_and_composition_checks_it():
    from gcpc.errors import ConfigError
    from gcpc.experiment import check_arms

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert arm_spec(params, "gcpc").requests_of == "gcpc"
    assert arm_spec(params, "gcpc_gate").requests_of == "gcpc"
    for arm in ("generic", "tick", "tick_adapted", "holistic", "floor_steps", "floor_exit0"):
        assert arm_spec(params, arm).requests_of == arm, arm
    check_arms(params["arm"], "gcpc", "gcpc", ["gcpc"])
    # a change that does shape requests (another template) contradicts requests_of: composition stops
    params["arm"]["gcpc_gate"]["template"] = "prompts/judging/generic.jinja"
    with pytest.raises(ConfigError, match=r"arm.gcpc_gate.requests_of = 'gcpc', but the two arms differ in template"):
        check_arms(params["arm"], "gcpc", "gcpc", ["gcpc"])


def test_share_call_store_links_identical_files_only(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "llm_calls.jsonl").write_text("same\n")
    (b / "llm_calls.jsonl").write_text("same\n")
    (a / "usage_summary.json").write_text("{}\n")
    (b / "usage_summary.json").write_text("{ }\n")
    (b / "judgments.jsonl").write_text("x\n")
    (a / "judgments.jsonl").write_text("x\n")
    assert share_call_store(b, a) == ["llm_calls.jsonl"]
    assert (b / "llm_calls.jsonl").samefile(a / "llm_calls.jsonl")
    assert not (b / "usage_summary.json").samefile(a / "usage_summary.json")
    assert not (b / "judgments.jsonl").samefile(a / "judgments.jsonl")  # not a call-store file
    assert share_call_store(a, a) == []


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    ingest_and_freeze(root / "ingest", root / "synth")
    return root


def test_gcpc_gate_call_store_is_gcpcs_on_disk_and_its_judgments_its_own(corpus, tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["arm"] = {k: params["arm"][k] for k in ("gcpc", "gcpc_gate")}
    for arm in params["arm"].values():
        arm["template"] = str(ROOT / arm["template"])
    judge = tmp_path / "judge"
    gcpc = judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", judge / "gcpc", progress=False)
    gate = judge_stage(params, "gcpc_gate", corpus / "ingest", corpus / "synth", judge / "gcpc_gate", progress=False)
    for name in ("llm_calls.jsonl", "usage_summary.json"):
        assert (judge / "gcpc_gate" / name).samefile(judge / "gcpc" / name), name
    purposes = {json.loads(line)["purpose"] for line in (judge / "gcpc" / "llm_calls.jsonl").read_text().splitlines()}
    assert purposes == {"judgment:gcpc"}
    assert [j.request_key for j in gcpc] == [j.request_key for j in gate]
    assert {j.arm for j in read_models(judge / "gcpc_gate" / "judgments.jsonl", Judgment)} == {"gcpc_gate"}
    assert all(j.evidence_gate for j in gate) and not any(j.evidence_gate for j in gcpc)
