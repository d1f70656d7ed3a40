"""A local stand-in for an LLM HTTP API: threads, fault injection, call counting, batches.

`FakeLLMServer` serves on 127.0.0.1 (ephemeral port) from a background thread. Subclasses
(`FakeAnthropic`, `FakeOpenAI`) implement the wire format of each API closely enough for the
real SDKs; this base holds what both share:

* `responder(ctx) -> str` produces the model's text for one request (default: a schema-valid
  answer built from the prompt, deterministic in the prompt).
* `faults`: a queue consumed by synchronous model calls, one fault per call, to inject HTTP
  errors with headers (429 + Retry-After, 500), slow responses (timeouts), malformed bodies,
  or a replacement model text (invalid output).
* `fault_rules`: callables `(raw request body text) -> Fault | None` consulted before the queue, so
  a fault can follow a request's content whatever order calls arrive in (e.g. always refuse the
  request that carries a marker).
* counters: `model_calls` counts every model call that reached the server (sync or inside a
  batch), `requests` logs (route, body, auth header) for assertions.
* `latency_s`: a fixed artificial latency per model call (throughput benchmark).
* batches are held (`hold_batches=True`) until `release_batches()`; results are computed then.
* batch end states (issue 47): `batch_end` ends every batch in that state instead of completing it
  (OpenAI `failed` / `expired` / `cancelled`, Anthropic `canceled` / `expired`; the first `batch_partial`
  entries are answered before an expiry or cancel), `gone` ({"batch", "output"}) answers 404 for an
  ended batch or its output file, `relabel_ids` returns the results under custom ids the client never
  sent (`extra_results`: that many copies of a result under such ids besides); `paid` counts the answers computed per custom id (a value above 1: paid twice).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakeservers.ratelimits import FakeRateLimits


@dataclass
class Fault:
    """One injected misbehaviour for the next synchronous model call."""

    kind: str  # "status" | "delay" | "malformed" | "content" | "reset" (connection closed without an answer) | "refusal" (text: the refusal)
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "injected failure"
    seconds: float = 0.0
    text: str = ""
    echo_auth: bool = False  # put the request's Authorization / x-api-key value into the error message


@dataclass
class Ctx:
    """What a responder sees about one model call."""

    model: str
    schema_name: str | None
    system: str
    user: str
    occurrence: int  # how many times this exact prompt was answered before (0 = first time)


def prompt_digest(system: str, user: str) -> str:
    return hashlib.sha256((system + "\x00" + user).encode()).hexdigest()


ITEM_LINE = re.compile(r"^- \[([^\]]+)\]", re.M)


def default_responder(ctx: Ctx) -> str:
    """A schema-valid answer derived only from the prompt (so it is deterministic)."""
    if ctx.schema_name == "ChecklistJudgment":
        verdicts = []
        for item_id in ITEM_LINE.findall(ctx.system + "\n" + ctx.user):
            h = int(hashlib.sha256((item_id + "\x00" + ctx.user).encode()).hexdigest(), 16)
            verdicts.append({"item_id": item_id, "label": ["Yes", "No", "Abstain"][h % 3], "evidence": [],
                             "reason": f"fake verdict {h % 997}"})
        return json.dumps({"verdicts": verdicts})
    h = int(hashlib.sha256(ctx.user.encode()).hexdigest(), 16)
    if ctx.schema_name == "TickChecklist":
        return json.dumps({"analysis": "The instruction asks for one task; its result should be checked.",
                           "questions": ["Does the agent complete what the instruction asks?", "Is the result checked?"]})
    if ctx.schema_name == "TickAnswer":
        return json.dumps({"reasoning": f"fake reasoning {h % 997}", "verdict": ["YES", "NO"][h % 2]})
    if ctx.schema_name == "HolisticJudgment":
        return json.dumps({"rationale": f"fake rationale {h % 997}", "score": h % 11})
    if ctx.schema_name == "GeneratedChecklist":
        sentence = (ctx.user.strip().split(".")[0] or "do the task").strip()
        return json.dumps({"items": [{"text": sentence, "quote": sentence, "route": "judge", "test_refs": []}]})
    return "{}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client killed mid-call (the kill -9 tests): nothing to report
        super().handle_error(request, client_address)


class FakeLLMServer:
    """Base class; subclasses set `handler_routes`."""

    provider = "fake"

    def __init__(self, *, responder: Callable[[Ctx], str] = default_responder, latency_s: float = 0.0,
                 hold_batches: bool = False, simulate_cache: bool = False, port: int = 0, reuse_port: bool = False,
                 rate_limits: dict[str, int] | None = None, time_scale: float = 1.0):
        """`rate_limits`: per-minute limits the server enforces with 429s and announces in headers
        (`fakeservers.ratelimits`; OpenAI: requests, tokens; Anthropic: requests, input_tokens, output_tokens), on a
        clock `time_scale` times faster than real time."""
        self.responder = responder
        self.rate = FakeRateLimits(self.provider, rate_limits, time_scale) if rate_limits else None
        self._sent = threading.local()
        self.latency_s = latency_s
        self.hold_batches = hold_batches
        self.simulate_cache = simulate_cache
        self.faults: deque[Fault] = deque()
        self.fault_rules: list[Callable[[str], Fault | None]] = []
        self.lock = threading.Lock()
        self.model_calls = 0
        self.inflight = 0
        self.max_inflight = 0
        self.busy_s = 0.0  # time with at least one model call in flight (bench_judge_stage: idle share of a run)
        self._busy_since: float | None = None
        self.first_call: float | None = None
        self.last_leave: float | None = None
        self.route_calls: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.prompt_counts: dict[str, int] = {}
        self.seen_prefixes: set[str] = set()
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self._seq = 0
        self.batch_end: str | None = None
        self.batch_partial = 2
        self.gone: set[str] = set()
        self.relabel_ids = False
        self.extra_results = 0
        self.paid: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes; avoid the 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    server.dispatch(self, method, raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        # reuse_port lets several server processes share one port (the benchmark spreads load that way)
        server_cls = type("_ReusePortServer", (_Server,), {"allow_reuse_port": True}) if reuse_port else _Server
        self._httpd = server_cls(("127.0.0.1", port), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- helpers for subclasses -------------------------------------------------------------
    def next_id(self, prefix: str) -> str:
        with self.lock:
            self._seq += 1
            return f"{prefix}_{self._seq:06d}"

    def count_route(self, route: str) -> None:
        with self.lock:
            self.route_calls[route] = self.route_calls.get(route, 0) + 1

    def log_request(self, route: str, body: Any, headers: Any) -> None:
        with self.lock:
            self.requests.append({"route": route, "body": body,
                                  "auth": headers.get("authorization") or headers.get("x-api-key"),
                                  "headers": {k.lower(): v for k, v in headers.items()}})

    def enter(self) -> None:
        """A synchronous model call started (tracks how many the client keeps in flight)."""
        with self.lock:
            now = time.monotonic()
            if self.inflight == 0:
                self._busy_since = now
            self.first_call = now if self.first_call is None else self.first_call
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)

    def leave(self) -> None:
        with self.lock:
            self.inflight -= 1
            now = time.monotonic()
            self.last_leave = now
            if self.inflight == 0 and self._busy_since is not None:
                self.busy_s += now - self._busy_since
                self._busy_since = None

    def take_fault(self) -> Fault | None:
        with self.lock:
            return self.faults.popleft() if self.faults else None

    def answer(self, model: str, schema_name: str | None, system: str, user: str) -> str:
        digest = prompt_digest(system, user)
        with self.lock:
            n = self.prompt_counts.get(digest, 0)
            self.prompt_counts[digest] = n + 1
            self.model_calls += 1
        return self.responder(Ctx(model=model, schema_name=schema_name, system=system, user=user, occurrence=n))

    def cache_usage(self, prefix: str, marked: bool) -> tuple[int, int]:
        """(cache_creation, cache_read) tokens for a prefix carrying a cache marker."""
        if not (self.simulate_cache and marked and prefix):
            return 0, 0
        tokens = max(1, len(prefix) // 4)
        with self.lock:
            if prefix in self.seen_prefixes:
                return 0, tokens
            self.seen_prefixes.add(prefix)
            return tokens, 0

    @staticmethod
    def send_json(handler: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        FakeLLMServer.send_bytes(handler, status, data, "application/json", headers)

    @staticmethod
    def send_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str,
                   headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        handler.send_header("content-type", ctype)
        handler.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)

    def apply_fault(self, handler: BaseHTTPRequestHandler, fault: Fault | None, error_body: Callable[[int, str], Any]) -> bool:
        """Serve an injected fault; True when the response was already sent."""
        if fault is None:
            return False
        if fault.kind == "delay":
            time.sleep(fault.seconds)
            return False
        if fault.kind == "status":
            message = fault.message
            if fault.echo_auth:
                message += " (credential seen: " + str(handler.headers.get("authorization") or handler.headers.get("x-api-key")) + ")"
            self.send_json(handler, fault.status, error_body(fault.status, message), fault.headers)
            return True
        if fault.kind == "reset":
            import socket

            handler.close_connection = True
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        if fault.kind == "malformed":
            self.send_bytes(handler, 200, b'{"id": "broken", "content": [', "application/json")
            return True
        return False  # "content" faults are applied by the subclass when building the answer

    def model_call(self, handler: BaseHTTPRequestHandler, build: Callable[[str | None], Any], body_text: str = "",
                   prompt_tokens: int = 0) -> Any | None:
        """One synchronous model call: the rate limits (a 429 past them), in-flight tracking, an injected fault or
        the artificial latency, then `build(content_override)`. None when a response was already sent. The headers
        the answer goes out with are `answer_headers()`."""
        self._sent.headers = {}
        if self.rate is not None:
            ok, headers, why = self.rate.arrive(prompt_tokens)
            if not ok:
                self.send_json(handler, 429, self.error_body(429, f"Rate limit reached ({why}); please try again later"), headers)
                return None
        answer = self._model_call(handler, build, body_text)
        if answer is not None and self.rate is not None:
            self._sent.headers = self.rate.answered(*self.usage_of(answer))
        return answer

    def answer_headers(self) -> dict[str, str]:
        """The rate-limit headers for the answer this handler thread just built (none without limits)."""
        return dict(getattr(self._sent, "headers", {}))

    def usage_of(self, answer: Any) -> tuple[int, int, int]:  # pragma: no cover
        """(input tokens, output tokens, cache reads) an answer reports."""
        raise NotImplementedError

    def _model_call(self, handler: BaseHTTPRequestHandler, build: Callable[[str | None], Any], body_text: str) -> Any | None:
        self.enter()
        try:
            fault = next((f for f in (rule(body_text) for rule in self.fault_rules) if f is not None), None)
            fault = fault or self.take_fault()
            if self.apply_fault(handler, fault, self.error_body):
                return None
            if self.latency_s:
                time.sleep(self.latency_s)
            answer = build(fault.text if fault is not None and fault.kind == "content" else None)
            if fault is not None and fault.kind == "refusal":
                self.refuse(answer, fault.text)
            return answer
        finally:
            self.leave()

    def refuse(self, answer: Any, text: str) -> None:  # pragma: no cover
        """Turn a built answer into the API's form of a model refusal carrying `text`."""
        raise NotImplementedError

    def dispatch(self, handler: BaseHTTPRequestHandler, method: str, raw: bytes) -> None:  # pragma: no cover
        raise NotImplementedError

    def release_batches(self) -> None:
        """Let every held batch finish (results are computed now, counted as model calls)."""
        with self.lock:
            self.hold_batches = False
            ids = list(self.batches)
        for batch_id in ids:
            self.finish_batch(batch_id)

    def finish_batch(self, batch_id: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def batch_plan(self, custom_ids: list[str]) -> tuple[set[str], str]:
        """(custom ids answered, end state) for a batch ending now under `batch_end`; counts what is paid."""
        state = self.batch_end or "completed"
        answered = set(custom_ids)
        if state == "failed":
            answered = set()
        elif state in ("expired", "cancelled", "canceled"):
            answered = set(custom_ids[:self.batch_partial])
        with self.lock:
            for cid in answered:
                self.paid[cid] = self.paid.get(cid, 0) + 1
        return answered, state

    def label(self, custom_id: str) -> str:
        """The custom id a result comes back under (`relabel_ids`: one the client never sent)."""
        return "foreign-" + hashlib.sha256(custom_id.encode()).hexdigest()[:16] if self.relabel_ids else custom_id

    def paid_twice(self) -> int:
        """Custom ids whose answer the server computed more than once."""
        return sum(1 for n in self.paid.values() if n > 1)


def schema_in_prompt(text: str) -> dict[str, Any] | None:
    """The JSON schema a prompt shows (`structured_output: prompt`, as conf/llm/claude-sonnet-4-6.yaml sends it: the
    schema in the prompt text, one line of JSON after the log): the last line that parses as an object with
    `properties`. None when the prompt shows none."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"properties"' in line:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("properties"), dict):
                found = obj
    return found


def schema_name_from(schema: dict[str, Any] | None) -> str | None:
    """Recognise our response models from the JSON schema a request carries."""
    if not schema:
        return None
    props = schema.get("properties") or {}
    if "verdicts" in props:
        return "ChecklistJudgment"
    if "items" in props:
        return "GeneratedChecklist"
    if "questions" in props:
        return "TickChecklist"
    if "verdict" in props and "reasoning" in props:
        return "TickAnswer"
    if "score" in props and "rationale" in props:
        return "HolisticJudgment"
    return None
