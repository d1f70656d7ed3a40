"""Client and call store: cache hits make zero calls, invalid output is retried and logged, runs resume."""

import json

import pytest

from gcpc.llm.store import read_call_records
from gcpc.io import iter_jsonl
from gcpc.llm import make_client, make_provider
from gcpc.llm.base import LLMRequest, Message, ProviderError, RawResponse, ReplayMiss
from gcpc.llm.client import LLMClient
from gcpc.llm.schemas import ChecklistJudgment
from gcpc.llm.store import CallStore

GOOD = json.dumps({"verdicts": [{"item_id": "i01", "label": "Yes", "evidence": [], "reason": "shown"}]})


class Scripted:
    """A provider that plays back a script of answers (or exceptions) and counts calls."""

    name = "scripted"

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return RawResponse(text=answer, usage={"input_tokens": 3, "output_tokens": 2})


def req(n: int = 0) -> LLMRequest:
    return LLMRequest(purpose="judgment:test", provider="scripted", model="m", messages=[Message(role="user", content=f"q{n}")],
                      output_schema="ChecklistJudgment", json_schema={}, template_hash="t", inputs={"n": n})


def test_key_covers_the_whole_request():
    assert req(0).key == req(0).key
    assert req(0).key != req(1).key
    assert req(0).key != req(0).model_copy(update={"sampling": {"temperature": 0.5}}).key


def test_invalid_output_is_retried_and_every_attempt_recorded(tmp_path):
    provider = Scripted(["not json", '{"verdicts": "wrong"}', GOOD])
    client = LLMClient(provider, CallStore(tmp_path / "calls.jsonl"), max_attempts=3, progress=False)
    result = client.run_one(req(), ChecklistJudgment)
    assert result.ok and result.attempts == 3 and provider.calls == 3
    records = read_call_records(tmp_path / "calls.jsonl")
    assert [r["ok"] for r in records] == [False, False, True]
    assert all(r["error"].startswith("invalid output") for r in records[:2])


def test_failed_unit_after_bounded_attempts_is_reported_not_coerced(tmp_path):
    client = LLMClient(Scripted(["x", "y"]), CallStore(tmp_path / "c.jsonl"), max_attempts=2, progress=False)
    result = client.run_one(req(), ChecklistJudgment)
    assert not result.ok and result.parsed is None and "invalid output" in result.error


def test_retry_invalid_off_keeps_recorded_failures_on_a_rerun(tmp_path):
    """A re-run asks again for a request whose answers all failed validation (fresh tries), unless
    `retry_invalid` is off: then its recorded failure is its result and nothing is asked (the real-server
    check's second run, with the server stopped); a request killed part-way through its tries continues them."""
    path = tmp_path / "c.jsonl"
    first = LLMClient(Scripted(["x"]), CallStore(path), max_attempts=1, progress=False)
    failed = first.run_one(req(), ChecklistJudgment)
    first.store.close()
    kept = Scripted([])
    again = LLMClient(kept, CallStore(path), max_attempts=1, progress=False, retry_invalid=False)
    result = again.run_one(req(), ChecklistJudgment)
    assert kept.calls == 0 and (result.ok, result.error, result.attempts) == (False, failed.error, 1)
    again.store.close()
    asked = Scripted([GOOD])
    fresh = LLMClient(asked, CallStore(path), max_attempts=1, progress=False)
    assert fresh.run_one(req(), ChecklistJudgment).ok and asked.calls == 1  # the default: fresh tries
    fresh.store.close()
    part = tmp_path / "part.jsonl"
    LLMClient(Scripted(["x"]), CallStore(part), max_attempts=1, progress=False).run_one(req(1), ChecklistJudgment)
    more = Scripted([GOOD])
    assert LLMClient(more, CallStore(part), max_attempts=2, progress=False, retry_invalid=False).run_one(req(1), ChecklistJudgment).ok
    assert more.calls == 1
    assert make_client({"provider": "heuristic", "model": "m", "retry_invalid": False}, tmp_path / "h.jsonl").retry_invalid is False


def test_rerun_with_unchanged_requests_makes_zero_calls(tmp_path):
    path = tmp_path / "c.jsonl"
    first = LLMClient(Scripted([GOOD, GOOD]), CallStore(path), progress=False)
    first.run([req(0), req(1)], ChecklistJudgment)
    first.store.compact(first.used_keys)
    first.store.close()
    again = Scripted([])
    second = LLMClient(again, CallStore(path), progress=False)
    results = second.run([req(0), req(1)], ChecklistJudgment)
    assert again.calls == 0 and all(r.ok and r.cached for r in results)


def test_interrupted_run_resumes_without_repeating_or_losing_calls(tmp_path):
    path = tmp_path / "c.jsonl"
    crashing = Scripted([GOOD, ProviderError("connection reset")])
    client = LLMClient(crashing, CallStore(path), progress=False)
    with pytest.raises(ProviderError):
        client.run([req(0), req(1), req(2)], ChecklistJudgment)
    client.store.close()
    assert len(list(iter_jsonl(path))) == 2  # the finished call and the logged failure
    resumed_provider = Scripted([GOOD, GOOD])
    resumed = LLMClient(resumed_provider, CallStore(path), progress=False)
    results = resumed.run([req(0), req(1), req(2)], ChecklistJudgment)
    assert resumed_provider.calls == 2  # req(0) came from the file
    assert [r.cached for r in results] == [True, False, False]


def test_compaction_is_byte_stable_and_keeps_only_used_requests(tmp_path):
    outputs = []
    for order in ([0, 1, 2], [2, 1, 0]):
        path = tmp_path / f"c{order[0]}.jsonl"
        client = LLMClient(Scripted([GOOD] * 3), CallStore(path), progress=False)
        client.run([req(n) for n in order], ChecklistJudgment)
        client.used_keys.discard(req(1).key)
        client.store.compact(client.used_keys)
        client.store.close()
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == 2


def test_replay_answers_from_the_record_and_errors_on_a_miss(tmp_path):
    path = tmp_path / "c.jsonl"
    client = LLMClient(Scripted([GOOD]), CallStore(path), progress=False)
    client.run_one(req(0), ChecklistJudgment)
    client.store.close()
    replay = make_client({"provider": "replay", "model": "m"}, path, progress=False)
    assert replay.run_one(req(0), ChecklistJudgment).ok
    with pytest.raises(ReplayMiss, match=req(5).key):
        replay.run_one(req(5), ChecklistJudgment)


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown llm provider 'nope'"):
        make_provider({"provider": "nope"})


def test_request_that_used_up_its_attempts_is_not_asked_again_in_the_same_run(tmp_path):
    """A stage judging in chunks asks for a shared request (TICK's per-task generation) once per chunk:
    after its attempts are used up, later calls of the same client get the same failure without a call;
    a new run (a new client) tries again."""
    path = tmp_path / "c.jsonl"
    provider = Scripted(["x", "y", GOOD])
    client = LLMClient(provider, CallStore(path), max_attempts=2, progress=False)
    first = client.run([req()], ChecklistJudgment)[0]
    again = client.run([req(), req()], ChecklistJudgment)[0]
    assert not first.ok and again == first and provider.calls == 2
    client.store.close()
    rerun = LLMClient(provider, CallStore(path), max_attempts=2, progress=False)
    assert rerun.run_one(req(), ChecklistJudgment).ok and provider.calls == 3
