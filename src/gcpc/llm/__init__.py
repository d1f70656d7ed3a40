"""Providers, the validating client, the call store and the response schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc.llm.base import LLMRequest, Provider, ReplayMiss
from gcpc.llm.client import LLMClient
from gcpc.llm.store import CallStore


class ReplayProvider:
    """Answers only from recorded calls (served by the client's store); any miss is an error."""

    name = "replay"

    def __init__(self, **_: object):
        pass

    def complete(self, request: LLMRequest):  # noqa: ANN201 - never returns
        raise ReplayMiss(f"no recorded response for request {request.key} ({request.purpose}, model {request.model})")


def make_provider(cfg: dict[str, Any]) -> Provider:
    name = cfg.get("provider")
    if name == "heuristic":
        from gcpc.llm.heuristic import HeuristicProvider

        return HeuristicProvider(model=cfg.get("model", "gcpc-heuristic-v1"))
    if name == "replay":
        return ReplayProvider()
    raise ValueError(f"params.yaml: unknown llm provider '{name}' (known: heuristic, replay)")


def sampling_params(cfg: dict[str, Any]) -> dict[str, Any]:
    """The sampling settings that belong in the request key (and so invalidate the cache when changed)."""
    return {k: cfg[k] for k in ("temperature", "max_tokens", "seed") if cfg.get(k) is not None}


def request_identity(cfg: dict[str, Any]) -> tuple[str, str]:
    """(provider, model) as recorded in requests. Replay keeps the identity of the recorded provider."""
    provider = cfg.get("recorded_provider", cfg["provider"]) if cfg["provider"] == "replay" else cfg["provider"]
    return provider, cfg["model"]


def make_client(cfg: dict[str, Any], store_path: str | Path, *, progress: bool = True) -> LLMClient:
    return LLMClient(make_provider(cfg), CallStore(store_path), max_attempts=int(cfg.get("max_attempts", 3)), progress=progress)


__all__ = ["LLMClient", "CallStore", "LLMRequest", "make_client", "make_provider", "sampling_params", "request_identity", "ReplayMiss"]
