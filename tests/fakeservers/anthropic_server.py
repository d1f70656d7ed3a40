"""Fake Anthropic Messages API: /v1/messages and the Message Batches endpoints."""

from __future__ import annotations

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakeservers.base import FakeLLMServer, schema_in_prompt, schema_name_from

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def _marked(content: Any) -> bool:
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("cache_control") for b in content)


class FakeAnthropic(FakeLLMServer):
    provider = "anthropic"

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.errored_custom_ids: set[str] = set()

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}

    def message_for(self, params: dict[str, Any], override: str | None = None) -> dict[str, Any]:
        system_blocks = params.get("system") or ""
        system = _text(system_blocks)
        user = "\n".join(_text(m.get("content")) for m in params.get("messages", []) if m.get("role") == "user")
        fmt = ((params.get("output_config") or {}).get("format") or {})
        # a native schema (output_config.format), else the one the prompt shows (structured_output: prompt)
        schema = fmt.get("schema") if fmt.get("type") == "json_schema" else schema_in_prompt(system + "\n" + user)
        text = self.answer(params.get("model", ""), schema_name_from(schema), system, user)
        if override is not None:
            text = override
        created, read = self.cache_usage(system, _marked(system_blocks))
        prompt_tokens = self.prompt_tokens(params)
        digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:24]
        return {
            "id": f"msg_{digest}", "type": "message", "role": "assistant", "model": params.get("model", ""),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens - created - read, "output_tokens": max(1, len(text) // 4),
                      "cache_creation_input_tokens": created, "cache_read_input_tokens": read},
        }

    @staticmethod
    def prompt_tokens(params: dict[str, Any]) -> int:
        """The fake's token count of a request's prompt (a token per 4 characters), before it is answered."""
        system = _text(params.get("system") or "")
        user = "\n".join(_text(m.get("content")) for m in params.get("messages", []) if m.get("role") == "user")
        return max(1, (len(system) + len(user)) // 4)

    def usage_of(self, answer: dict[str, Any]) -> tuple[int, int, int]:
        u = answer["usage"]
        return (u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"], u["output_tokens"],
                u["cache_read_input_tokens"])

    def refuse(self, answer: dict[str, Any], text: str) -> None:
        """Anthropic's refusal: `stop_reason: "refusal"`, the text (if any) in the content."""
        answer.update(stop_reason="refusal", content=[{"type": "text", "text": text}] if text else [])

    def dispatch(self, handler: BaseHTTPRequestHandler, method: str, raw: bytes) -> None:
        path = handler.path.split("?")[0]
        body = json.loads(raw) if raw else None
        self.log_request(f"{method} {path}", body, handler.headers)
        if method == "POST" and path == "/v1/messages":
            self.count_route("messages")
            message = self.model_call(handler, lambda text: self.message_for(body, text), raw.decode("utf-8", "replace"),
                                      prompt_tokens=self.prompt_tokens(body))
            if message is None:
                return
            self.send_json(handler, 200, message, {"request-id": "req_" + message["id"][4:], **self.answer_headers()})
            return
        if method == "POST" and path == "/v1/messages/batches":
            self.count_route("batch_create")
            batch_id = self.next_id("msgbatch")
            with self.lock:
                self.batches[batch_id] = {"requests": body["requests"], "ended": False, "results": None}
            self.send_json(handler, 200, self._batch_obj(batch_id))
            return
        m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?", path)
        if method == "GET" and m:
            batch_id, results = m.group(1), m.group(2)
            if batch_id not in self.batches:
                self.send_json(handler, 404, self.error_body(404, f"no batch {batch_id}"))
                return
            if "batch" in self.gone and self.batches[batch_id]["ended"]:
                self.send_json(handler, 404, self.error_body(404, f"no batch {batch_id}"))
                return
            if results:
                self.count_route("batch_results")
                batch = self.batches[batch_id]
                data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch["results"] or []).encode()  # raw U+2028 etc., as real APIs send
                self.send_bytes(handler, 200, data, "application/binary")
                return
            self.count_route("batch_retrieve")
            if not self.hold_batches:
                self.finish_batch(batch_id)
            if "batch" in self.gone and self.batches[batch_id]["ended"]:
                self.send_json(handler, 404, self.error_body(404, f"no batch {batch_id}"))
                return
            self.send_json(handler, 200, self._batch_obj(batch_id))
            return
        self.send_json(handler, 404, self.error_body(404, f"fake anthropic: no route {method} {path}"))

    def finish_batch(self, batch_id: str) -> None:
        batch = self.batches[batch_id]
        if batch["ended"]:
            return
        results = []
        answered, state = self.batch_plan([req["custom_id"] for req in batch["requests"]])
        for req in reversed(batch["requests"]):  # results come back in no particular order
            if req["custom_id"] not in answered:  # canceled or expired before it ran
                results.append({"custom_id": self.label(req["custom_id"]), "result": {"type": state}})
                continue
            if req["custom_id"] in self.errored_custom_ids:  # errors once, then succeeds when resubmitted
                self.errored_custom_ids.discard(req["custom_id"])
                results.append({"custom_id": req["custom_id"], "result": {
                    "type": "errored", "error": self.error_body(529, "Overloaded")}})
                continue
            results.append({"custom_id": self.label(req["custom_id"]),
                            "result": {"type": "succeeded", "message": self.message_for(req["params"])}})
        results += [{**results[0], "custom_id": f"foreign-extra-{i}"} for i in range(self.extra_results if results else 0)]
        batch["results"] = results
        batch["ended"] = True

    def _batch_obj(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        n = len(batch["requests"])
        ended = batch["ended"]
        kinds = [r["result"]["type"] for r in batch["results"] or []]
        return {
            "id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": kinds.count("succeeded"),
                               "errored": kinds.count("errored"), "canceled": kinds.count("canceled"),
                               "expired": kinds.count("expired")},
            "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T01:00:00Z" if ended else None, "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }
