"""The call cache on an S3-compatible object store (gcpc.llm.remote_cache), against moto's server mode on
127.0.0.1: conditional writes make an entry first-writer-wins and a claim atomic; a dead holder's claim is
taken over once it is stale, by exactly one waiter; a live holder's heartbeat keeps it."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from gcpc.llm.base import CallRecord
from gcpc.llm.remote_cache import ObjectStoreCache, is_url, stale_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moto_support import start_moto  # noqa: E402

KEY = "ab" + "0123456789abcdef" * 3


@pytest.fixture(scope="module")
def s3():
    server, url = start_moto()
    import boto3

    client = boto3.client("s3", endpoint_url=url, aws_access_key_id="a", aws_secret_access_key="b",
                          region_name="us-east-1")
    client.create_bucket(Bucket="lab")
    yield client
    server.stop()


def record(text: str, ok: bool = True) -> CallRecord:
    return CallRecord(key=KEY, attempt=1, purpose="judgment:gcpc", provider="openai", model="m", request={"n": 1},
                      response_text=text, parsed={"text": text} if ok else None, ok=ok,
                      error=None if ok else "invalid output: x")


def cache(s3, prefix: str, **kw) -> ObjectStoreCache:
    return ObjectStoreCache(f"s3://lab/{prefix}", client=s3, **kw)


def test_urls_and_settings(monkeypatch):
    assert is_url("s3://lab/calls") and not is_url("/tmp/calls") and not is_url(None)
    with pytest.raises(ValueError, match="cache_dir: 's3://' names no bucket"):
        ObjectStoreCache("s3://")
    monkeypatch.setenv("GCPC_CACHE_CLAIM_STALE_S", "soon")
    with pytest.raises(ValueError, match="environment: GCPC_CACHE_CLAIM_STALE_S='soon' is not a number"):
        stale_seconds()


def test_make_client_puts_the_cache_on_the_store_for_an_s3_url(monkeypatch, tmp_path):
    from gcpc.llm import make_client

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-Rb5Kq9Wm2Zt7Xv4Hc8")
    client = make_client({"provider": "openai", "model": "m", "cache_dir": "s3://lab/calls"}, tmp_path / "c.jsonl")
    assert isinstance(client.shared, ObjectStoreCache) and (client.shared.bucket, client.shared.prefix) == ("lab", "calls")
    client.store.close()


def test_an_entry_is_first_writer_wins(s3):
    c1, c2 = cache(s3, "first"), cache(s3, "first")
    assert c1.get(KEY) is None and not c1.has(KEY)
    assert c1.put(KEY, [record("one")])[0].response_text == "one"
    held = c2.put(KEY, [record("two")])  # a later writer gets the settled entry back
    assert held[0].response_text == "one" and c2.get(KEY)[0].response_text == "one" and c2.has(KEY)
    body = s3.get_object(Bucket="lab", Key=f"first/{KEY[:2]}/{KEY}.jsonl")["Body"].read().decode()
    assert json.loads(body.splitlines()[0])["response_text"] == "one"


def test_a_claim_is_atomic_and_released(s3):
    c1, c2 = cache(s3, "claims"), cache(s3, "claims")
    assert c1.claim(KEY) and c1.claim(KEY)  # held: True again
    assert not c2.claim(KEY)
    assert c2.claim_age(KEY) is not None
    c1.release(KEY)
    assert c2.claim_age(KEY) is None and c2.claim(KEY)
    c2.release(KEY)


def test_a_dead_holders_claim_is_taken_over_once_when_stale_and_a_live_one_is_kept(s3):
    dead = cache(s3, "stale", stale_s=1.0)
    assert dead.claim(KEY)
    with dead._lock:
        dead._held.clear()  # killed: no heartbeat, no release
    w1, w2 = cache(s3, "stale", stale_s=1.0), cache(s3, "stale", stale_s=1.0)
    assert not w1.claim(KEY)
    time.sleep(3.2)  # stale after 1 s, counted from the end of the Last-Modified second
    assert w1.claim(KEY)  # taken over (If-Match on the stale claim's ETag)
    assert not w2.claim(KEY)  # ... by one waiter only: the claim is w1's and fresh now
    time.sleep(3.2)  # w1 is alive: its heartbeat refreshes the claim every stale_s / 6
    assert not w2.claim(KEY)
    w1.release(KEY)
    assert w2.claim(KEY)
    w2.release(KEY)


def test_has_lists_a_shard_once_instead_of_a_request_per_key(s3):
    """A re-run asks `has` for every key its own store answers: one LIST per shard, not one HEAD per key."""
    writer = cache(s3, "listed")
    keys = [KEY[:2] + f"{i:04x}" + KEY[6:] for i in range(30)]
    for k in keys[:20]:
        writer.put(k, [record("x").model_copy(update={"key": k})])
    reader = cache(s3, "listed")
    assert [reader.has(k) for k in keys] == [True] * 20 + [False] * 10
    assert reader.requests == {"LIST": 1, "HEAD": 10}  # the ten keys not listed are looked up themselves


def test_a_run_looks_its_keys_up_in_parallel_once(s3, tmp_path):
    """A stage resumed on another machine: the keys its store cannot answer are fetched ahead in parallel, and each
    is then read from what was fetched (one GET per key), not looked up again one round trip at a time."""
    from gcpc.llm.client import LLMClient
    from gcpc.llm.schemas import ChecklistJudgment
    from gcpc.llm.store import CallStore
    from test_one_key_one_answer import GOOD, Drifting, req

    first = cache(s3, "prefetch")
    LLMClient(Drifting([GOOD]), CallStore(tmp_path / "a.jsonl"), max_attempts=1, progress=False,
              shared=first).run([req(i) for i in range(6)], ChecklistJudgment)
    reader = cache(s3, "prefetch")
    threads: set[int] = set()
    plain_get = reader._get
    reader._get = lambda name: (threads.add(threading.get_ident()), time.sleep(0.05), plain_get(name))[-1]
    server = Drifting([GOOD])
    results = LLMClient(server, CallStore(tmp_path / "b.jsonl"), max_attempts=1, progress=False,
                        shared=reader).run([req(i) for i in range(6)], ChecklistJudgment)
    assert all(r.ok and r.cached for r in results) and not server.calls
    assert reader.requests == {"GET": 6}
    assert len(threads) > 1 and threading.get_ident() not in threads  # looked up ahead, by the prefetch threads


def test_a_concurrent_run_waiting_for_another_machines_key_looks_at_the_caches_pace(s3, tmp_path):
    """A key another machine is asking: a concurrent run requeues it while it answers the others, and looks at the
    store for it at most once per `poll_s`, not each time a worker passes (each look is billed requests)."""
    import asyncio

    from gcpc.llm.client import LLMClient
    from gcpc.llm.schemas import ChecklistJudgment
    from gcpc.llm.store import CallStore
    from test_one_key_one_answer import GOOD, Drifting, req

    class Slow(Drifting):
        async def acomplete(self, request):
            await asyncio.sleep(0.3)
            return self.complete(request)

    other = cache(s3, "pace")
    key0, key1 = req(0).key, req(1).key
    assert other.claim(key0) and other.claim(key1)  # two keys: the run requeues them past each other
    mine = cache(s3, "pace")
    mine.poll_s = 0.5
    looks = []
    plain_claim = mine.claim
    mine.claim = lambda key: (looks.append(key), plain_claim(key))[-1]

    def settle_later():
        time.sleep(2.0)
        LLMClient(Drifting([GOOD]), CallStore(tmp_path / "other.jsonl"), max_attempts=1, progress=False,
                  shared=other).run([req(0), req(1)], ChecklistJudgment)

    t = threading.Thread(target=settle_later)
    t.start()
    server = Slow([GOOD])
    client = LLMClient(server, CallStore(tmp_path / "mine.jsonl"), max_attempts=1, progress=False, concurrency=2, shared=mine)
    with client:
        results = client.run([req(i) for i in range(5)], ChecklistJudgment)
    t.join()
    assert all(r.ok for r in results) and not {key0, key1} & set(server.calls)  # the other machine's answers
    assert max(looks.count(key0), looks.count(key1)) <= 2.0 / 0.5 + 3, (looks.count(key0), looks.count(key1))


def test_the_stores_secret_is_masked_like_an_api_key(s3, monkeypatch):
    from gcpc.llm.secrets import redact

    secret = "store-secret-" + "Qp7Lw2Xz9Kd4Rv6Nb1"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    assert secret[3:15] in redact(f"boto said {secret[3:15]}")  # not known yet
    cache(s3, "secret")
    assert secret[3:15] not in redact(f"boto said {secret[3:15]}")


def test_unsettled_tries_round_trip(s3):
    c = cache(s3, "tries")
    assert c.tries(KEY) is None
    c.put_tries(KEY, [record("bad", ok=False)])
    assert [r.response_text for r in cache(s3, "tries").tries(KEY)] == ["bad"]
    assert not c.has(KEY)  # tries are no settled entry
    c.drop_tries(KEY)
    assert c.tries(KEY) is None
