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

import io
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add
from typing import BinaryIO, NamedTuple

PANE_WIDTH = 160
"""tmux pane width of the Terminal-Bench 1 harness (every wrapped pane line is this wide)."""


class LogLine(NamedTuple):
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


def iter_raw_lines(source: bytes | BinaryIO) -> Iterator[tuple[bytes, int]]:
    """(line, byte offset) per b"\\n"-separated line, read as it streams; a final newline starts no line."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    pos = 0
    for line in source:
        yield (line[:-1] if line.endswith(b"\n") else line), pos
        pos += len(line)


class Counter:
    """The invalid-UTF-8 count of a stream, known once the stream is read to its end."""

    def __init__(self) -> None:
        self.invalid_utf8 = 0


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


SCREEN_ROWS = 10_000
"""Rows a cursor-up can still reach: older rows are final and leave the screen (a real terminal keeps far fewer)."""


class _Screen:
    """Rows with a cursor; rows remember which raw lines wrote them (`first`, `last`) and their byte span.

    Only the last `SCREEN_ROWS` rows stay editable, so a log of any length replays in bounded memory."""

    def __init__(self) -> None:
        self.rows: list[str] = [""]
        self.first: list[int] = [0]
        self.last: list[int] = [0]
        self.start: list[int] = [0]
        self.end: list[int] = [0]
        self.base = 0  # absolute row number of rows[0]
        self.row = 0  # absolute
        self.col = 0
        self.cur_start = 0  # byte span of the raw line being fed
        self.cur_end = 0

    def touch(self, raw_index: int) -> None:
        r = self.row - self.base
        if raw_index >= self.last[r]:
            self.last[r] = raw_index
            self.end[r] = self.cur_end

    def goto_row(self, row: int, raw_index: int) -> None:
        row = max(row, self.base)
        while self.base + len(self.rows) <= row:
            self.rows.append("")
            self.first.append(raw_index)
            self.last.append(raw_index)
            self.start.append(self.cur_start)
            self.end.append(self.cur_end)
        self.row = row

    def write(self, text: str, raw_index: int) -> None:
        r = self.row - self.base
        cur = self.rows[r]
        if self.col > len(cur):
            cur += " " * (self.col - len(cur))
        self.rows[r] = cur[: self.col] + text + cur[self.col + len(text):]
        self.col += len(text)
        self.touch(raw_index)

    def erase(self, mode: int, raw_index: int) -> None:
        r = self.row - self.base
        cur = self.rows[r]
        if mode == 0:
            self.rows[r] = cur[: self.col]
        elif mode == 1:
            self.rows[r] = " " * min(self.col + 1, len(cur)) + cur[self.col + 1:]
        else:
            self.rows[r] = ""
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
                self.csi(m.group("final"), m.group("params"), raw_index)
            # other escape sequences and control characters print nothing

    def csi(self, final: str, params: str, raw_index: int) -> None:
        """A control sequence: erase in line and cursor moves act; colours (m), modes (h/l), screen clears (J)
        and absolute positions (H) have no effect on the text."""
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

    def newline(self, raw_index: int) -> None:
        self.goto_row(self.row + 1, raw_index + 1)
        self.col = 0

    def pop(self, keep: int) -> Iterator[LogLine]:
        """Finished rows: all but the last `keep` rows below the cursor's reach."""
        n = len(self.rows) - keep
        if n <= 0:
            return
        # LogLine(text.rstrip(" "), first + 1, last + 1, start, end) per row, built in C (LogLine(...) runs a
        # Python-level __new__; tuple.__new__ makes the same tuple)
        one = (1).__add__
        yield from map(tuple.__new__, repeat(LogLine, n),
                       zip(map(str.rstrip, self.rows[:n], repeat(" ", n)), map(one, self.first[:n]),
                           map(one, self.last[:n]), self.start[:n], self.end[:n]))
        for col in (self.rows, self.first, self.last, self.start, self.end):
            del col[:n]
        self.base += n


def iter_stream_reference(source: bytes | BinaryIO, counter: Counter | None = None) -> Iterator[LogLine]:
    """The specification of `iter_stream`: every line goes through `_Screen.feed` (tests check both agree)."""
    screen = _Screen()
    counter = counter or Counter()
    i = -1
    for i, (part, offset) in enumerate(iter_raw_lines(source)):
        text, bad = _decode(part)
        counter.invalid_utf8 += bad
        screen.cur_start, screen.cur_end = offset, offset + len(part)
        if i:
            screen.newline(i - 1)
        else:
            screen.start[0], screen.end[0] = screen.cur_start, screen.cur_end
        screen.feed(text, i)
        if screen.row - screen.base > 2 * SCREEN_ROWS:
            yield from screen.pop(len(screen.rows) - (screen.row - screen.base - SCREEN_ROWS))
    if i >= 0:
        yield from screen.pop(0)


_CONTROL_BUT_CR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


_NOOP_CSI_FINALS = frozenset("@EFHIJLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~")
"""CSI finals `_Screen.feed` ignores (everything but K, A, B, C, D, G)."""
_STRING_INTRO = re.compile(r"\x1b[\]P^_X]")
_ROW_MOVE = re.compile(r"\x1b\[[0-?]*[ -/]*[AB]")
_CLEARED = "\r\x1b[2K"


class _FastScreen(_Screen):
    """`_Screen` with a faster `feed` for lines that hold escape sequences; the same rows, cursor and spans."""

    def feed(self, line: str, raw_index: int) -> None:
        if _CLEARED in line and _STRING_INTRO.search(line) is None:
            # A spinner redrawn in place: everything before the last "return, erase line" only rewrote this
            # row (no cursor-up/down before it; without string sequences every ESC and CR starts a token),
            # so the row is empty there, the cursor at column 0, and the row written by this raw line.
            k = line.rfind(_CLEARED)
            if _ROW_MOVE.search(line, 0, k) is None:
                r = self.row - self.base
                self.rows[r] = ""
                self.col = 0
                self.touch(raw_index)
                line = line[k + len(_CLEARED):]
        pending: list[str] = []  # consecutive texts (only no-op sequences between them) are written at once
        for m in _TOKEN.finditer(line):
            kind = m.lastgroup
            if kind == "text":
                pending.append(m.group())
                continue
            if kind == "csi":
                final = m.group("final")
                if final in _NOOP_CSI_FINALS:
                    continue
            elif kind != "cr" and kind != "bs":
                continue  # other escape sequences and control characters print nothing
            if pending:
                self.write("".join(pending), raw_index)
                pending.clear()
            if kind == "cr":
                self.col = 0
            elif kind == "bs":
                self.col = max(self.col - 1, 0)
            else:
                self.csi(final, m.group("params"), raw_index)
        if pending:
            self.write("".join(pending), raw_index)


STREAM_BLOCK = 1 << 16
"""Bytes `iter_stream` decodes and splits at once (a block ends at a newline; a longer line is one block)."""
_NOT_SIMPLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n|\Z)")
"""In a line: a control character other than carriage return, or a carriage return before the line's end."""


def _block_lines(block: bytes, counter: Counter, *, strip_cr: bool = False) -> tuple[list[bytes], list[str], str | None]:
    """A block's raw lines and their texts (final carriage returns dropped with `strip_cr`), decoded as line by
    line: no UTF-8 sequence holds a newline byte, nor ends in a carriage return. The third value is the whole
    decoded block, or None when it held invalid UTF-8 (then each bad line is decoded on its own and counted)."""
    raws = block.split(b"\n")
    try:
        joined = block.decode("utf-8")
    except UnicodeDecodeError:
        texts = []
        for raw in raws:
            if strip_cr:
                raw = raw.rstrip(b"\r")
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                text, bad = _decode(raw)
                counter.invalid_utf8 += bad
                texts.append(text)
        return raws, texts, None
    texts = joined.split("\n")
    if strip_cr and "\r" in joined:
        texts = [t.rstrip("\r") for t in texts]
    return raws, texts, joined


def _blocks(source: bytes | BinaryIO) -> Iterator[bytes]:
    """The raw lines of a stream, about `STREAM_BLOCK` bytes of whole lines at a time, each block without its last
    newline (`block.split(b"\\n")` gives the lines as `iter_raw_lines` does)."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    pending: list[bytes] = []  # chunks of a line longer than a block (joined once, not once per chunk)
    while True:
        chunk = source.read(STREAM_BLOCK)
        if not chunk:
            if pending:
                yield b"".join(pending)  # a last line without a newline; a final newline starts no line
            return
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending.append(chunk)
            continue
        head = chunk[:cut]
        if pending:
            pending.append(head)
            head = b"".join(pending)
        pending = [chunk[cut + 1:]] if cut + 1 < len(chunk) else []
        yield head


def iter_stream(source: bytes | BinaryIO, counter: Counter | None = None) -> Iterator[LogLine]:
    """Replay a raw terminal byte stream as it is read; one LogLine per resulting line (trailing spaces removed).

    The same replay as `iter_stream_reference` (tests compare both), faster: the stream is decoded and split
    a block of lines at a time, and a run of simple lines (no control character but a final carriage
    return: 90 % of the shared agent logs) written below every row so far becomes rows at once, each the
    line without its carriage return. Every other line takes the step below: the two common cases
    inlined (text then carriage return, carriage-return progress bars), the rest through `_Screen.feed`."""
    counter = counter or Counter()
    screen = _FastScreen()
    rows, first, last, start, end = screen.rows, screen.first, screen.last, screen.start, screen.end
    # (pop() and goto_row() change these lists in place, so the names stay valid)
    control, control_but_cr, not_simple = _CONTROL.search, _CONTROL_BUT_CR.search, _NOT_SIMPLE.search
    keep_rows = SCREEN_ROWS
    r = 0  # cursor row relative to screen.base
    col = 0
    pos = 0  # byte offset of the next raw line
    i = -1  # index of the last raw line read
    for block in _blocks(source):
        parts, texts, joined = _block_lines(block, counter)
        if joined is None:
            joined = "\n".join(texts)
        lens = list(map(len, parts))
        # the lines that are not simple: one search over the block per such line (a search per line was
        # half the replay's time); line k ends at ends[k] in `joined` (its characters and k newlines before)
        ends = list(map(add, accumulate(map(len, texts)), range(len(texts))))
        special = []
        at = 0
        while (m := not_simple(joined, at)) is not None:
            k = bisect_right(ends, m.start())  # the line holding the match
            special.append(k)
            at = ends[k] + 1
        special.append(len(texts))  # sentinel
        s = 0  # index into special
        k = 0
        n_block = len(texts)
        while k < n_block:
            if k == special[s]:
                s += 1
            elif i >= 0 and r == len(rows) - 1:
                # simple lines k..stop-1, each on a new row below every row so far: the row is the line
                # (less a final carriage return); rows leave the screen at the same lines as one by one
                stop = special[s]
                while k < stop:
                    m = min(stop - k, 2 * keep_rows + 1 - r) if r <= 2 * keep_rows else 1
                    i0 = i + 1
                    seg = texts[k:k + m]
                    rows.extend([t[:-1] if t[-1:] == "\r" else t for t in seg])
                    first.extend(range(i0, i0 + m))
                    last.extend(range(i0, i0 + m))
                    for n in lens[k:k + m]:
                        start.append(pos)
                        end.append(pos + n)
                        pos += n + 1
                    t = seg[-1]
                    col = 0 if t[-1:] == "\r" else len(t)
                    i += m
                    r += m
                    k += m
                    if r > 2 * keep_rows:
                        screen.row, screen.col = screen.base + r, col
                        yield from screen.pop(len(rows) - (r - keep_rows))
                        r = screen.row - screen.base
                continue
            # one line, as the reference replays it
            text = texts[k]
            n = lens[k]
            offset, cur_end = pos, pos + n
            pos += n + 1
            i += 1
            k += 1
            if i:  # newline: the cursor moves to the next row (a new one unless a cursor-up left rows below)
                r += 1
                col = 0
                if r == len(rows):
                    rows.append("")
                    first.append(i)
                    last.append(i)
                    start.append(offset)
                    end.append(cur_end)
            else:
                start[0], end[0] = offset, cur_end
            # every raw index seen so far is <= i, so "touch" (the row was last written by line i) is unconditional
            if text[-1:] == "\r" and control(text, 0, len(text) - 1) is None:  # text, then carriage return
                if len(text) > 1:
                    cur = rows[r]
                    if not cur:
                        rows[r] = text[:-1]
                    else:
                        rows[r] = text[:-1] + cur[len(text) - 1:]
                    last[r] = i
                    end[r] = cur_end
                col = 0
            elif control(text) is None:  # plain text
                cur = rows[r]
                if col == 0 and not cur:
                    rows[r] = text
                else:
                    if col > len(cur):
                        cur += " " * (col - len(cur))
                    rows[r] = cur[:col] + text + cur[col + len(text):]
                col += len(text)
                last[r] = i
                end[r] = cur_end
            elif control_but_cr(text) is None:  # progress bar: texts separated by carriage returns
                for j, piece in enumerate(text.split("\r")):
                    if j:
                        col = 0
                    if piece:
                        cur = rows[r]
                        if col > len(cur):
                            cur += " " * (col - len(cur))
                        rows[r] = cur[:col] + piece + cur[col + len(piece):]
                        col += len(piece)
                        last[r] = i
                        end[r] = cur_end
            else:
                screen.row, screen.col, screen.cur_start, screen.cur_end = screen.base + r, col, offset, cur_end
                screen.feed(text, i)
                r, col = screen.row - screen.base, screen.col
            if r > 2 * keep_rows:
                screen.row, screen.col = screen.base + r, col
                yield from screen.pop(len(rows) - (r - keep_rows))
                r = screen.row - screen.base
    if i >= 0:
        yield from screen.pop(0)


def clean_stream(data: bytes) -> CleanText:
    """`iter_stream` over bytes in memory, collected."""
    counter = Counter()
    lines = list(iter_stream(data, counter))
    return CleanText(lines, counter.invalid_utf8)


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


def iter_pane(source: bytes | BinaryIO, counter: Counter | None = None, width: int = PANE_WIDTH) -> Iterator[LogLine]:
    """Lines of a pane capture with the pane's hard wraps joined, as the capture is read.

    A line exactly `width` columns wide continues on the next line. So does a line one column
    short: either the next line starts with a wide character that did not fit, or the row ended
    in a space that the capture trimmed (then the space is put back). A horizontal rule drawn
    with box characters fills the pane on purpose and is never joined. A genuine line of
    exactly `width` or `width - 1` columns is joined too: the capture cannot tell them apart.

    The same lines as `iter_pane_reference` (tests compare both), faster: the capture is decoded and split
    a block of lines at a time (`_blocks`, as `iter_stream`), and a line shorter than half the pane is never
    measured (it cannot be a wrapped row: a character is at most two columns wide).
    """
    counter = counter or Counter()
    parts: list[str] = []
    start = start_byte = end = end_byte = 0
    prev = ""
    rule = _RULE.fullmatch
    new = tuple.__new__  # LogLine(...) runs a Python-level __new__; the same tuple, built in C
    lo = width - 1
    n = -1  # index of the last raw line read
    pos = 0  # byte offset of the next raw line
    for block in _blocks(source):
        raws, texts, _ = _block_lines(block, counter, strip_cr=True)
        for text, size in zip(texts, map(len, raws)):
            n += 1
            offset = pos
            pos += size + 1
            if parts:
                if 2 * len(prev) >= lo:
                    w = len(prev) if prev.isascii() else display_width(prev)
                    if lo <= w <= width and not rule(prev):
                        # a full row, or a wide character that did not fit in the last column; else a trimmed space
                        parts.append(text if w == width or display_width(text[:1]) == 2 else " " + text)
                        prev, end, end_byte = text, n, offset + size
                        continue
                yield new(LogLine, (parts[0].rstrip(" ") if len(parts) == 1 else "".join(parts).rstrip(" "),
                                    start + 1, end + 1, start_byte, end_byte))
            parts = [text]
            prev, start, start_byte, end, end_byte = text, n, offset, n, offset + size
    if parts:
        yield LogLine("".join(parts).rstrip(" "), start + 1, end + 1, start_byte, end_byte)


def iter_pane_reference(source: bytes | BinaryIO, counter: Counter | None = None,
                        width: int = PANE_WIDTH) -> Iterator[LogLine]:
    """The specification of `iter_pane` (tests check both agree): every line measured with `display_width`."""
    counter = counter or Counter()
    parts: list[str] = []
    start = start_byte = end = end_byte = 0
    prev = ""
    for n, (raw, offset) in enumerate(iter_raw_lines(source)):
        text, bad = _decode(raw.rstrip(b"\r"))
        counter.invalid_utf8 += bad
        if parts:
            w = display_width(prev)
            if width - 1 <= w <= width and not _RULE.fullmatch(prev):
                parts.append(text if w == width or display_width(text[:1]) == 2 else " " + text)
                prev, end, end_byte = text, n, offset + len(raw)
                continue
            yield LogLine("".join(parts).rstrip(" "), start + 1, end + 1, start_byte, end_byte)
        parts = [text]
        prev, start, start_byte, end, end_byte = text, n, offset, n, offset + len(raw)
    if parts:
        yield LogLine("".join(parts).rstrip(" "), start + 1, end + 1, start_byte, end_byte)


def unwrap_pane(data: bytes, width: int = PANE_WIDTH) -> CleanText:
    """`iter_pane` over bytes in memory, collected."""
    counter = Counter()
    lines = list(iter_pane(data, counter, width))
    return CleanText(lines, counter.invalid_utf8)
