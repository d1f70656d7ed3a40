"""The judge stage keeps its calls in flight across chunks (issue 29): one event loop and one async HTTP client
per stage, two chunks judged at once, one cap on the calls in flight, a request two chunks share asked once,
a failure in one chunk stopping the other, and the judgments byte-identical to one chunk after another."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fakeservers import FakeOpenAI, Fault
from judge_corpus import ingest_and_freeze

from gcpc.judging import stage as judge_stage_module
from gcpc.judging.stage import judge_stage
from gcpc.llm import make_client
from gcpc.llm.base import LLMRequest, Message, ProviderError
from gcpc.llm.providers.openai_provider import OpenAIProvider
from gcpc.llm.schemas import ChecklistJudgment, checklist_judgment_schema

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    ingest_and_freeze(root / "ingest", root / "synth")
    return root


def judge_cfg(server: FakeOpenAI, concurrency: int) -> dict:
    return {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048,
            "concurrency": concurrency, "timeout_s": 10, "base_url": server.url + "/v1", "cache_dir": "off",
            "retry": {"max_retries": 0, "backoff_base_s": 0.01, "backoff_max_s": 0.02}}


def params_for(server: FakeOpenAI, concurrency: int) -> dict:
    return {"judge": judge_cfg(server, concurrency), "judging": {"max_event_chars": 4000}, "scoring": {},
            "arm": {"gcpc": {"kind": "checklist", "template": str(ROOT / "prompts" / "judging" / "gcpc.jinja")},
                    "tick": {"kind": "tick", "template": str(ROOT / "prompts" / "judging" / "tick")}}}


@pytest.fixture
def async_clients(monkeypatch) -> list:
    made: list = []
    original = OpenAIProvider.make_async_client

    def counted(self):
        made.append(original(self))
        return made[-1]

    monkeypatch.setattr(OpenAIProvider, "make_async_client", counted)
    return made


@pytest.mark.parametrize("arm", ["gcpc", "tick"])
def test_overlapped_chunks_write_the_bytes_of_one_chunk_after_another(corpus, tmp_path, monkeypatch, async_clients, arm):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-overlap")
    monkeypatch.setenv("GCPC_CACHE_DIR", "off")
    seen: list[bool] = []
    original = judge_stage_module.judge_arm

    def judge_arm(*args, **kw):  # which chunks ran while another was being judged
        seen.append(threading.current_thread() is not threading.main_thread())
        return original(*args, **kw)

    monkeypatch.setattr(judge_stage_module, "judge_arm", judge_arm)
    with FakeOpenAI(latency_s=0.02) as server:
        serial = tmp_path / "serial"
        judge_stage(params_for(server, 1), arm, corpus / "ingest", corpus / "synth", serial, progress=False, chunk=2)
        serial_calls = server.model_calls
        assert not any(seen)  # one call at a time: chunk after chunk, on the stage's own thread
        seen.clear()
        overlapped = tmp_path / "overlapped"
        judge_stage(params_for(server, 3), arm, corpus / "ingest", corpus / "synth", overlapped, progress=False, chunk=2)
        assert server.model_calls - serial_calls == serial_calls  # no request asked twice (TICK: a task's questions)
        assert server.max_inflight <= 3
    assert len(seen) > 2 and all(seen)
    assert len(async_clients) == 1  # one async HTTP client for the whole stage, not one per chunk
    assert (overlapped / "judgments.jsonl").read_bytes() == (serial / "judgments.jsonl").read_bytes()


def request(n: int, schema: dict) -> LLMRequest:
    return LLMRequest(purpose="judgment:test", provider="openai", model="gpt-fake-1",
                      messages=[Message(role="system", content="Judge."), Message(role="user", content=f"- [c1] The run ends.\n## Execution log\nrun {n}")],
                      output_schema="ChecklistJudgment", json_schema=schema, sampling={"max_tokens": 256},
                      template_hash="test-template")


def test_overlapping_runs_share_the_cap_and_a_request(tmp_path, monkeypatch, async_clients):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-overlap")
    schema = checklist_judgment_schema(["c1"])
    with FakeOpenAI(latency_s=0.05) as server:
        client = make_client(judge_cfg(server, 4) | {"cache_dir": "off"}, tmp_path / "calls.jsonl", progress=False)
        shared = request(0, schema)
        batches = [[shared] + [request(n, schema) for n in range(1, 9)], [shared] + [request(n, schema) for n in range(9, 17)]]
        out: dict[int, list] = {}
        with client:
            threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, client.run(batches[i], ChecklistJudgment)))
                       for i in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert client._loop is not None  # held open between runs
        assert client._loop is None  # closed with the last holder
        client.store.close()
        assert server.model_calls == 17 and server.max_inflight <= 4
    assert all(r.ok for i in (0, 1) for r in out[i]) and out[0][0].parsed == out[1][0].parsed
    assert len(async_clients) == 1


def test_a_failure_in_one_run_stops_the_other(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-overlap")
    schema = checklist_judgment_schema(["c1"])
    with FakeOpenAI(latency_s=0.05) as server:
        server.fault_rules.append(lambda body: Fault(kind="status", status=404, message="no such model")
                                  if 'run 3"' in body else None)
        client = make_client(judge_cfg(server, 2) | {"cache_dir": "off"}, tmp_path / "calls.jsonl", progress=False)
        errors: dict[int, BaseException] = {}

        def go(i: int, requests: list[LLMRequest]) -> None:
            try:
                client.run(requests, ChecklistJudgment)
            except ProviderError as exc:
                errors[i] = exc

        with client:
            threads = [threading.Thread(target=go, args=(0, [request(n, schema) for n in range(1, 5)])),
                       threading.Thread(target=go, args=(1, [request(n, schema) for n in range(100, 160)]))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        client.store.close()
        assert set(errors) == {0, 1} and all("404" in str(e) or "no such model" in str(e) for e in errors.values())
        assert server.model_calls < 20  # of 63 answerable: the other run started no new call after the failure
