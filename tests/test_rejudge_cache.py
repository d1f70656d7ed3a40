"""Repeated judging with the shared call cache ON (issue 23, item 1): against a local fake OpenAI API,
every repeated pass is answered by the provider (as many model calls as pass 1), pass 1 keeps the
judge stage's keys, and `mode: replay` replays every pass from its own call store with no call."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeservers import FakeOpenAI
from judge_corpus import frozen_corpus

from gcpc.analysis.rejudge import rejudge
from gcpc.io import iter_jsonl, read_models
from gcpc.judging.models import Judgment
from gcpc.judging.stage import run as judge_stage
from gcpc.llm.base import LLMRequest, Message

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-REJUDGE-4242"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return frozen_corpus(tmp_path_factory.mktemp("corpus"))


def params_for(server: FakeOpenAI, cache: Path, **judge) -> dict:
    cfg = {"provider": "openai", "model": "gpt-fake-1", "temperature": 1.0, "seed": 0, "max_tokens": 2048, "concurrency": 4,
           "timeout_s": 5, "base_url": server.url + "/v1", "cache_dir": str(cache),
           "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02}, **judge}
    return {"judge": cfg, "judging": {"max_event_chars": 4000}, "scoring": {},
            "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja")}},
            "analysis": {"primary_arm": "gcpc",
                         "rejudge": {"arm": "gcpc", "passes": 3, "sample": {"rule": "all"}, "swap_judge": {"judgments": "SWAP"}}}}


def test_request_key_counts_the_pass_only_when_set():
    """Pass 1 (and every other stage) keeps the key and record it had before `repeat` existed."""
    req = LLMRequest(purpose="judgment:x", provider="openai", model="m", messages=[Message(role="user", content="hi")],
                     output_schema="S", json_schema={}, template_hash="t", inputs={"events": [{"a": 1}]})
    assert "repeat" not in req.json_dump() and "repeat" not in req.model_dump(exclude={"repeat"})
    again = req.model_copy(update={"repeat": 2})
    assert len({req.key, again.key, req.model_copy(update={"repeat": 3}).key}) == 3
    assert again.json_dump()["repeat"] == 2 and LLMRequest.model_validate(again.json_dump()).key == again.key
    from gcpc.io import content_hash

    plain = req.model_copy(update={"inputs": {}})
    assert plain.key == content_hash(plain.model_dump(mode="json", exclude={"purpose", "repeat"}))


def test_repeated_passes_are_new_requests_with_the_shared_cache_on(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GCPC_CACHE_DIR", raising=False)  # conftest switches the cache off; here it is on (cache_dir)
    cache = tmp_path / "shared-calls"
    judge_root, out = tmp_path / "judge", tmp_path / "rejudge"
    with FakeOpenAI() as server:
        params = params_for(server, cache)
        judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", judge_root / "gcpc", progress=False)
        pass1 = server.model_calls
        assert pass1 >= 5 and any(cache.rglob("*.jsonl"))
        params["analysis"]["rejudge"]["swap_judge"] = {"judgments": str(judge_root / "gcpc" / "judgments.jsonl")}
        summary = rejudge(params, corpus / "ingest", corpus / "synth", judge_root, out, progress=False)
        after = server.model_calls
    first = read_models(judge_root / "gcpc" / "judgments.jsonl", Judgment)
    ok = [j for j in first if j.status == "ok"]
    assert summary["n_trajectories"] == len(ok)
    # pass k sends exactly as many requests as pass 1 (before the fix: 0, answered from the shared cache)
    per_pass = {k: len({r["key"] for r in iter_jsonl(out / f"llm_calls_pass{k}.jsonl")}) for k in (2, 3)}
    assert per_pass == {2: len(ok), 3: len(ok)}
    assert summary["calls_made"]["repeat"] == after - pass1 == 2 * len(ok)
    # each pass has its own keys; pass 1's are the judge stage's own (unchanged by the pass number)
    stage_keys = {r["key"] for r in iter_jsonl(judge_root / "gcpc" / "llm_calls.jsonl")}
    keys = {k: {r["key"] for r in iter_jsonl(out / f"llm_calls_pass{k}.jsonl")} for k in (2, 3)}
    assert not (keys[2] & keys[3]) and not (keys[2] & stage_keys) and not (keys[3] & stage_keys)
    assert {j.request_key for j in ok} <= stage_keys
    assert all(r["request"]["repeat"] == k for k in (2, 3) for r in iter_jsonl(out / f"llm_calls_pass{k}.jsonl"))
    assert all("repeat" not in r["request"] for r in iter_jsonl(judge_root / "gcpc" / "llm_calls.jsonl"))

    # a second run of the stage: every pass now comes from its own store (and the shared cache), no call
    recorded = (out / "judgments.jsonl").read_bytes()
    with FakeOpenAI() as server:
        params = params_for(server, cache, mode="replay")
        params["analysis"]["rejudge"]["swap_judge"] = {"judgments": str(judge_root / "gcpc" / "judgments.jsonl")}
        rejudge(params, corpus / "ingest", corpus / "synth", judge_root, out, progress=False)
        assert server.model_calls == 0
    assert (out / "judgments.jsonl").read_bytes() == recorded


def test_replay_replays_each_pass_from_its_own_store_without_the_shared_cache(corpus, tmp_path, monkeypatch):
    """llm@judge=replay with the shared cache empty: each pass is found in llm_calls_pass<k>.jsonl."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge_root, out = tmp_path / "judge", tmp_path / "rejudge"
    with FakeOpenAI() as server:
        params = params_for(server, tmp_path / "cache-a")
        judge_stage(params, "gcpc", corpus / "ingest", corpus / "synth", judge_root / "gcpc", progress=False)
        params["analysis"]["rejudge"]["swap_judge"] = {"judgments": str(judge_root / "gcpc" / "judgments.jsonl")}
        rejudge(params, corpus / "ingest", corpus / "synth", judge_root, out, progress=False)
    recorded = (out / "judgments.jsonl").read_bytes()
    replay = params_for(server, tmp_path / "cache-empty", mode="replay")
    replay["analysis"] = params["analysis"]
    rejudge(replay, corpus / "ingest", corpus / "synth", judge_root, out, progress=False)
    assert (out / "judgments.jsonl").read_bytes() == recorded
