"""The real anthropic and openai SDKs against local fake APIs (tests/fakeservers) on 127.0.0.1.

Happy path and structured output, prompt-cache markers, 429 + Retry-After, 500, timeouts,
malformed bodies, invalid model output, concurrency, and batches (including a restart).
"""

from __future__ import annotations

import json
import threading
import time

import anthropic
import pytest
from fakeservers import SERVERS, Fault
from openai.lib._parsing import type_to_response_format_param

from gcpc.llm.store import read_call_records
from gcpc.io import iter_jsonl
from gcpc.llm import make_client
from gcpc.llm.base import BatchPending, ProviderError
from gcpc.llm.schemas import ChecklistJudgment
from llm_requests import judge_req  # noqa: F401 - other test modules import it from here

KEYS = {"anthropic": ("ANTHROPIC_API_KEY", "sk-ant-test-SECRET456"), "openai": ("OPENAI_API_KEY", "sk-test-SECRET123")}


@pytest.fixture(params=["anthropic", "openai"])
def api(request, monkeypatch):
    name = request.param
    env, key = KEYS[name]
    monkeypatch.setenv(env, key)
    server = SERVERS[name]().start()
    yield name, server
    server.stop()


def cfg(name: str, server, **over) -> dict:
    c = {"provider": name, "model": "m-1", "max_tokens": 256, "temperature": 0.0,
         "base_url": server.url if name == "anthropic" else server.url + "/v1", "timeout_s": 5,
         "retry": {"max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05},
         "batch": {"poll_interval_s": 0.01}}
    if name == "openai":
        c["seed"] = 0
    c.update(over)
    return c


def model_bodies(server) -> list[dict]:
    return [r["body"] for r in server.requests if r["route"] in ("POST /v1/messages", "POST /v1/chat/completions")]


def records(path) -> list[dict]:
    return read_call_records(path)


def test_happy_path_sends_structured_output_schema_and_cache_marker(api, tmp_path):
    name, server = api
    client = make_client(cfg(name, server), tmp_path / "llm_calls.jsonl", progress=False)
    result = client.run_one(judge_req(name), ChecklistJudgment)
    client.store.close()
    assert result.ok and not result.cached
    assert [v["item_id"] for v in result.parsed["verdicts"]] == ["i01", "i02"]
    (body,) = model_bodies(server)
    if name == "anthropic":
        assert body["output_config"]["format"] == {"type": "json_schema", "schema": anthropic.transform_schema(ChecklistJudgment)}
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}  # stable prefix first, marked
        assert body["messages"][-1]["content"][0]["text"].startswith("## Execution log")  # trajectory last
        assert body["temperature"] == 0.0 and "seed" not in body and body["max_tokens"] == 256
        assert KEYS[name][1] in (server.requests[0]["headers"].get("x-api-key", "") + server.requests[0]["headers"].get("authorization", ""))
    else:
        assert body["response_format"] == type_to_response_format_param(ChecklistJudgment)
        assert body["response_format"]["json_schema"]["strict"] is True
        assert body["response_format"]["json_schema"]["name"] == "ChecklistJudgment"
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["max_completion_tokens"] == 256 and body["seed"] == 0 and body["temperature"] == 0.0
        assert server.requests[0]["headers"]["authorization"] == "Bearer " + KEYS[name][1]
    (rec,) = records(tmp_path / "llm_calls.jsonl")
    assert rec["ok"] and rec["attempt"] == 1 and rec["provider"] == name and rec["model"] == "m-1"
    assert rec["usage"]["input_tokens"] > 0 and rec["usage"]["output_tokens"] > 0
    assert rec["request_id"].startswith("req_") and rec["served_model"] == "m-1"
    assert rec["latency_s"] > 0 and rec["transport_retries"] == 0 and rec["batch_id"] is None
    assert rec["request"]["sampling"]["max_tokens"] == 256
    assert KEYS[name][1] not in (tmp_path / "llm_calls.jsonl").read_text()


def test_rerun_with_unchanged_requests_makes_zero_calls(api, tmp_path):
    name, server = api
    path = tmp_path / "llm_calls.jsonl"
    first = make_client(cfg(name, server, concurrency=4), path, progress=False)
    first.run([judge_req(name, n) for n in range(6)], ChecklistJudgment)
    first.store.compact(first.used_keys)
    first.store.close()
    calls = server.model_calls
    second = make_client(cfg(name, server, concurrency=4), path, progress=False)
    results = second.run([judge_req(name, n) for n in range(6)], ChecklistJudgment)
    assert server.model_calls == calls == 6 and all(r.cached for r in results) and second.calls_made == 0


def test_429_retry_after_is_honoured(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="status", status=429, headers={"retry-after": "1"}, message="slow down"))
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    t0 = time.monotonic()
    result = client.run_one(judge_req(name), ChecklistJudgment)
    elapsed = time.monotonic() - t0
    client.store.close()
    assert result.ok and server.model_calls == 1 and len(model_bodies(server)) == 2
    assert elapsed >= 1.0  # backoff alone would have waited <= 0.05 s
    (rec,) = records(tmp_path / "c.jsonl")
    assert rec["transport_retries"] == 1


def test_500_is_retried_by_gcpc_and_not_by_the_sdk(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="status", status=500))
    client = make_client(cfg(name, server), tmp_path / "a.jsonl", progress=False)
    assert client.run_one(judge_req(name, 1), ChecklistJudgment).ok
    assert len(model_bodies(server)) == 2
    client.store.close()
    # With gcpc's retries off, a 500 reaches the server exactly once: the SDK does not retry on its own.
    server.faults.extend([Fault(kind="status", status=500), Fault(kind="status", status=500)])
    path = tmp_path / "b.jsonl"
    strict = make_client(cfg(name, server, retry={"max_retries": 0}), path, progress=False)
    with pytest.raises(ProviderError, match="HTTP 500"):
        strict.run_one(judge_req(name, 2), ChecklistJudgment)
    strict.store.close()
    assert len(model_bodies(server)) == 3
    server.faults.clear()
    resumed = make_client(cfg(name, server), path, progress=False)
    assert resumed.run_one(judge_req(name, 2), ChecklistJudgment).ok
    resumed.store.close()
    recs = records(path)
    assert [(r["attempt"], r["ok"]) for r in recs] == [(1, False), (2, True)]
    assert recs[0]["error"].startswith("provider error") and recs[0]["response_text"] is None


def test_timeout_is_retried(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="delay", seconds=1.0))
    # concurrency 2: a server with one slot is waited on before the request goes again (test_rate_limit.py)
    client = make_client(cfg(name, server, timeout_s=0.2, concurrency=2), tmp_path / "c.jsonl", progress=False)
    t0 = time.monotonic()
    result = client.run_one(judge_req(name), ChecklistJudgment)
    assert result.ok and time.monotonic() - t0 < 0.9
    client.store.close()
    assert records(tmp_path / "c.jsonl")[0]["transport_retries"] == 1


def test_malformed_response_body_is_retried_as_a_transport_failure(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="malformed"))
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    assert client.run_one(judge_req(name), ChecklistJudgment).ok
    client.store.close()
    (rec,) = records(tmp_path / "c.jsonl")
    assert rec["transport_retries"] == 1 and len(model_bodies(server)) == 2


def test_invalid_model_output_is_recorded_and_retried_then_reported(api, tmp_path):
    name, server = api
    server.faults.extend([Fault(kind="content", text="Sure! Here is the JSON:"), Fault(kind="content", text='{"verdicts": "all good"}')])
    client = make_client(cfg(name, server, max_attempts=3), tmp_path / "c.jsonl", progress=False)
    result = client.run_one(judge_req(name), ChecklistJudgment)
    assert result.ok and result.attempts == 3
    recs = records(tmp_path / "c.jsonl")
    assert [r["ok"] for r in recs] == [False, False, True]
    assert recs[0]["response_text"] == "Sure! Here is the JSON:" and recs[0]["error"].startswith("invalid output")
    assert client.store.attempts(result.key)[1].response_text == '{"verdicts": "all good"}'
    server.faults.extend([Fault(kind="content", text="nope")] * 3)
    failed = client.run_one(judge_req(name, 7), ChecklistJudgment)
    assert not failed.ok and failed.parsed is None and failed.attempts == 3 and "invalid output" in failed.error
    client.store.close()


def test_refused_request_is_recorded_once_and_not_asked_again(api, tmp_path):
    """HTTP 400 is about this request: no retry, a recorded refusal, and a re-run does not ask again."""
    name, server = api
    server.faults.append(Fault(kind="status", status=400, message="context_length_exceeded: prompt too long"))
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    refused = client.run_one(judge_req(name), ChecklistJudgment)
    assert not refused.ok and refused.refused and "HTTP 400" in refused.error and "context_length" in refused.error
    client.store.close()
    assert len(model_bodies(server)) == 1
    again = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    assert again.run_one(judge_req(name), ChecklistJudgment).refused
    again.store.close()
    assert len(model_bodies(server)) == 1
    switch = make_client(cfg(name, server, retry_refused=True), tmp_path / "c.jsonl", progress=False)
    assert switch.run_one(judge_req(name), ChecklistJudgment).ok  # the documented switch asks again
    switch.store.close()
    assert len(model_bodies(server)) == 2


def test_configuration_error_stops_at_once(api, tmp_path):
    name, server = api
    server.faults.append(Fault(kind="status", status=401, message="invalid api key"))
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    with pytest.raises(ProviderError, match="HTTP 401"):
        client.run_one(judge_req(name), ChecklistJudgment)
    client.store.close()
    assert len(model_bodies(server)) == 1


def test_concurrent_run_keeps_input_order_and_the_concurrency_limit(api, tmp_path):
    name, server = api
    server.latency_s = 0.05
    client = make_client(cfg(name, server, concurrency=6), tmp_path / "c.jsonl", progress=False)
    reqs = [judge_req(name, n) for n in range(30)]
    results = client.run(reqs, ChecklistJudgment)
    client.store.close()
    assert [r.key for r in results] == [r.key for r in reqs] and all(r.ok for r in results)
    assert 2 <= server.max_inflight <= 6  # calls overlapped, never more than the limit (speed itself: bench/bench_llm_throughput.py)
    assert len(records(tmp_path / "c.jsonl")) == 30


def test_concurrent_transport_failure_keeps_finished_calls_and_resumes(api, tmp_path):
    name, server = api
    path = tmp_path / "c.jsonl"
    server.faults.extend([None, None, Fault(kind="status", status=503)])  # the third call fails for good
    client = make_client(cfg(name, server, concurrency=3, retry={"max_retries": 0}), path, progress=False)
    with pytest.raises(ProviderError, match="HTTP 503"):
        client.run([judge_req(name, n) for n in range(12)], ChecklistJudgment)
    client.store.close()
    finished = {r["key"] for r in records(path) if r["ok"]}
    assert 2 <= len(finished) < 12
    before = server.model_calls
    resumed = make_client(cfg(name, server, concurrency=3), path, progress=False)
    results = resumed.run([judge_req(name, n) for n in range(12)], ChecklistJudgment)
    resumed.store.close()
    assert all(r.ok for r in results) and server.model_calls - before == 12 - len(finished)
    assert {r.key for r in results if r.cached} == finished


def test_batch_mode_collects_and_resubmits_invalid_and_errored_entries(api, tmp_path):
    name, server = api
    bad = judge_req(name, 1)
    server.responder = lambda ctx: "garbage" if ctx.occurrence == 0 and "trajectory 1" in ctx.user else _default(ctx)
    server.errored_custom_ids.add(judge_req(name, 2).key)
    client = make_client(cfg(name, server, mode="batch"), tmp_path / "llm_calls.jsonl", progress=False)
    reqs = [judge_req(name, n) for n in range(5)]
    results = client.run(reqs, ChecklistJudgment)
    client.store.close()
    assert all(r.ok for r in results) and [r.key for r in results] == [r.key for r in reqs]
    assert server.route_calls["batch_create"] == 2  # round 2 carries the invalid and the errored entry
    assert model_bodies(server) == []  # nothing went through the synchronous endpoint
    recs = records(tmp_path / "llm_calls.jsonl")
    assert all(r["batch_id"] for r in recs) and all(r["latency_s"] is None for r in recs)
    by_key = {}
    for r in recs:
        by_key.setdefault(r["key"], []).append(r)
    assert [x["error"].split(":")[0] for x in by_key[bad.key][:1]] == ["invalid output"]
    assert by_key[judge_req(name, 2).key][0]["error"].startswith("provider error: batch entry errored")
    assert len(by_key[bad.key]) == 2 and by_key[bad.key][1]["ok"]
    assert not client.batch_state_path.exists()


def _default(ctx):
    from fakeservers import default_responder

    return default_responder(ctx)


def test_batch_completes_across_a_restart_without_resubmitting(api, tmp_path):
    name, server = api
    server.hold_batches = True
    path = tmp_path / "llm_calls.jsonl"
    reqs = [judge_req(name, n) for n in range(7)]
    first = make_client(cfg(name, server, mode="batch", batch={"poll_interval_s": 0.01, "max_wait_s": 0.1}), path, progress=False)
    with pytest.raises(BatchPending, match="re-run the same command"):
        first.run(reqs, ChecklistJudgment)
    first.store.close()
    state = json.loads(first.batch_state_path.read_text())
    (batch,) = state["batches"]
    assert sorted(batch["custom_ids"]) == sorted(r.key for r in reqs) and batch["provider"] == name
    assert not path.exists() or records(path) == []
    threading.Timer(0.2, server.release_batches).start()  # the batch ends while the restarted run polls
    second = make_client(cfg(name, server, mode="batch"), path, progress=False)
    results = second.run(reqs, ChecklistJudgment)
    second.store.compact(second.used_keys)
    second.store.close()
    assert all(r.ok for r in results) and server.route_calls["batch_create"] == 1
    assert {r["batch_id"] for r in records(path)} == {batch["id"]}
    assert not second.batch_state_path.exists()
    # the batch answers equal what the synchronous API gives for the same requests
    server.hold_batches = False
    sync = make_client(cfg(name, server), tmp_path / "sync.jsonl", progress=False)
    assert [r.parsed for r in sync.run(reqs, ChecklistJudgment)] == [r.parsed for r in results]
    sync.store.close()


def test_run_one_in_batch_mode_submits_a_batch(api, tmp_path):
    name, server = api
    client = make_client(cfg(name, server, mode="batch"), tmp_path / "c.jsonl", progress=False)
    assert client.run_one(judge_req(name), ChecklistJudgment).ok
    client.store.close()
    assert server.route_calls["batch_create"] == 1 and model_bodies(server) == []


def test_missing_api_key_is_a_clear_error(api, tmp_path, monkeypatch):
    name, server = api
    monkeypatch.delenv(KEYS[name][0])
    with pytest.raises(RuntimeError, match=f"environment variable {KEYS[name][0]} is not set"):
        make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)


def _separator_responder(ctx):
    """A valid judgment whose reason holds U+2028, U+0085 and U+2029 inside a JSON string."""
    verdicts = [{"item_id": i, "label": "No", "evidence": [], "reason": "line\u2028sep\u0085nel\u2029par"}
                for i in ("i01", "i02")]
    return json.dumps({"verdicts": verdicts}, ensure_ascii=False)


def test_batch_output_is_split_on_newline_only(api, tmp_path):
    """Batch result files are JSONL: a U+2028 / U+0085 inside a string must not split a line (a lost paid answer)."""
    name, server = api
    server.responder = _separator_responder
    client = make_client(cfg(name, server, mode="batch"), tmp_path / "c.jsonl", progress=False)
    results = client.run([judge_req(name, n) for n in range(3)], ChecklistJudgment)
    client.store.close()
    assert all(r.ok for r in results)
    assert {v["reason"] for r in results for v in r.parsed["verdicts"]} == {"line\u2028sep\u0085nel\u2029par"}
    assert server.route_calls["batch_create"] == 1


def test_invalid_answers_are_not_final_a_rerun_asks_again(api, tmp_path):
    name, server = api
    server.faults.extend([Fault(kind="content", text="nope")] * 3)
    client = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    assert not client.run_one(judge_req(name), ChecklistJudgment).ok
    client.store.close()
    again = make_client(cfg(name, server), tmp_path / "c.jsonl", progress=False)
    result = again.run_one(judge_req(name), ChecklistJudgment)
    again.store.close()
    assert result.ok and result.attempts == 4 and len(model_bodies(server)) == 4


def test_shared_cache_serves_another_workspace_and_replays_byte_identical(api, tmp_path):
    """Two call stores (two workspaces, experiments, workers) with one shared cache: each request is paid once."""
    name, server = api
    shared = {"cache_dir": str(tmp_path / "shared")}
    server.faults.append(Fault(kind="status", status=400, message="content_filter: flagged"))
    reqs = [judge_req(name, n) for n in range(4)]
    first = make_client(cfg(name, server, concurrency=4, **shared), tmp_path / "a" / "c.jsonl", progress=False)
    a = first.run(reqs, ChecklistJudgment)
    first.store.compact(first.used_keys)
    first.store.close()
    assert sum(r.refused for r in a) == 1 and sum(r.ok for r in a) == 3 and len(model_bodies(server)) == 4
    second = make_client(cfg(name, server, concurrency=4, **shared), tmp_path / "b" / "c.jsonl", progress=False)
    b = second.run(reqs, ChecklistJudgment)
    second.store.compact(second.used_keys)
    second.store.close()
    assert len(model_bodies(server)) == 4 and second.shared_hits == 4 and second.calls_made == 0
    assert [r.model_dump(exclude={"cached"}) for r in a] == [r.model_dump(exclude={"cached"}) for r in b]
    assert (tmp_path / "a" / "c.jsonl").read_bytes() == (tmp_path / "b" / "c.jsonl").read_bytes()
    assert not list((tmp_path / "shared").rglob("*.tmp"))
