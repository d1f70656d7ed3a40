"""Usage tells the truth (issue 36, item 5): against a local fake OpenAI API with the shared call cache on,
`gcpc_gate` (which sends `gcpc`'s requests) judged from a warm cache sends no request, and its usage says so:
the answers it took from the shared cache are reported apart (`from_shared_cache`), never as its own calls,
tokens or HTTP requests, and the run's headline total counts each provider call once."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeservers import FakeOpenAI
from judge_corpus import frozen_corpus

from gcpc.judging.stage import run as judge_stage
from gcpc.llm.store import adopted_path, read_adopted
from gcpc.llm.usage import read_usage
from gcpc.report.headline import usage_breakdown, usage_markdown

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-USAGE-3636"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return frozen_corpus(tmp_path_factory.mktemp("corpus"))


def params_for(server: FakeOpenAI, cache: Path) -> dict:
    cfg = {"provider": "openai", "model": "gpt-fake-1", "temperature": 1.0, "seed": 0, "max_tokens": 2048, "concurrency": 4,
           "timeout_s": 5, "base_url": server.url + "/v1", "cache_dir": str(cache),
           "prices": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
           "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02}}
    template = str(ROOT / "prompts" / "judging" / "gcpc.jinja")
    return {"judge": cfg, "judging": {"max_event_chars": 4000}, "scoring": {},
            "arm": {"gcpc": {"kind": "checklist", "template": template},
                    "gcpc_gate": {"kind": "checklist", "template": template, "evidence_gate": True, "requests_of": "gcpc"}}}


def test_warm_cache_answers_are_not_counted_as_sent_and_no_total_counts_a_call_twice(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GCPC_CACHE_DIR", raising=False)  # conftest switches the cache off; here it is on (cache_dir)
    root = tmp_path / "work"
    judge_root = root / "data" / "processed" / "judge"
    with FakeOpenAI() as server:
        params = params_for(server, tmp_path / "shared-calls")
        judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", judge_root / "gcpc", progress=False)
        sent = server.model_calls
        judge_stage(params, "gcpc_gate", corpus / "ingest", corpus / "synth", judge_root / "gcpc_gate", progress=False)
        assert server.model_calls == sent >= 5  # the gate's requests are gcpc's: all answered from the warm cache
    gcpc, gate = read_usage(judge_root / "gcpc"), read_usage(judge_root / "gcpc_gate")
    assert gcpc["total"]["attempts"] == gcpc["total"]["http_requests_sent"] == sent
    assert gcpc["total"]["tokens"]["input_tokens"] > 0 and gcpc["from_shared_cache"]["attempts"] == 0
    # before: the gate reported http_requests_sent == sent and gcpc's tokens as its own
    assert gate["total"]["attempts"] == gate["total"]["http_requests_sent"] == 0
    assert gate["total"]["tokens"]["input_tokens"] == 0 and gate["total"]["cost"] == 0.0
    shared = gate["from_shared_cache"]
    assert shared["attempts"] == shared["http_requests_sent"] == sent and shared["requests"] == gcpc["total"]["requests"]
    assert shared["tokens"] == gcpc["total"]["tokens"] and shared["cost"] == gcpc["total"]["cost"] > 0
    # the call file is still the same bytes as gcpc's (one file on disk); only the gate has the adopted list
    assert (judge_root / "gcpc_gate" / "llm_calls.jsonl").samefile(judge_root / "gcpc" / "llm_calls.jsonl")
    assert not adopted_path(judge_root / "gcpc" / "llm_calls.jsonl").exists()
    assert len(read_adopted(judge_root / "gcpc_gate" / "llm_calls.jsonl")) == sent

    usage = usage_breakdown({"arm": params["arm"]}, root)
    assert usage["total"]["calls"] == sent  # before: 2 * sent
    assert usage["total"]["input_tokens"] == gcpc["total"]["tokens"]["input_tokens"]
    assert usage["by_stage"]["judge@gcpc_gate"]["calls"] == 0
    assert usage["by_stage"]["judge@gcpc_gate"]["calls_from_shared_cache"] == sent
    assert f"judge@gcpc_gate {sent}" in usage_markdown(usage)

    # a re-run of the gate from its own store: still nothing sent, the adopted attempts still reported apart
    with FakeOpenAI() as server:
        params = params_for(server, tmp_path / "shared-calls")
        judge_stage(params, "gcpc_gate", corpus / "ingest", corpus / "synth", judge_root / "gcpc_gate", progress=False)
        assert server.model_calls == 0
    assert read_usage(judge_root / "gcpc_gate")["from_shared_cache"] == shared


def test_adopted_list_torn_tail_is_ignored_and_bad_line_is_named(tmp_path):
    calls = tmp_path / "llm_calls.jsonl"
    side = adopted_path(calls)
    side.write_text('{"attempt":1,"key":"k1"}\n{"attempt":1,"ke')
    assert read_adopted(calls) == {("k1", 1)}
    side.write_text('{"attempt":1,"key":"k1"}\n{"attempt":"x","key":"k2"}\n')
    with pytest.raises(ValueError, match=r"llm_calls\.shared\.jsonl: line 2 .*key, attempt"):
        read_adopted(calls)
