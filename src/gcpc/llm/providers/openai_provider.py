"""OpenAI Chat Completions (and the Batch API) through the `openai` SDK; with `base_url` also any
OpenAI-compatible server (vLLM, Ollama, llama.cpp server, OpenRouter).

* Structured output: `chat.completions.parse(response_format=Model)` (through `with_raw_response`),
  which sends the strict JSON schema the SDK derives from the pydantic model named in
  `request.output_schema`. The reply's raw text goes back to the client, which validates it
  against the same model; a reply that does not validate is recorded and retried (bounded),
  never coerced. (The SDK's own post-parse would raise and lose the raw text, so it is not used.)
* The batch body carries the same `response_format` (`type_to_response_format_param(Model)`, the
  function `parse` itself uses) so batch and synchronous calls ask the same thing.
* Prompt caching is automatic on OpenAI for a shared prefix; the stable prefix is the first
  (system) message. `prompt_cache_key: true` adds a routing hint derived from that prefix.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import json
from typing import Any

import openai
from openai.lib._parsing import type_to_response_format_param

from gcpc.llm.base import BatchResult, LLMRequest, RawResponse
from gcpc.llm.providers.remote import RemoteProvider, int_usage, split_known
from gcpc.llm.settings import LLMSettings

_SKIP = {"self", "extra_body", "extra_headers", "extra_query", "timeout", "response_format"}
_KNOWN_PARSE = set(inspect.signature(openai.resources.chat.completions.Completions.parse).parameters) - _SKIP
_KNOWN_CREATE = set(inspect.signature(openai.resources.chat.completions.Completions.create).parameters) - _SKIP - {"stream"}
ENDPOINT = "/v1/chat/completions"
DONE = ("completed", "failed", "expired", "cancelled")


@functools.lru_cache(maxsize=64)
def _model_format(model_cls: type) -> dict[str, Any]:
    """`type_to_response_format_param(Model)` (what `parse` sends), computed once per response model."""
    return type_to_response_format_param(model_cls)


def _from_completion(data: dict[str, Any], request_id: str | None, batch_id: str | None = None) -> RawResponse:
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    text = message.get("content")
    stop = choice.get("finish_reason")
    if text is None and message.get("refusal"):
        text, stop = "", f"refusal: {message['refusal']}"
    u = data.get("usage") or {}
    prompt = u.get("prompt_tokens") or 0
    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (u.get("completion_tokens_details") or {}).get("reasoning_tokens")
    usage = int_usage(input_tokens=prompt - cached, cache_read_input_tokens=cached,
                      output_tokens=u.get("completion_tokens") or 0, reasoning_tokens=reasoning)
    return RawResponse(text=text or "", usage=usage, request_id=request_id, served_model=data.get("model"),
                       stop_reason=stop, batch_id=batch_id)


class OpenAIProvider(RemoteProvider):
    name = "openai"
    sdk = openai

    def __init__(self, settings: LLMSettings):
        if settings.effort is not None:
            raise ValueError(f"llm config for {settings.model}: use 'reasoning_effort', not 'effort', with OpenAI")
        super().__init__(settings)

    def make_sync_client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key=self._api_key, base_url=self.settings.base_url, max_retries=0, timeout=self.timeout())

    def make_async_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.settings.base_url, max_retries=0, timeout=self.timeout(),
                                  http_client=openai.DefaultAsyncHttpxClient(limits=self.limits()))

    # ---- the one payload ----------------------------------------------------------------------
    def payload(self, request: LLMRequest) -> dict[str, Any]:
        s = request.sampling
        body: dict[str, Any] = {"model": request.model,
                                "messages": [{"role": m.role, "content": m.content} for m in request.messages]}
        if s.get("max_tokens") is not None:
            body[self.settings.max_tokens_param] = s["max_tokens"]
        for k in ("temperature", "top_p", "seed", "reasoning_effort"):
            if s.get(k) is not None:
                body[k] = s[k]
        prefix = [m.content for m in request.messages if m.cache_prefix]
        if self.settings.prompt_cache_key and prefix:
            body["prompt_cache_key"] = "gcpc-" + hashlib.sha256("\n".join(prefix).encode()).hexdigest()[:32]
        body.update(s.get("extra_body") or {})
        return body

    def response_format(self, request: LLMRequest) -> dict[str, Any]:
        model_cls = self.output_model(request)
        if model_cls is not None:
            return _model_format(model_cls)
        return {"type": "json_schema", "json_schema": {"name": request.output_schema, "schema": request.json_schema, "strict": False}}

    def _prepare(self, request: LLMRequest) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(SDK method, its keyword arguments, extra_body).

        `response_format` is the SDK's own `type_to_response_format_param(Model)` (exactly what
        `parse(response_format=Model)` puts in the body), computed once per model and handed over
        through `extra_body`: it is already in wire format, and passing it as an argument would make
        the SDK re-derive the schema and walk it with its recursive TypedDict transform on every
        call (~3 ms of CPU per call, the dominant client cost at high concurrency). The JSON body
        sent is the same.
        """
        model_cls = self.output_model(request)
        body = self.payload(request)
        method, known_names = ("parse", _KNOWN_PARSE) if model_cls is not None else ("create", _KNOWN_CREATE)
        known, extra = split_known(body, known_names)
        extra["response_format"] = self.response_format(request)
        return method, known, extra

    def call(self, client: openai.OpenAI, request: LLMRequest) -> RawResponse:
        method, known, extra = self._prepare(request)
        raw = getattr(client.chat.completions.with_raw_response, method)(**known, extra_body=extra)
        # A malformed body raises here and is retried as a transport failure. The reply text is
        # validated by the client against the same model (an invalid reply is recorded, then retried).
        return _from_completion(raw.http_response.json(), raw.request_id)

    async def acall(self, client: openai.AsyncOpenAI, request: LLMRequest) -> RawResponse:
        method, known, extra = self._prepare(request)
        raw = await getattr(client.chat.completions.with_raw_response, method)(**known, extra_body=extra)
        return _from_completion(raw.http_response.json(), raw.request_id)

    # ---- Batch API ----------------------------------------------------------------------------
    def batch_line(self, request: LLMRequest) -> dict[str, Any]:
        return {"custom_id": request.key, "method": "POST", "url": ENDPOINT,
                "body": {**self.payload(request), "response_format": self.response_format(request)}}

    def submit_batch(self, requests: list[LLMRequest]) -> str:
        data = "".join(json.dumps(self.batch_line(r), sort_keys=True, ensure_ascii=False) + "\n" for r in requests).encode()
        client = self.sync_client()
        uploaded = self.retried("batch file upload", lambda: client.files.create(
            file=("gcpc-batch.jsonl", io.BytesIO(data), "application/jsonl"), purpose="batch"))
        batch = self.retried("batch create", lambda: client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata={"gcpc_requests": str(len(requests))}))
        return batch.id

    def batch_status(self, batch_id: str) -> tuple[bool, dict[str, int]]:
        batch = self.retried(f"batch {batch_id} retrieve", lambda: self.sync_client().batches.retrieve(batch_id))
        c = batch.request_counts
        counts = {"total": c.total, "completed": c.completed, "failed": c.failed} if c else {}
        counts["status:" + batch.status] = 1
        return batch.status in DONE, counts

    def _file_lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        text = self.retried(f"file {file_id} content", lambda: self.sync_client().files.content(file_id).text)
        # JSONL lines end at "\n" only: str.splitlines() would also split at U+2028, U+0085, ... inside a string
        return [json.loads(line) for line in text.split("\n") if line.strip()]

    def batch_results(self, batch_id: str) -> list[BatchResult]:
        batch = self.retried(f"batch {batch_id} retrieve", lambda: self.sync_client().batches.retrieve(batch_id))
        if batch.status == "failed":
            errors = "; ".join(f"{e.code}: {e.message}" for e in (batch.errors.data if batch.errors and batch.errors.data else []))
            raise openai.OpenAIError(f"batch {batch_id} failed validation: {errors or 'no details'}")
        out = []
        for line in self._file_lines(batch.output_file_id) + self._file_lines(batch.error_file_id):
            response, error = line.get("response") or {}, line.get("error")
            if response.get("status_code") == 200 and not error:
                out.append(BatchResult(custom_id=line["custom_id"],
                                       response=_from_completion(response.get("body") or {}, response.get("request_id"), batch_id)))
            else:
                detail = error or (response.get("body") or {}).get("error") or {}
                out.append(BatchResult(custom_id=line["custom_id"],
                                       error=f"batch entry errored (status {response.get('status_code')}): "
                                             f"{detail.get('code', '')}: {detail.get('message', '')}"))
        return out
