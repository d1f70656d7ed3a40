"""Raw vs rendered size of an agent log, in characters and estimated tokens.

Token counts are an estimate, not a tokenizer: `ceil(characters / 4)`, the usual rule of thumb
for English text and code with BPE tokenizers. No tokenizer vocabulary ships with the project's
dependencies (tiktoken downloads its encodings on first use and fails offline), so the estimate
is used everywhere and labelled `TOKENIZER` in every record. It overstates tokens for long runs
of spaces and understates them for dense non-ASCII text; ratios between raw and rendered text of
the same log are what it is used for.
"""

from __future__ import annotations

import codecs
import math
from pathlib import Path
from collections.abc import Sequence

from gcpc.corpus.models import Event, LogSize
from gcpc.corpus.render import DEFAULT_MAX_CHARS, iter_rendered

TOKENIZER = "chars/4"


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(len(text) / 4)."""
    return math.ceil(len(text) / 4)


def decode_lenient(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


CHUNK = 1 << 20


def _raw_counts(raw: bytes | Path) -> tuple[int, int]:
    """(bytes, characters as leniently decoded) of one raw log, given as bytes or as its file (read in chunks)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    if isinstance(raw, Path):
        n_bytes = n_chars = 0
        with raw.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                n_bytes += len(chunk)
                n_chars += len(decoder.decode(chunk))
        return n_bytes, n_chars + len(decoder.decode(b"", final=True))
    chars = sum(len(decoder.decode(raw[i : i + CHUNK])) for i in range(0, len(raw), CHUNK))
    return len(raw), chars + len(decoder.decode(b"", final=True))


def log_size(raw: Sequence[bytes | Path], events: Sequence[Event], max_chars: int | None = DEFAULT_MAX_CHARS) -> LogSize:
    """Size of the raw log files (all of them, as read; bytes or paths) and of the judge-visible rendering.
    Counted in pieces: a 200 MB log is never held twice for its size."""
    counts = [_raw_counts(r) for r in raw]
    raw_chars = sum(c for _, c in counts)
    rendered_chars = sum(len(piece) for piece in iter_rendered(events, max_chars))
    return LogSize(
        raw_bytes=sum(b for b, _ in counts),
        raw_chars=raw_chars,
        raw_tokens=math.ceil(raw_chars / 4),
        rendered_chars=rendered_chars,
        rendered_tokens=math.ceil(rendered_chars / 4),
        render_max_chars=max_chars,
        tokenizer=TOKENIZER,
    )
