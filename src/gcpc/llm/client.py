"""Cached, resumable, validating front door that every stage uses for LLM work."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from tqdm import tqdm

from gcpc.llm.base import CallRecord, CallResult, LLMRequest, Provider, ProviderError, ReplayMiss
from gcpc.llm.store import CallStore

Check = Callable[[BaseModel, LLMRequest], None]
"""Extra validation beyond the schema (e.g. 'one verdict per item'); raise ValueError to reject."""


def _parse(text: str, output_type: type[BaseModel]) -> BaseModel:
    stripped = text.strip()
    if stripped.startswith("```"):
        # Models sometimes fence JSON even when asked not to; the fence is syntax, not content.
        stripped = stripped.strip("`")
        stripped = stripped[stripped.find("\n") + 1 :] if "\n" in stripped else stripped
        stripped = stripped.rstrip("`").strip()
    return output_type.model_validate_json(stripped)


class LLMClient:
    def __init__(self, provider: Provider, store: CallStore, *, max_attempts: int = 3, progress: bool = True):
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.provider = provider
        self.store = store
        self.max_attempts = max_attempts
        self.progress = progress
        self.used_keys: set[str] = set()
        self.calls_made = 0

    def run_one(self, request: LLMRequest, output_type: type[BaseModel], check: Check | None = None) -> CallResult:
        key = request.key
        self.used_keys.add(key)
        done = self.store.finished(key)
        if done is not None:
            return CallResult(key=key, ok=True, parsed=done.parsed, attempts=done.attempt, cached=True)
        previous = self.store.attempts(key)
        attempt = len(previous)
        invalid = sum(1 for r in previous if r.error and r.error.startswith("invalid output"))
        last_error = previous[-1].error if previous else None
        while invalid < self.max_attempts:
            attempt += 1
            record = self._attempt(request, output_type, check, attempt)
            self.store.append(record)
            if record.ok:
                return CallResult(key=key, ok=True, parsed=record.parsed, attempts=attempt)
            if record.error and record.error.startswith("provider error"):
                # Transport failures are logged, then stop the stage: a re-run resumes here.
                raise ProviderError(f"request {key[:12]} ({request.purpose}): {record.error}")
            invalid += 1
            last_error = record.error
        return CallResult(key=key, ok=False, parsed=None, attempts=attempt, error=last_error)

    def run(
        self,
        requests: Sequence[LLMRequest],
        output_type: type[BaseModel],
        check: Check | None = None,
        desc: str = "llm",
    ) -> list[CallResult]:
        bar = tqdm(requests, desc=desc, disable=not self.progress, file=sys.stderr, leave=False)
        return [self.run_one(r, output_type, check) for r in bar]

    def _attempt(self, request: LLMRequest, output_type: type[BaseModel], check: Check | None, attempt: int) -> CallRecord:
        base: dict[str, Any] = dict(
            key=request.key,
            attempt=attempt,
            purpose=request.purpose,
            provider=request.provider,
            model=request.model,
            request=request.model_dump(mode="json"),
        )
        self.calls_made += 1
        try:
            raw = self.provider.complete(request)
        except ReplayMiss:
            raise
        except ProviderError as exc:
            return CallRecord(**base, response_text=None, parsed=None, ok=False, error=f"provider error: {exc}")
        meta = dict(usage=raw.usage, latency_s=raw.latency_s, request_id=raw.request_id, response_text=raw.text)
        try:
            parsed = _parse(raw.text, output_type)
            if check is not None:
                check(parsed, request)
        except (ValidationError, ValueError) as exc:
            return CallRecord(**base, **meta, parsed=None, ok=False, error=f"invalid output: {exc}")
        return CallRecord(**base, **meta, parsed=parsed.model_dump(mode="json"), ok=True)
