"""Shipped conf/llm configs, settings validation, retry timing rules, the store's torn-tail repair,
key redaction, and the per-stage token / cost summary."""

from __future__ import annotations

import email.utils
import json
import random
import time
from pathlib import Path

import pytest
import yaml

from gcpc.io import iter_jsonl
from gcpc.llm import make_client, make_provider, request_identity, sampling_params
from gcpc.llm.base import CallRecord
from gcpc.llm.retry import Backoff, classify, retry_after_seconds
from gcpc.llm.secrets import redact, register
from gcpc.llm.settings import LLMSettings, RetrySettings
from gcpc.llm.store import CallStore
from gcpc.llm.usage import SUMMARY_NAME, summarize_usage, write_usage_summary

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "llm"


def load(name: str) -> dict:
    return yaml.safe_load((CONF / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name,provider,model", [
    ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
    ("gpt-5-4-mini", "openai", "gpt-5.4-mini-2026-03-17"),
    ("claude-haiku-4-5", "anthropic", "claude-haiku-4-5-20251001"),
    ("openai-compatible", "openai", "Qwen/Qwen3-8B"),
    ("llama-cpp-python", "openai", "gemma-3-270m"),
    ("llama-server", "openai", "local"),
    ("ollama", "openai", "qwen3:8b"),
])
def test_shipped_configs_build_their_provider_without_network(name, provider, model, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-000000")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unit-000000")
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    cfg = load(name)
    p = make_provider(cfg)
    assert p.name == provider and request_identity(cfg) == (provider, model)
    client = make_client(cfg, tmp_path / "c.jsonl", progress=False)
    assert client.concurrency == cfg["concurrency"] and client.mode == "sync"
    client.store.close()
    assert set(sampling_params(cfg)) <= {"temperature", "max_tokens", "seed", "top_p", "reasoning_effort", "effort", "extra_body",
                                         "structured_output", "json_schema_strict", "schema_length_limits", "schema_in_prompt"}
    assert "concurrency" not in sampling_params(cfg) and "prices" not in sampling_params(cfg)
    if cfg.get("base_url") is None:
        assert cfg["prices"]["input_per_mtok"] > 0 and cfg["api_key_env"].endswith("_API_KEY")
    else:  # self-hosted servers: no price, no key needed
        assert cfg["prices"] is None and cfg["api_key_required"] is False


def test_heuristic_and_replay_configs_still_work(tmp_path):
    for name in ("heuristic", "replay"):
        cfg = load(name)
        client = make_client(cfg, tmp_path / f"{name}.jsonl", progress=False)
        assert client.provider.name == name and client.mode == "sync"
        client.store.close()


def test_settings_reject_keys_in_config_typos_and_bad_values():
    base = {"provider": "openai", "model": "m"}
    with pytest.raises(ValueError, match="API keys are read only from the environment"):
        LLMSettings.from_cfg({**base, "api_key": "sk-live-123"})
    with pytest.raises(ValueError, match="temprature"):
        LLMSettings.from_cfg({**base, "temprature": 0.0})
    with pytest.raises(ValueError, match="concurrency"):
        LLMSettings.from_cfg({**base, "concurrency": 0})
    with pytest.raises(ValueError, match="api_key_env"):
        LLMSettings.from_cfg({**base, "api_key_env": "sk-proj-abc123-def"})
    with pytest.raises(ValueError, match="unknown llm provider 'gemini'"):
        make_provider({"provider": "gemini", "model": "x"})


def test_anthropic_config_errors_are_explicit(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-000000")
    with pytest.raises(ValueError, match="'seed' is not supported"):
        make_provider({"provider": "anthropic", "model": "claude-x", "max_tokens": 10, "seed": 0})
    with pytest.raises(ValueError, match="'max_tokens' is required"):
        make_provider({"provider": "anthropic", "model": "claude-x"})


def test_keyless_compatible_server_gets_a_placeholder_but_official_endpoint_needs_the_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LOCAL_KEY", raising=False)
    p = make_provider({"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "LOCAL_KEY",
                       "api_key_required": False})
    assert p._api_key == "not-needed"
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY is not set"):
        make_provider({"provider": "openai", "model": "m"})


def test_sampling_params_cover_everything_that_changes_the_answer():
    cfg = {"provider": "openai", "model": "m", "temperature": 0.0, "max_tokens": 10, "seed": None, "reasoning_effort": "low",
           "extra_body": {"verbosity": "low"}, "concurrency": 8, "timeout_s": 5}
    assert sampling_params(cfg) == {"temperature": 0.0, "max_tokens": 10, "reasoning_effort": "low", "extra_body": {"verbosity": "low"}}


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= retry_after_seconds({"retry-after": date}, now=now) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_is_exponential_with_full_jitter_and_honours_retry_after():
    s = RetrySettings(backoff_base_s=1.0, backoff_max_s=8.0, max_retry_after_s=20.0)
    b = Backoff(s, random.Random(0))
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 8.0)]:
        delays = [b.delay(retry, None) for _ in range(200)]
        assert 0 <= min(delays) and max(delays) <= ceiling and max(delays) > ceiling * 0.8
    assert b.delay(0, 5.0) == 5.0 and b.delay(0, 500.0) == 20.0


def test_classification_of_failures():
    class Resp:
        headers = {"retry-after": "2"}

    class StatusError(Exception):
        def __init__(self, status):
            super().__init__(f"status {status}")
            self.status_code, self.response = status, Resp()

    class APITimeoutError(Exception):
        pass

    assert classify(StatusError(429)).retryable and classify(StatusError(429)).retry_after_s == 2.0
    assert classify(StatusError(503)).retryable and classify(StatusError(529)).retryable
    assert not classify(StatusError(400)).retryable and not classify(StatusError(401)).retryable
    assert classify(APITimeoutError()).retryable
    assert classify(json.JSONDecodeError("x", "{", 1)).retryable
    assert not classify(KeyError("bug")).retryable


def rec(key: str, attempt: int = 1, ok: bool = True, usage: dict | None = None, batch_id: str | None = None,
        provider: str = "anthropic", model: str = "claude-x", purpose: str = "judgment:gcpc", error: str | None = None) -> CallRecord:
    return CallRecord(key=key, attempt=attempt, purpose=purpose, provider=provider, model=model, request={}, response_text="{}",
                      parsed={} if ok else None, ok=ok, error=error, usage=usage or {}, batch_id=batch_id)


def test_store_drops_a_torn_last_line_and_keeps_complete_records(tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        store.append(rec("a"))
        store.append(rec("b"))
    full = path.read_bytes()
    path.write_bytes(full + full.splitlines(keepends=True)[0][:37])  # a kill in the middle of an append
    with CallStore(path) as store:
        assert store.finished("a") and store.finished("b") and len(store.records()) == 2
        store.append(rec("c"))
    assert [r["key"] for r in iter_jsonl(path)] == ["a", "b", "c"]
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # complete last record that only lost its newline
    with CallStore(path) as store:
        assert len(store.records()) == 3


def test_redaction_applies_to_every_stored_line(tmp_path):
    register("sk-unit-REDACTME-42")
    assert redact("got Bearer sk-unit-REDACTME-42 back") == "got Bearer [REDACTED] back"
    path = tmp_path / "c.jsonl"
    with CallStore(path) as store:
        store.append(rec("a", ok=False, error="provider error: HTTP 401: key sk-unit-REDACTME-42 invalid"))
        store.compact({"a"})
    assert "sk-unit-REDACTME-42" not in path.read_text() and "[REDACTED]" in path.read_text()


def test_usage_summary_counts_tokens_and_prices_every_attempt(tmp_path):
    cfg = yaml.safe_load((CONF / "claude-sonnet-4-6.yaml").read_text()) | {"model": "claude-x"}
    records = [
        rec("k1", usage={"input_tokens": 1000, "cache_creation_input_tokens": 2000, "output_tokens": 500}),
        rec("k2", attempt=1, ok=False, error="invalid output: x", usage={"input_tokens": 100, "cache_read_input_tokens": 2000, "output_tokens": 50}),
        rec("k2", attempt=2, usage={"input_tokens": 100, "cache_read_input_tokens": 2000, "output_tokens": 60}, purpose="checklist"),
        rec("k3", usage={"input_tokens": 1_000_000, "output_tokens": 0}, batch_id="msgbatch_1"),
        rec("k4", ok=False, error="provider error: HTTP 500"),
        rec("k5", provider="openai", model="other", usage={"input_tokens": 10, "output_tokens": 1}),
    ]
    s = summarize_usage(records, cfg)
    by = s["by_model"]["anthropic/claude-x"]
    assert by["requests"] == 4 and by["ok_requests"] == 3 and by["attempts"] == 5
    assert by["invalid_attempts"] == 1 and by["provider_errors"] == 1 and by["batch_attempts"] == 1
    assert by["tokens"]["cache_read_input_tokens"] == 4000 and by["tokens"]["output_tokens"] == 610
    expected = (1000 * 3 + 2000 * 3.75 + 500 * 15) / 1e6 + 2 * (100 * 3 + 2000 * 0.30) / 1e6 + (50 + 60) * 15 / 1e6 + 3.0 * 0.5
    assert by["cost"] == pytest.approx(expected, abs=1e-6)
    assert s["by_model"]["openai/other"]["cost"] is None and s["unpriced_models"] == ["openai/other"]
    assert s["total"]["cost"] is None  # an unpriced model's tokens make the total unknown, not zero
    assert set(s["by_purpose"]) == {"judgment:gcpc", "checklist"}
    path = tmp_path / "llm_calls.jsonl"
    with CallStore(path) as store:
        for r in records[:4]:
            store.append(r)
    first = write_usage_summary(path, cfg)
    text = (tmp_path / SUMMARY_NAME).read_text()
    assert write_usage_summary(path, cfg) == first and (tmp_path / SUMMARY_NAME).read_text() == text  # deterministic
    assert json.loads(text)["total"]["cost"] == pytest.approx(expected, abs=1e-6)
    heuristic = summarize_usage([rec("h", provider="heuristic", model="gcpc-heuristic-v1")], load("heuristic"))
    assert heuristic["total"]["cost"] == 0.0 and heuristic["prices"] is None


def test_usage_summary_compares_the_estimate_with_reported_tokens():
    from gcpc.llm.base import LLMRequest, Message
    from gcpc.llm.estimate import output_tokens, request_tokens

    request = LLMRequest(purpose="judgment:gcpc", provider="anthropic", model="claude-x", output_schema="ChecklistJudgment",
                         json_schema={}, template_hash="t", inputs={"items": [{"item_id": "i01"}, {"item_id": "i02"}]},
                         messages=[Message(role="system", content="role"), Message(role="user", content="log " * 500, cache_prefix=True),
                                   Message(role="user", content="checklist")])
    reported = {"input_tokens": 20, "cache_read_input_tokens": 500, "output_tokens": 300}
    records = [rec("k1", usage=reported).model_copy(update={"request": request.model_dump(mode="json")}),
               rec("k2", usage={"input_tokens": 5, "output_tokens": 5})]  # no request stored: not compared
    got = summarize_usage(records, load("heuristic"))["estimate_vs_usage"]
    est_in, est_out = request_tokens(request)[0], output_tokens(request)
    assert got == {"attempts_compared": 1,
                   "input_tokens": {"estimated": est_in, "reported": 520, "reported_over_estimated": round(520 / est_in, 4)},
                   "output_tokens": {"estimated": est_out, "reported": 300, "reported_over_estimated": round(300 / est_out, 4)}}
    none = summarize_usage([rec("h", provider="heuristic", model="gcpc-heuristic-v1")], load("heuristic"))["estimate_vs_usage"]
    assert none["attempts_compared"] == 0 and "heuristic" in none["why"]
