"""The single place where log events become the text a judge sees.

It takes events only, so outcome, verifier results and trial metadata cannot leak into the
judge's view. Every block starts with the event index, which is what judges cite.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gcpc.corpus.models import Event

DEFAULT_MAX_CHARS = 4000


def truncate_middle(text: str, max_chars: int | None) -> str:
    """Keep the head and the tail (where commands and results usually are), mark the cut."""
    if max_chars is None or max_chars <= 0 or len(text) <= max_chars:
        return text
    marker_len = len(_marker(len(text)))
    keep = max(max_chars - marker_len, 0)
    head = (keep + 1) // 2
    tail = keep - head
    cut = len(text) - head - tail
    return text[:head] + _marker(cut) + (text[-tail:] if tail else "")


def _marker(cut: int) -> str:
    return f"\n[... {cut} chars truncated ...]\n"


def event_header(event: Event) -> str:
    detail = [event.tool] if event.tool else []
    if event.is_error:
        detail.append("error")
    suffix = f" ({', '.join(detail)})" if detail else ""
    return f"[{event.index}] {event.kind.value.upper()}{suffix}:"


def render_event(event: Event, max_chars: int | None = DEFAULT_MAX_CHARS) -> str:
    return f"{event_header(event)}\n{truncate_middle(event.text, max_chars)}"


def render_log(events: Iterable[Event], max_chars: int | None = DEFAULT_MAX_CHARS) -> str:
    """Judge-visible log: one `[i] KIND (tool):` block per event; `max_chars` per event, None = no cut."""
    blocks = [render_event(e, max_chars) for e in events]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def iter_rendered(events: Iterable[Event], max_chars: int | None = DEFAULT_MAX_CHARS) -> Iterator[str]:
    """`render_log` in pieces (their concatenation is exactly `render_log`), for sizes and hashes of
    very long logs without holding the whole rendering in memory."""
    first = True
    for e in events:
        if not first:
            yield "\n\n"
        first = False
        yield event_header(e)
        yield "\n"
        yield truncate_middle(e.text, max_chars)
    if not first:
        yield "\n"
