"""Refusals are per-request outcomes; a failure budget stops a stage only when many fail; no stage
downstream of a judge crashes on an arm with zero judged trajectories; model answers are scrubbed
of API keys in every output, and the scrubbed record still replays to the same judgments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeservers import FakeOpenAI, Fault
from judge_corpus import ingest_and_freeze

from gcpc.analysis.rq1 import rq1, rq1_table_markdown
from gcpc.io import read_models
from gcpc.judging.models import Judgment
from gcpc.judging.stage import run as judge_stage
from gcpc.llm.budget import FailureBudgetExceeded, check_failure_budget
from gcpc.scoring.finalize import run as finalize_stage

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-BUDGET-98765"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    ingest_and_freeze(root / "ingest", root / "synth")
    return root


def params_for(server: FakeOpenAI, **judge) -> dict:
    cfg = {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048, "concurrency": 4,
           "timeout_s": 5, "base_url": server.url + "/v1", "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02},
           **judge}
    return {"judge": cfg, "judging": {"max_event_chars": 4000}, "scoring": {},
            "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja")}}}


def test_budget_names_the_most_common_error_and_an_example_key():
    fails = [("k1", "refused: HTTP 400 context length 9000"), ("k2", "refused: HTTP 400 context length 9100"),
             ("k3", "invalid output: bad")]
    with pytest.raises(FailureBudgetExceeded, match=r"3/10 requests failed.*most common error \(2 of 3\).*request k1"):
        check_failure_budget(fails, 10, 0.05, stage="judge[x]")
    assert "1/40 requests failed" in check_failure_budget(fails[:1], 40, 0.05, stage="judge[x]")


def test_one_refusal_is_excluded_and_the_stage_goes_on(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI() as server:
        first = {"n": 0}

        def refuse_one(body: str):
            if '"model"' in body and first["n"] == 0:
                first["n"] += 1
                return Fault(kind="status", status=400, message="maximum context length exceeded (context_length_exceeded)")
            return None

        server.fault_rules.append(refuse_one)
        params = params_for(server, concurrency=1, failure_budget=0.1)
        judgments = judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", tmp_path / "judge" / "gcpc", progress=False)
    failed = [j for j in judgments if j.status == "failed"]
    assert len(failed) == 1 and failed[0].error.startswith("refused: ") and "context_length_exceeded" in failed[0].error
    assert sum(j.status == "ok" for j in judgments) >= 10


def test_all_refused_exits_over_budget_and_downstream_stages_still_run(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI() as server:
        server.fault_rules.append(lambda body: Fault(kind="status", status=400, message="flagged by the content filter"))
        params = params_for(server)
        with pytest.raises(FailureBudgetExceeded, match=r"judge\[gcpc\]: (\d+)/\1 requests failed.*content filter.*e\.g\. request [0-9a-f]{64}"):
            judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", tmp_path / "judge" / "gcpc", progress=False)
        asked = server.model_calls + len([r for r in server.requests if r["route"] == "POST /v1/chat/completions"])
    judgments = read_models(tmp_path / "judge" / "gcpc" / "judgments.jsonl", Judgment)  # written before the stage exits
    assert judgments and all(j.status == "failed" for j in judgments) and asked == len(judgments)
    metrics = finalize_stage(params, corpus / "ingest", tmp_path / "judge", tmp_path / "finalize", tmp_path / "finalize.json")
    assert len(metrics) == 0 and "arm" in metrics.columns
    summary = json.loads((tmp_path / "finalize.json").read_text())
    assert summary["n_excluded"] == len(judgments)
    result = rq1(metrics, {})
    assert result["n_trajectories"] == 0 and result["arms"] == {}
    assert rq1_table_markdown(result).startswith("| Arm |")


def test_a_key_inside_a_model_answer_is_scrubbed_and_the_record_replays(corpus, tmp_path, monkeypatch):
    from fakeservers.base import default_responder

    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def leaky(ctx):
        answer = json.loads(default_responder(ctx))
        for v in answer.get("verdicts", []):
            v["reason"] = f"the environment shows OPENAI_API_KEY={KEY}"
        return json.dumps(answer)

    with FakeOpenAI(responder=leaky) as server:
        params = params_for(server)
        out = tmp_path / "judge" / "gcpc"
        judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", out, progress=False)
    for path in out.iterdir():
        assert KEY.encode() not in path.read_bytes(), path
    recorded = (out / "judgments.jsonl").read_bytes()
    assert b"[REDACTED]" in recorded
    (out / "judgments.jsonl").unlink()
    replay = dict(params, judge={**params["judge"], "mode": "replay"})
    judge_stage(replay, "gcpc", corpus / "ingest", corpus / "synth", out, progress=False)
    assert (out / "judgments.jsonl").read_bytes() == recorded
