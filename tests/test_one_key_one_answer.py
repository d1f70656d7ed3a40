"""One key, one answer (issue 37, item 5): wherever a request key is settled (another arm, stage or machine
sharing the call cache), every reader gets that outcome, tries that all failed validation included, and a replay
reproduces the first run whatever the stage order.

The failure it prevents, seen against a real llama.cpp server (not deterministic at temperature 0): `gcpc`
used up its tries on a request; `gcpc_gate` (same request keys) asked again, was answered validly, and the
replay then fed that answer back into `gcpc`, so `gcpc`'s outputs were not reproduced."""

from __future__ import annotations

import json
import threading

from gcpc.llm.base import LLMRequest, Message, RawResponse, ReplayMiss
from gcpc.llm.client import LLMClient
from gcpc.llm.schemas import ChecklistJudgment
from gcpc.llm.shared_cache import SharedCache
from gcpc.llm.store import CallStore

GOOD = json.dumps({"verdicts": [{"item_id": "i01", "label": "Yes", "evidence": [], "reason": "shown"}]})


class Drifting:
    """A server that is not deterministic: the n-th call of a request answers `script[n]` (then the last one)."""

    name = "openai"

    def __init__(self, script):
        self.script = list(script)
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def complete(self, request):
        with self.lock:
            n = self.calls.get(request.key, 0)
            self.calls[request.key] = n + 1
        return RawResponse(text=self.script[min(n, len(self.script) - 1)], usage={"input_tokens": 3, "output_tokens": 2})


class Replay:
    name = "replay"

    def complete(self, request):
        raise ReplayMiss(f"no recorded response for request {request.key}")


def req(n: int) -> LLMRequest:
    return LLMRequest(purpose="judgment:gcpc", provider="openai", model="m", messages=[Message(role="user", content=f"q{n}")],
                      output_schema="ChecklistJudgment", json_schema={}, template_hash="t", inputs={"n": n})


def _stage(provider, store_path, cache, **kw) -> tuple[list, bytes]:
    client = LLMClient(provider, CallStore(store_path), max_attempts=1, progress=False, shared=cache, **kw)
    results = client.run([req(0), req(1)], ChecklistJudgment)
    client.store.compact(client.used_keys)
    client.store.close()
    return [(r.ok, r.error) for r in results], store_path.read_bytes()


def test_a_key_whose_tries_failed_is_settled_for_every_stage_and_the_replay_reproduces(tmp_path):
    cache = SharedCache(tmp_path / "cache")
    server = Drifting(["not json", GOOD])  # first call invalid, any later call valid
    gcpc, gcpc_bytes = _stage(server, tmp_path / "gcpc.jsonl", cache)
    gate, gate_bytes = _stage(server, tmp_path / "gate.jsonl", cache)
    # the second stage asked nothing: it got the first stage's outcome, the failure included
    assert sorted(server.calls.values()) == [1, 1]
    assert gate == gcpc and [ok for ok, _ in gcpc] == [False, False]
    assert gate_bytes == gcpc_bytes
    # a re-run of the first stage with the server still up asks nothing either (attempts counted per key)
    again, again_bytes = _stage(server, tmp_path / "gcpc.jsonl", cache)
    assert sorted(server.calls.values()) == [1, 1] and (again, again_bytes) == (gcpc, gcpc_bytes)
    # the replay (server stopped), in either stage order, reproduces both stages byte for byte
    for order in (("gate.jsonl", "gcpc.jsonl"), ("gcpc.jsonl", "gate.jsonl")):
        for name in order:
            replayed, replay_bytes = _stage(Replay(), tmp_path / name, cache)
            assert replayed == gcpc and replay_bytes == (gcpc_bytes if name == "gcpc.jsonl" else gate_bytes)


def test_without_a_shared_cache_a_rerun_still_gets_fresh_tries(tmp_path):
    """The store-only behaviour is unchanged (`retry_invalid`, default true: tests/test_llm_client.py)."""
    server = Drifting(["not json", GOOD])
    first, _ = _stage(server, tmp_path / "c.jsonl", None)
    second, _ = _stage(server, tmp_path / "c.jsonl", None)
    assert [ok for ok, _ in first] == [False, False] and [ok for ok, _ in second] == [True, True]


def test_a_later_writer_adopts_the_first_writers_answer(tmp_path):
    """Two workers that both asked a key (a claim taken over as stale): the entry written first holds, and the
    later one returns and stores that answer, not its own."""
    cache = SharedCache(tmp_path / "cache")
    other = GOOD.replace("shown", "first writer")
    first = LLMClient(Drifting([other]), CallStore(tmp_path / "a.jsonl"), max_attempts=1, progress=False, shared=cache)
    assert first.run_one(req(0), ChecklistJudgment).parsed["verdicts"][0]["reason"] == "first writer"
    late = LLMClient(Drifting([GOOD]), CallStore(tmp_path / "b.jsonl"), max_attempts=1, progress=False, shared=cache)
    late._known = lambda key: None  # it looked before the first writer stored its answer
    result = late.run_one(req(0), ChecklistJudgment)
    assert result.parsed["verdicts"][0]["reason"] == "first writer"
    assert late.store.finished(req(0).key).parsed["verdicts"][0]["reason"] == "first writer"
    held = cache.get(req(0).key)
    assert held is not None and held[-1].parsed["verdicts"][0]["reason"] == "first writer"


class Killed(BaseException):
    """The worker dies here (a kill is no exception the client could handle)."""


def test_tries_count_per_key_across_workers_when_one_dies_part_way(tmp_path):
    """Worker A makes 2 of a request's 3 tries (both invalid) and dies; worker B (another store, same cache) makes
    only the third: 3 tries for the key in all, not 2 + 3."""
    cache = SharedCache(tmp_path / "cache")

    class DiesOnThirdCall(Drifting):
        def complete(self, request):
            if sum(self.calls.values()) == 2:
                raise Killed
            return super().complete(request)

    a = LLMClient(DiesOnThirdCall(["not json"]), CallStore(tmp_path / "a.jsonl"), max_attempts=3, progress=False,
                  shared=cache)
    try:
        a.run_one(req(0), ChecklistJudgment)
    except Killed:
        pass
    a.store.close()
    with a.shared._lock:  # the kernel frees a dead process's lock; here the same process stands for both machines
        fds = list(a.shared._held.values())
        a.shared._held.clear()
    for fd in fds:
        import os

        os.close(fd)
    b_server = Drifting(["still not json", GOOD])
    b = LLMClient(b_server, CallStore(tmp_path / "b.jsonl"), max_attempts=3, progress=False, shared=cache)
    result = b.run_one(req(0), ChecklistJudgment)
    assert b_server.calls == {req(0).key: 1}  # only the third try
    assert not result.ok and result.attempts == 3
    assert [r.response_text for r in b.store.attempts(req(0).key)] == ["not json", "not json", "still not json"]
    assert cache.tries(req(0).key) is None and len(cache.get(req(0).key)) == 3  # settled: 3 tries, no loose ones
