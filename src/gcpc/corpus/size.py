"""Raw vs rendered size of an agent log, in characters and estimated tokens.

Token counts are an estimate, not a tokenizer: `ceil(characters / 4)`, the usual rule of thumb
for English text and code with BPE tokenizers. No tokenizer vocabulary ships with the project's
dependencies (tiktoken downloads its encodings on first use and fails offline), so the estimate
is used everywhere and labelled `TOKENIZER` in every record. It overstates tokens for long runs
of spaces and understates them for dense non-ASCII text; ratios between raw and rendered text of
the same log are what it is used for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gcpc.corpus.models import Event, LogSize
from gcpc.corpus.render import DEFAULT_MAX_CHARS, render_log

TOKENIZER = "chars/4"


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(len(text) / 4)."""
    return math.ceil(len(text) / 4)


def decode_lenient(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def log_size(raw: Sequence[bytes], events: Sequence[Event], max_chars: int | None = DEFAULT_MAX_CHARS) -> LogSize:
    """Size of the raw log files (all of them, as read) and of the judge-visible rendering."""
    raw_text = "".join(decode_lenient(b) for b in raw)
    rendered = render_log(events, max_chars)
    return LogSize(
        raw_bytes=sum(len(b) for b in raw),
        raw_chars=len(raw_text),
        raw_tokens=estimate_tokens(raw_text),
        rendered_chars=len(rendered),
        rendered_tokens=estimate_tokens(rendered),
        render_max_chars=max_chars,
        tokenizer=TOKENIZER,
    )
