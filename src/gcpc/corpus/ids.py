"""Identifiers taken from a corpus (task ids, job, run and trial names) and text shown from it.

An id becomes part of a trajectory id, a file name in reports and a key every later stage joins
on, so it is checked where it is read: a string of at most `MAX_ID` characters from `ID_CHARS`
(ASCII letters, digits and `. _ + -`), starting with a letter or digit. That excludes path
separators, `..`, hidden names, spaces, shell metacharacters and bytes that are not UTF-8. Every
name in the curated data (task, job, run and trial folders) is of this form.
"""

from __future__ import annotations

import os
import re
from typing import Any

MAX_ID = 200
ID_CHARS = "A-Za-z0-9._+-"
ID = re.compile(rf"^[A-Za-z0-9][{ID_CHARS}]{{0,{MAX_ID - 1}}}$")


def id_problem(value: Any) -> str | None:
    """None for a usable id, else why not (for an exclusion reason naming the file and field)."""
    if not isinstance(value, str) or isinstance(value, bool):
        return f"{printable(repr(value))} is a {type(value).__name__}, not a string"
    if ID.match(value):
        return None
    return (f"{printable(repr(value))} is not an id (at most {MAX_ID} characters from {ID_CHARS}, "
            f"starting with a letter or digit)")


def printable(text: str) -> str:
    """`text` writable as UTF-8: bytes of a file name that are not UTF-8 (surrogate escapes) shown as \\xNN."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace") if _only_escapes(text) else \
            text.encode("utf-8", "backslashreplace").decode("utf-8")


def _only_escapes(text: str) -> bool:
    """True when every surrogate in `text` is a byte escape (U+DC80..U+DCFF, what os.fsdecode makes)."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)
