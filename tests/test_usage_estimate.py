"""The report's usage section carries the offline cost estimate with a paper model, labelled as one (issue 28)."""

from __future__ import annotations

import json

from gcpc.report.headline import estimate_markdown, read_estimates, usage_markdown


def test_estimate_is_shown_as_an_estimate(tmp_path):
    est = {"provider": "openai", "model": "gpt-5.4-mini", "tokenizer": "tiktoken cl100k_base",
           "experiment": {"requests": 962, "input_tokens": 1717973, "output_tokens": 106100,
                          "cost": {"sync": 1.7659, "batch": 0.883, "batch_cached": 0.5514}}}
    (tmp_path / "gpt-5-4-mini.json").write_text(json.dumps(est), encoding="utf-8")
    assert read_estimates(tmp_path) == {"gpt-5-4-mini": est} and read_estimates(tmp_path / "absent") == {}
    text = "\n".join(estimate_markdown(read_estimates(tmp_path)))
    assert "**Estimate, not a measurement:**" in text
    assert ("962 requests, 1717973 input tokens (tiktoken cl100k_base), 106100 output tokens (assumed): "
            "sync 1.77 USD, batch 0.88 USD, batch + cached 0.55 USD") in text
    assert estimate_markdown({}) == []
    zero = {"calls": 0, "cached_calls": 0, "input_tokens": 0, "cache_write_tokens": 0, "cached_tokens": 0,
            "output_tokens": 0, "cost": 0.0}
    usage = {"currency": "USD", "by_stage": {"judge@gcpc": zero}, "total": zero, "by_arm": {},
             "stages_without_usage": [], "estimates": read_estimates(tmp_path)}
    md = usage_markdown(usage)
    assert md.index("| **total** |") < md.index("Estimate, not a measurement")
