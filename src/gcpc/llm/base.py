"""The one seam between pipeline stages and whatever produces text: an LLM or the offline heuristic.

Stages build `LLMRequest`s (rendered prompt messages plus the structured inputs they were
rendered from), hand them to an `LLMClient`, and get validated pydantic objects back.
Providers only turn one request into raw text; caching, retries on invalid output and
persistence of every attempt are the client's job, so they behave the same for every provider.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from gcpc.io import content_hash


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str
    cache_prefix: bool = Field(default=False, description="stable prefix: providers that support it mark a cache breakpoint here")


class LLMRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    purpose: str = Field(description="what the call is for, e.g. 'checklist' or 'judgment:gcpc'")
    provider: str
    model: str
    messages: list[Message]
    output_schema: str = Field(description="name of the pydantic model the response must validate against")
    json_schema: dict[str, Any]
    sampling: dict[str, Any] = Field(default_factory=dict)
    template_hash: str
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="structured inputs the messages were rendered from; only the heuristic provider reads them",
    )

    @property
    def key(self) -> str:
        """Content address of the full request: unchanged request => cached answer, zero calls."""
        return content_hash(self.model_dump(mode="json"))


class RawResponse(BaseModel):
    text: str
    usage: dict[str, int] = Field(default_factory=dict)
    request_id: str | None = None
    latency_s: float | None = None


@runtime_checkable
class Provider(Protocol):
    """Turns one request into raw text. Must be deterministic for a given request where possible."""

    name: str

    def complete(self, request: LLMRequest) -> RawResponse: ...


class ProviderError(RuntimeError):
    """A provider could not answer (network, API error, replay miss)."""


class ReplayMiss(ProviderError):
    """Replay mode found no recorded response: an error, never a silent new call."""


class CallRecord(BaseModel):
    """One attempt, as persisted in a stage's llm_calls.jsonl."""

    key: str
    attempt: int
    purpose: str
    provider: str
    model: str
    request: dict[str, Any]
    response_text: str | None
    parsed: dict[str, Any] | None
    ok: bool
    error: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    latency_s: float | None = None
    request_id: str | None = None


class CallResult(BaseModel):
    """What a stage gets back for one request: a validated object or a reported failure."""

    key: str
    ok: bool
    parsed: dict[str, Any] | None
    attempts: int
    error: str | None = None
    cached: bool = False
