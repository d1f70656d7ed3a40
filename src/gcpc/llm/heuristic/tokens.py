"""Concrete tokens: the checkable anchors of a requirement (paths, literals, numbers, identifiers).

Both heuristic synthesis (linking items to verifier tests) and heuristic judging (finding state
in the log) use this one definition, so what an item can be checked against is stated once.
"""

from __future__ import annotations

import re

_BACKTICK = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w.])(?:~|\.{1,2})?(?:/[\w.\-]+)+/?")
_FILENAME = re.compile(r"\b[\w\-]+\.(?:[A-Za-z][A-Za-z0-9]{0,5})\b")
_QUOTED = re.compile(r"\"([^\"\n]{2,60})\"|'([^'\n]{2,60})'")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*[A-Za-z_/])")
_BOLD = re.compile(r"\*\*([^*\n]{2,60})\*\*")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")

_NOT_FILENAMES = {"e.g", "i.e", "etc"}


def strip_list_marker(line: str) -> str:
    return _LIST_MARKER.sub("", line)


def concrete_tokens(text: str, *, numbers: bool = True) -> list[str]:
    """Ordered, de-duplicated anchors found in a requirement text.

    Numbers are kept only when they carry information (two or more digits, or a decimal);
    single digits are usually list positions or counts in prose.
    """
    text = strip_list_marker(text)
    found: list[str] = []

    def add(tok: str) -> None:
        tok = tok.strip().strip(".,;:()[]{}").strip()
        if len(tok) < 2 or tok.lower() in _NOT_FILENAMES:
            return
        if tok.lower() not in (t.lower() for t in found):
            found.append(tok)

    for m in _BACKTICK.finditer(text):
        add(m.group(1))
    for m in _BOLD.finditer(text):
        add(m.group(1))
    for m in _QUOTED.finditer(text):
        add(m.group(1) or m.group(2))
    plain = _BACKTICK.sub(" ", text)
    for m in _PATH.finditer(text):
        if m.group(0).count("/") >= 1 and len(m.group(0)) > 2:
            add(m.group(0))
    for m in _FILENAME.finditer(plain):
        if not re.fullmatch(r"[\d.]+", m.group(0)):
            add(m.group(0))
    for m in _SNAKE.finditer(plain):
        add(m.group(0))
    if numbers:
        for m in _NUMBER.finditer(plain):
            digits = m.group(0).lstrip("-")
            if "." in digits or len(digits) >= 2:
                add(m.group(0))
    return found


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())
