"""Terminal cleaning (raw session streams, pane captures) and JSON element positions."""

from __future__ import annotations

import json

from gcpc.corpus.jsonpos import load_with_spans, top_level_array_spans
from gcpc.corpus.terminal import clean_stream, display_width, unwrap_pane

ESC = "\x1b"


def _texts(clean):
    return [ln.text for ln in clean.lines]


def test_ansi_colours_and_modes_are_dropped():
    raw = f"{ESC}[?2004hroot@x:/app# ls\r\n{ESC}[?2004l\r{ESC}[0;32mgreen{ESC}[0m {ESC}]0;title\x07text\r\n"
    assert _texts(clean_stream(raw.encode())) == ["root@x:/app# ls", "green text"]


def test_carriage_return_progress_bar_keeps_the_final_state():
    raw = ("0% [Working]\r            \rGet:1 http://deb/ InRelease\r\n\r12% [1 InRelease 42 kB]\r" + " " * 23
           + "\rDone\r\n")
    assert _texts(clean_stream(raw.encode())) == ["Get:1 http://deb/ InRelease", "Done"]


def test_overwrite_keeps_the_tail_of_a_longer_earlier_text():
    # a terminal overwrites in place: a shorter text leaves the rest of the line visible
    assert _texts(clean_stream(b"abcdef\rXY\r\n")) == ["XYcdef"]


def test_spinner_erased_and_cursor_up_rewrites_the_previous_row():
    raw = (f"{ESC}[32m\u280b{ESC}[0m Waiting...\r{ESC}[2K{ESC}[32m\u2819{ESC}[0m Waiting...\r{ESC}[2KTHOUGHT: hi\r\n"
           f"\u2839 Waiting...\r\n{ESC}[?25h\r{ESC}[1A{ESC}[2Klater line\r\nlast\r\n")
    clean = clean_stream(raw.encode())
    assert _texts(clean) == ["THOUGHT: hi", "later line", "last"]
    # the rewritten row points at both raw lines that wrote it
    assert (clean.lines[1].line, clean.lines[1].end_line) == (2, 3)


def test_backspace_and_erase_to_end_of_line():
    assert _texts(clean_stream(f"abc\x08\x08X{ESC}[K\r\n".encode())) == ["aX"]


def test_line_numbers_and_byte_spans_point_into_the_raw_file():
    raw = "first\r\n\u00e9t\u00e9\r\nthird".encode()
    clean = clean_stream(raw)
    assert [(ln.line, ln.end_line) for ln in clean.lines] == [(1, 1), (2, 2), (3, 3)]
    for ln in clean.lines:
        assert raw[ln.byte_start:ln.byte_end].decode().rstrip("\r") == ln.text


def test_invalid_utf8_is_counted_not_fatal():
    clean = clean_stream(b"caf\xe9 ok\r\n\xff\xfe\r\n")
    assert clean.invalid_utf8 == 3  # \xe9, \xff and \xfe: each is an invalid start byte
    assert clean.lines[0].text == "caf\ufffd ok"


def test_empty_stream_has_no_lines():
    assert clean_stream(b"").lines == []
    assert unwrap_pane(b"").lines == []


def test_pane_unwrap_joins_full_rows_and_restores_a_trimmed_space():
    long = "x" * 160
    wrapped_at_space = "word " * 31 + "ends"  # 159 columns, then the capture trimmed the space at column 160
    pane = "\n".join([long, "tail", wrapped_at_space[:159].rstrip(), "next", "short line", "\u2500" * 160, "after"])
    lines = unwrap_pane(pane.encode()).lines
    assert [ln.text for ln in lines] == [long + "tail", wrapped_at_space[:159].rstrip() + " next", "short line",
                                         "\u2500" * 160, "after"]
    assert (lines[0].line, lines[0].end_line) == (1, 2)
    assert lines[0].byte_start == 0 and lines[0].byte_end == 160 + 1 + 4


def test_display_width_counts_wide_characters_twice():
    assert display_width("ab") == 2
    assert display_width("\U0001F44B hi") == 5
    assert display_width("e\u0301") == 1  # combining accent


def test_top_level_array_spans_are_exact():
    doc = {"a": [1, {"x": "[not, an, array]"}], "steps": [{"k": 1}, {"k": "é"}], "z": None}
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    spans = top_level_array_spans(text, "steps")
    assert [json.loads(text[a:b]) for a, b in spans] == doc["steps"]
    assert top_level_array_spans(text, "missing") is None
    parsed, elem, pos = load_with_spans(text.encode(), "f.json", "steps")
    assert parsed == doc
    data = text.encode()
    assert [json.loads(data[s.byte_start:s.byte_end]) for s in elem] == doc["steps"]
    assert elem[0].line == text[: text.index('{\n      "k": 1')].count("\n") + 1
