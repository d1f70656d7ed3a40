"""Per-stage token and cost summary, computed from the stage's (compacted) llm_calls.jsonl.

    from gcpc.llm.usage import write_usage_summary
    write_usage_summary(out_dir / "llm_calls.jsonl", params["judge"])   # -> out_dir / "usage_summary.json"

A stage with several call files (rejudge: one per pass and one for the second judge) keeps one
entry per file under `files`; writing one file's summary updates its entry and never drops the
others', and the top level sums every entry. `cache_hit_attempts` counts attempts that read
prompt-cache tokens (the cached tokens are `cache_read_input_tokens`).

The summary is a pure function of the call files and the configured prices, so it is as
deterministic as the call file (latencies and transport retries are left out). Every attempt
counts, including invalid outputs that were retried and calls answered in earlier runs whose
records the stage kept: it is the cost of producing these outputs. Prices are per million tokens
(`prices:` in conf/llm/<name>.yaml) and apply to the configured (provider, model); batch
attempts get `batch_discount` off.

Answers another run paid for are not this file's: the attempts the store copied from the shared call
cache (`gcpc.llm.store.adopted_path`; a second workspace, an experiment, or an arm sending another arm's
requests such as `gcpc_gate`) are left out of `total`, `by_model` and `by_purpose` and summed apart under
`from_shared_cache` (what they cost when first asked, sent by someone else), so adding the stages' totals
counts every provider call once.

Every HTTP request counts too: `http_requests_sent` (transport retries included), `http_answers_received`
(any answer: success, error status, unparsable body) and `http_abandoned` (sent, never answered: a
timeout or a dropped connection; the provider may have finished and billed it, but no token count
came back, so `tokens` cannot include it). Anthropic reports input tokens excluding cache reads and
writes; OpenAI usage is normalised to the same split (`input_tokens` = prompt - cached).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import json

from gcpc.io import write_json
from gcpc.llm.base import CallRecord
from gcpc.llm.store import iter_records, read_adopted

TOKEN_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "reasoning_tokens")
INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
"""Reported input = uncached + cache writes + cache reads (Anthropic reports them apart; OpenAI is normalised to that)."""
SUMMARY_NAME = "usage_summary.json"


def _identity(cfg: dict[str, Any]) -> tuple[str, str]:
    provider = cfg.get("provider", "")
    if provider == "replay":
        provider = cfg.get("recorded_provider", provider)
    return provider, cfg.get("model", "")


def applied_prices(cfg: dict[str, Any]) -> dict[str, float] | None:
    prices = cfg.get("prices")
    if not prices:
        return None
    p_in = float(prices["input_per_mtok"])
    return {
        "input_per_mtok": p_in,
        "output_per_mtok": float(prices["output_per_mtok"]),
        "cache_write_per_mtok": float(prices.get("cache_write_per_mtok") if prices.get("cache_write_per_mtok") is not None else p_in),
        "cache_read_per_mtok": float(prices.get("cache_read_per_mtok") if prices.get("cache_read_per_mtok") is not None else p_in),
        "batch_discount": float(prices.get("batch_discount", 0.5)),
    }


def record_cost(record: CallRecord, prices: dict[str, float]) -> float:
    u = record.usage
    cost = (u.get("input_tokens", 0) * prices["input_per_mtok"]
            + u.get("cache_creation_input_tokens", 0) * prices["cache_write_per_mtok"]
            + u.get("cache_read_input_tokens", 0) * prices["cache_read_per_mtok"]
            + u.get("output_tokens", 0) * prices["output_per_mtok"]) / 1_000_000
    if record.batch_id is not None:
        cost *= 1 - prices["batch_discount"]
    return cost


def _empty() -> dict[str, Any]:
    return {"keys": set(), "ok_keys": set(), "attempts": 0, "invalid_attempts": 0, "provider_errors": 0,
            "batch_attempts": 0, "cache_hit_attempts": 0, "sent": 0, "answered": 0, "tokens": dict.fromkeys(TOKEN_FIELDS, 0),
            "cost": 0.0, "priced": True}


def _add(group: dict[str, Any], record: CallRecord, cost: float | None) -> None:
    group["keys"].add(record.key)
    if record.ok:
        group["ok_keys"].add(record.key)
    group["attempts"] += 1
    err = record.error or ""
    group["invalid_attempts"] += err.startswith("invalid output")
    group["provider_errors"] += err.startswith("provider error")
    group["batch_attempts"] += record.batch_id is not None
    group["cache_hit_attempts"] += int(record.usage.get("cache_read_input_tokens", 0) or 0) > 0
    group["sent"] += int(record.wire.get("sent", 0))
    group["answered"] += int(record.wire.get("answered", 0))
    for f in TOKEN_FIELDS:
        group["tokens"][f] += int(record.usage.get(f, 0))
    if cost is None:
        group["priced"] = False
    else:
        group["cost"] += cost


def _finish(group: dict[str, Any]) -> dict[str, Any]:
    return {"requests": len(group["keys"]), "ok_requests": len(group["ok_keys"]), "attempts": group["attempts"],
            "invalid_attempts": group["invalid_attempts"], "provider_errors": group["provider_errors"],
            "batch_attempts": group["batch_attempts"], "cache_hit_attempts": group["cache_hit_attempts"],
            "http_requests_sent": group["sent"], "http_answers_received": group["answered"],
            "http_abandoned": group["sent"] - group["answered"], "tokens": group["tokens"],
            "cost": round(group["cost"], 6) if group["priced"] else None}


def _estimated(record: CallRecord) -> tuple[int, int] | None:
    """(input, output) tokens `gcpc.llm.estimate` puts on this attempt's request before any call
    (None for a record without its request, which only hand-made records lack)."""
    from pydantic import ValidationError

    from gcpc.llm.base import LLMRequest
    from gcpc.llm.tokens import output_tokens, request_tokens

    try:
        request = LLMRequest.model_validate(record.request)
    except ValidationError:
        return None
    return request_tokens(request)[0], output_tokens(request)


def _compare(estimated: dict[str, int], reported: dict[str, int], n: int) -> dict[str, Any]:
    if not n:
        return {"attempts_compared": 0, "why": "no attempt reports token usage (the heuristic provider reports none)"}
    out: dict[str, Any] = {"attempts_compared": n}
    for f in ("input_tokens", "output_tokens"):
        out[f] = {"estimated": estimated[f], "reported": reported[f],
                  "reported_over_estimated": round(reported[f] / estimated[f], 4) if estimated[f] else None}
    return out


def summarize_usage(records: Iterable[CallRecord], cfg: dict[str, Any],
                    adopted: set[tuple[str, int]] | frozenset[tuple[str, int]] = frozenset()) -> dict[str, Any]:
    """Tokens, attempts and cost of one call file, and `estimate_vs_usage`: what `gcpc.llm.estimate`
    would have put on the same attempts (BPE input tokens, assumed output tokens) against what the
    provider reported (input = uncached + cache writes + cache reads). `adopted`: the (key, attempt)s
    taken from the shared cache, summed under `from_shared_cache` instead of the totals."""
    prices = applied_prices(cfg)
    priced_identity = _identity(cfg)
    total, by_model, by_purpose, shared = _empty(), defaultdict(_empty), defaultdict(_empty), _empty()
    unpriced: set[str] = set()
    estimated, reported, compared = {"input_tokens": 0, "output_tokens": 0}, {"input_tokens": 0, "output_tokens": 0}, 0
    for record in records:
        tokens = bool(record.usage and any(record.usage.get(f) for f in TOKEN_FIELDS))
        if (record.key, record.attempt) in adopted:  # paid by the run that first asked: summed apart
            paid = prices is not None and (record.provider, record.model) == priced_identity
            _add(shared, record, record_cost(record, prices) if paid else (None if tokens else 0.0))  # type: ignore[arg-type]
            continue
        guess = _estimated(record) if record.usage and any(record.usage.get(f) for f in TOKEN_FIELDS) else None
        if guess is not None:
            est_in, est_out = guess
            estimated["input_tokens"] += est_in
            estimated["output_tokens"] += est_out
            reported["input_tokens"] += sum(int(record.usage.get(f, 0)) for f in INPUT_FIELDS)
            reported["output_tokens"] += int(record.usage.get("output_tokens", 0))
            compared += 1
        cost = None
        if prices is not None and (record.provider, record.model) == priced_identity:
            cost = record_cost(record, prices)
        elif record.usage and any(record.usage.get(f) for f in TOKEN_FIELDS):
            unpriced.add(f"{record.provider}/{record.model}")
        else:
            cost = 0.0  # no tokens (heuristic, provider errors): nothing to pay
        for group in (total, by_model[f"{record.provider}/{record.model}"], by_purpose[record.purpose]):
            _add(group, record, cost)
    return {
        "currency": (cfg.get("prices") or {}).get("currency", "USD"),
        "priced_model": "/".join(priced_identity),
        "prices": prices,
        "unpriced_models": sorted(unpriced),
        "total": _finish(total),
        "by_model": {k: _finish(v) for k, v in sorted(by_model.items())},
        "by_purpose": {k: _finish(v) for k, v in sorted(by_purpose.items())},
        "from_shared_cache": _finish(shared),
        "estimate_vs_usage": _compare(estimated, reported, compared),
    }


COUNT_FIELDS = ("requests", "ok_requests", "attempts", "invalid_attempts", "provider_errors", "batch_attempts",
                "cache_hit_attempts", "http_requests_sent", "http_answers_received", "http_abandoned")


def add_groups(groups: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum finished groups (requests, attempts, tokens, cost; cost None when any part is unpriced)."""
    out: dict[str, Any] = dict.fromkeys(COUNT_FIELDS, 0) | {"tokens": dict.fromkeys(TOKEN_FIELDS, 0), "cost": 0.0}
    for g in groups:
        for f in COUNT_FIELDS:
            out[f] += int(g.get(f, 0))
        for f in TOKEN_FIELDS:
            out["tokens"][f] += int(g.get("tokens", {}).get(f, 0))
        out["cost"] = None if out["cost"] is None or g.get("cost") is None else out["cost"] + float(g["cost"])
    if out["cost"] is not None:
        out["cost"] = round(out["cost"], 6)
    return out


def combine_summaries(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One stage's usage from the summaries of its call files."""
    def merged(part: str) -> dict[str, Any]:
        names = sorted({k for f in files.values() for k in f.get(part, {})})
        return {k: add_groups(f[part][k] for f in files.values() if k in f.get(part, {})) for k in names}

    return {
        "currency": sorted({f.get("currency", "USD") for f in files.values()} or {"USD"})[0],
        "priced_models": sorted({f["priced_model"] for f in files.values() if f.get("prices")}),
        "unpriced_models": sorted({m for f in files.values() for m in f.get("unpriced_models", [])}),
        "total": add_groups(f["total"] for f in files.values()),
        "from_shared_cache": add_groups(f.get("from_shared_cache") or {} for f in files.values()),
        "by_model": merged("by_model"),
        "by_purpose": merged("by_purpose"),
        "estimate_vs_usage": _compare(*_summed(files), sum(int((f.get("estimate_vs_usage") or {}).get("attempts_compared", 0))
                                                           for f in files.values())),
        "files": {k: files[k] for k in sorted(files)},
    }


def _summed(files: dict[str, dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    est, rep = {"input_tokens": 0, "output_tokens": 0}, {"input_tokens": 0, "output_tokens": 0}
    for f in files.values():
        e = f.get("estimate_vs_usage") or {}
        for k in est:
            if isinstance(e.get(k), dict):
                est[k] += int(e[k]["estimated"])
                rep[k] += int(e[k]["reported"])
    return est, rep


def read_usage(path: str | Path) -> dict[str, Any] | None:
    """A stage's usage_summary.json (`path` is the file or its folder); None when the stage wrote none."""
    path = Path(path)
    path = path / SUMMARY_NAME if path.is_dir() else path
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_usage_summary(calls_path: str | Path, cfg: dict[str, Any], out_path: str | Path | None = None) -> dict[str, Any]:
    """Summarize `calls_path` (one llm_calls*.jsonl) into its entry of `usage_summary.json` beside it, keeping
    the entries of the stage's other call files that still exist; returns this file's summary."""
    calls_path = Path(calls_path)
    summary = summarize_usage(iter_records(calls_path, resolve=False), cfg,  # no request needed: read one at a time
                              read_adopted(calls_path))
    summary["calls_file"] = calls_path.name
    out = Path(out_path) if out_path is not None else calls_path.with_name(SUMMARY_NAME)
    previous = read_usage(out) if out.exists() else None
    files = {k: v for k, v in ((previous or {}).get("files") or {}).items() if (out.parent / k).exists()}
    files[calls_path.name] = summary
    write_json(out, combine_summaries(files))
    return summary
