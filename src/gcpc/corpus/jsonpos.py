"""Where the elements of a top-level JSON array sit in their file (line and byte span).

Whole-document JSON logs (ATIF `trajectory.json`, SWE-agent `.traj`) are parsed with `json`,
which keeps no positions. To point each event back into the file, the top-level object is
walked with `JSONDecoder.raw_decode` (the C scanner) and the array under one key is decoded
element by element, recording where each element starts and ends.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


@dataclass(frozen=True)
class Span:
    line: int
    end_line: int
    byte_start: int
    byte_end: int


def _newlines(text: str) -> list[int]:
    """Offsets of every newline, found with `str.find` (a scan per character in Python was most of the time
    spent reading a SWE-bench `.traj.json`)."""
    out: list[int] = []
    i = text.find("\n")
    while i != -1:
        out.append(i)
        i = text.find("\n", i + 1)
    return out


class Positions:
    """Character offsets -> 1-based lines and byte offsets of one decoded text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = _newlines(text)
        self.ascii = text.isascii()
        self.base = 0  # bytes before `text` in its file (a byte-order mark)
        self._last = (0, 0)  # (char offset, byte offset) of the previous query: spans are asked in order

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1

    def byte(self, pos: int) -> int:
        if self.ascii:
            return self.base + pos
        last_pos, last_byte = self._last if pos >= self._last[0] else (0, 0)
        result = last_byte + len(self.text[last_pos:pos].encode("utf-8"))
        self._last = (pos, result)
        return self.base + result

    def span(self, start: int, end: int) -> Span:
        return Span(self.line(start), self.line(max(end - 1, start)), self.byte(start), self.byte(end))


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def top_level_array_spans(text: str, key: str) -> list[tuple[int, int]] | None:
    """(start, end) character offsets of each element of the array at top-level `key`; None if absent."""
    pos = _skip(text, 0)
    if not text.startswith("{", pos):
        return None
    pos += 1
    while True:
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] == "}":
            return None
        name, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if not text.startswith(":", pos):
            return None
        pos = _skip(text, pos + 1)
        if name == key and text.startswith("[", pos):
            spans: list[tuple[int, int]] = []
            pos = _skip(text, pos + 1)
            if text.startswith("]", pos):
                return spans
            while True:
                start = pos
                _, pos = _DECODER.raw_decode(text, pos)
                spans.append((start, pos))
                pos = _skip(text, pos)
                if text.startswith(",", pos):
                    pos = _skip(text, pos + 1)
                    continue
                return spans
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos += 1


def load_with_spans(data: bytes, label: str, key: str) -> tuple[Any, list[Span] | None, Positions]:
    """Decode a UTF-8 JSON document; spans of the elements under top-level `key` when it is an array.

    Errors name the file and, for invalid JSON, the line and column.
    """
    base = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a leading byte-order mark: read, kept nowhere
    try:
        text = data[base:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{label}: not UTF-8 ({exc.reason} at byte {base + exc.start})") from exc
    if not text.strip():
        raise ValueError(f"{label}: empty file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{label}: invalid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from exc
    pos = Positions(text)
    pos.base = base
    raw = top_level_array_spans(text, key) if isinstance(doc, dict) else None
    return doc, ([pos.span(a, b) for a, b in raw] if raw is not None else None), pos
