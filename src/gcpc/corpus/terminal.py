"""Terminal recordings as clean text lines that still point back into their source file.

Two kinds of terminal text occur in the corpora:

* a raw session byte stream (Terminal-Bench 1 `sessions/agent.log`): ANSI escape sequences,
  carriage-return progress bars, spinners redrawn in place, cursor-up-and-erase; complete,
  lines are not wrapped by the terminal;
* a screen capture (Terminal-Bench 1 `panes/post-agent.txt`): plain text, but every line longer
  than the pane is hard-wrapped at the pane width (160 columns in the Terminal-Bench harness).

`clean_stream` replays the byte stream on a minimal line-based terminal: printable text
overwrites at the cursor, `\\r` returns to column 0, backspace moves left, `ESC[K` erases
(part of) the line, `ESC[nA`/`ESC[nB` move between lines already written (so a spinner that is
erased and redrawn leaves only its last state), and every other escape sequence (colours, modes,
titles, screen clears) is dropped. Screen clears keep the history: a transcript wants the scroll
back, not the last screen. `unwrap_pane` joins the lines that the pane wrapped.

Every output line carries the 1-based range of raw lines that wrote it and the byte span of
those raw lines, so events built from it keep an exact pointer into the original file.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

PANE_WIDTH = 160
"""tmux pane width of the Terminal-Bench 1 harness (every wrapped pane line is this wide)."""


@dataclass(frozen=True, slots=True)
class LogLine:
    """One clean line: its text and where it came from (raw lines `line..end_line`, bytes `[byte_start, byte_end)`)."""

    text: str
    line: int
    end_line: int
    byte_start: int
    byte_end: int


@dataclass(frozen=True)
class CleanText:
    lines: list[LogLine]
    invalid_utf8: int
    """Number of undecodable byte sequences, as Python's UTF-8 decoder delimits them (each shown as U+FFFD)."""


def _raw_lines(data: bytes) -> tuple[list[bytes], list[int]]:
    """Split on b"\\n"; also the byte offset where each line starts. An empty file has no lines."""
    if not data:
        return [], []
    parts = data.split(b"\n")
    if parts and parts[-1] == b"" and len(parts) > 1:
        parts.pop()  # a final newline does not start another line
    offsets: list[int] = []
    pos = 0
    for p in parts:
        offsets.append(pos)
        pos += len(p) + 1
    return parts, offsets


def _decode(raw: bytes) -> tuple[str, int]:
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        # count maximal runs of undecodable bytes (what `errors="replace"` turns into U+FFFD)
        return text, max(1, text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd"))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TOKEN = re.compile(
    r"(?P<csi>\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~]))"
    r"|(?P<osc>\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?)"
    r"|(?P<str>\x1b[P^_X][^\x1b]*(?:\x1b\\)?)"
    r"|(?P<esc>\x1b[ -/]*[0-~]?)"
    r"|(?P<cr>\r)"
    r"|(?P<bs>\x08)"
    r"|(?P<ctl>[\x00-\x07\x0b-\x1f\x7f])"
    r"|(?P<text>[^\x00-\x08\x0b-\x1f\x7f]+)"
)


def _count(params: str) -> int:
    first = params.split(";", 1)[0]
    return int(first) if first.isdigit() and int(first) > 0 else 1


class _Screen:
    """An unbounded list of rows with a cursor; rows remember which raw lines wrote them."""

    def __init__(self) -> None:
        self.rows: list[str] = [""]
        self.first: list[int] = [0]
        self.last: list[int] = [0]
        self.row = 0
        self.col = 0

    def touch(self, raw_index: int) -> None:
        self.last[self.row] = max(self.last[self.row], raw_index)

    def goto_row(self, row: int, raw_index: int) -> None:
        row = max(row, 0)
        while len(self.rows) <= row:
            self.rows.append("")
            self.first.append(raw_index)
            self.last.append(raw_index)
        self.row = row

    def write(self, text: str, raw_index: int) -> None:
        cur = self.rows[self.row]
        if self.col > len(cur):
            cur += " " * (self.col - len(cur))
        self.rows[self.row] = cur[: self.col] + text + cur[self.col + len(text):]
        self.col += len(text)
        self.touch(raw_index)

    def erase(self, mode: int, raw_index: int) -> None:
        cur = self.rows[self.row]
        if mode == 0:
            self.rows[self.row] = cur[: self.col]
        elif mode == 1:
            self.rows[self.row] = " " * min(self.col + 1, len(cur)) + cur[self.col + 1:]
        else:
            self.rows[self.row] = ""
        self.touch(raw_index)

    def feed(self, line: str, raw_index: int) -> None:
        if not _CONTROL.search(line) and "\x1b" not in line:
            self.write(line, raw_index)
            return
        for m in _TOKEN.finditer(line):
            kind = m.lastgroup
            if kind == "text":
                self.write(m.group(), raw_index)
            elif kind == "cr":
                self.col = 0
            elif kind == "bs":
                self.col = max(self.col - 1, 0)
            elif kind == "csi":
                final, params = m.group("final"), m.group("params")
                if final == "K":
                    self.erase(int(params) if params.isdigit() else 0, raw_index)
                elif final == "A":
                    self.goto_row(self.row - _count(params), raw_index)
                elif final == "B":
                    self.goto_row(self.row + _count(params), raw_index)
                elif final == "C":
                    self.col += _count(params)
                elif final == "D":
                    self.col = max(self.col - _count(params), 0)
                elif final == "G":
                    self.col = _count(params) - 1
                # colours (m), modes (h/l), screen clears (J), absolute positions (H): no effect on the text
            # other escape sequences and control characters print nothing

    def newline(self, raw_index: int) -> None:
        self.goto_row(self.row + 1, raw_index + 1)
        self.col = 0


def clean_stream(data: bytes) -> CleanText:
    """Replay a raw terminal byte stream; one LogLine per resulting line (trailing spaces removed)."""
    raw, offsets = _raw_lines(data)
    screen = _Screen()
    invalid = 0
    for i, part in enumerate(raw):
        text, bad = _decode(part)
        invalid += bad
        if i:
            screen.newline(i - 1)
        screen.feed(text, i)
    out: list[LogLine] = []
    n = len(raw)
    for text, first, last in zip(screen.rows, screen.first, screen.last):
        if first >= n:  # a row opened after the last raw line (cursor moved down past the end)
            first = last = n - 1 if n else 0
        last = min(max(last, first), n - 1) if n else 0
        start = offsets[first] if n else 0
        end = offsets[last] + len(raw[last]) if n else 0
        out.append(LogLine(text.rstrip(" "), first + 1, last + 1, start, end))
    if n == 0:
        out = []
    return CleanText(out, invalid)


def display_width(text: str) -> int:
    """Terminal columns: East Asian wide/fullwidth characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


_RULE = re.compile(r"[\u2500-\u257f]+")


def unwrap_pane(data: bytes, width: int = PANE_WIDTH) -> CleanText:
    """Lines of a pane capture with the pane's hard wraps joined.

    A line exactly `width` columns wide continues on the next line. So does a line one column
    short: either the next line starts with a wide character that did not fit, or the row ended
    in a space that the capture trimmed (then the space is put back). A horizontal rule drawn
    with box characters fills the pane on purpose and is never joined. A genuine line of
    exactly `width` or `width - 1` columns is joined too: the capture cannot tell them apart.
    """
    raw, offsets = _raw_lines(data)
    invalid = 0
    texts: list[str] = []
    lengths = [len(p) for p in raw]
    for n in range(len(raw)):
        text, bad = _decode(raw[n].rstrip(b"\r"))
        raw[n] = b""  # each raw line is dropped once decoded: the bytes are not held twice
        invalid += bad
        texts.append(text)
    del raw
    out: list[LogLine] = []
    i = 0
    while i < len(texts):
        start = i
        text = texts[i]
        while i + 1 < len(texts):
            w = display_width(texts[i])
            nxt = texts[i + 1]
            if _RULE.fullmatch(texts[i]) or w < width - 1 or w > width:
                break
            if w == width or display_width(nxt[:1]) == 2:
                text += nxt  # a full row, or a wide character that did not fit in the last column
            else:
                text += " " + nxt  # the row ended in a space that the capture trimmed
            i += 1
        out.append(LogLine(text.rstrip(" "), start + 1, i + 1, offsets[start], offsets[i] + lengths[i]))
        i += 1
    return CleanText(out, invalid)
