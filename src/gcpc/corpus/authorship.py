"""Echo resistance: which displayed lines the agent wrote itself, and which only restate the task.

A tool output is evidence because the environment displayed it. But an agent can make the
environment display anything it types: `echo "all tests passed"`, `cat <<EOF ... EOF`, a file
it wrote and reads back, `cat instruction.md`. Such lines look like state and are not. Two rules:

* **agent-authored** lines of a tool output or file content, of two kinds:
  - *echoed*: the whole output of a command that only displays text (`echo`, `printf`, `cat` of a
    heredoc); a line equal to a line the agent displayed that way earlier; a line of three or more
    words that occurs in the inline program that printed it (`python -c "print('... passed')"`). Echoed
    text shows nothing about the environment: it is never evidence.
  - *read back*: a line equal to a line the agent wrote into a file (a heredoc redirected into a
    file, a Write/Edit call) and displays again. It does show the file's state, so it stays
    evidence, but the judge view can mark it.
* **restated** lines: a line that contains a checklist item's (or the instruction's) whole text,
  or a sentence-long piece of it (`RESTATE_MIN_WORDS` words): `cat instruction.md`. A shorter
  fragment, such as a config line the task quotes, is not a restatement.

With `judging.mark_agent_authored` the judge view marks both kinds (`AUTHORED_MARK`); the heuristic
judge never uses echoed or restated lines as evidence, and the evidence gate rejects quotes that
only occur in echoed lines or that restate the task without independent output showing them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

AUTHORED_MARK = "[agent-authored] "
EVIDENCE_KINDS = ("tool_output", "file_content")
RESTATE_MIN_CHARS = 16
RESTATE_MIN_WORDS = 6
MIN_AUTHORED_CHARS = 6

_CALL_PREFIX = re.compile(r"^(?:Bash(?: \([^\n]*?\))?: |\$ )")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w]*)\1[^\n]*\n(.*?)\n[ \t]*\2[ \t]*(?:\n|$)", re.S)


_MARKUP = re.compile(r"[`*_]")
_LIST_MARK = re.compile(r"^(?:\d+[.)]|[-+>])\s+")


def norm(text: str) -> str:
    """Compared form of a line: Markdown emphasis, code marks and list markers dropped, whitespace collapsed.

    (The regexes run only where they can match: this is called for every displayed line of every arm.
    `norm_reference` is the plain form; tests compare the two.)"""
    if "`" in text or "*" in text or "_" in text:
        text = text.replace("`", "").replace("*", "").replace("_", "")
    text = " ".join(text.split())
    if text and (text[0] in "-+>" or text[0].isdigit()):
        text = _LIST_MARK.sub("", text)
    return text.rstrip(".,;:").lower()


def norm_lines(text: str) -> list[str]:
    """[norm(line) for line in text.splitlines()], with the code-mark test done once for the whole text."""
    if "`" in text or "*" in text or "_" in text:
        return [norm(line) for line in text.splitlines()]
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and (line[0] in "-+>" or line[0].isdigit()):
            line = _LIST_MARK.sub("", line)
        out.append(line.rstrip(".,;:").lower())
    return out


def norm_reference(text: str) -> str:
    text = " ".join(_MARKUP.sub("", text).split())
    return _LIST_MARK.sub("", text).rstrip(".,;:").lower()


def _kind(ev: Any) -> str:
    k = ev["kind"] if isinstance(ev, dict) else ev.kind
    return k if isinstance(k, str) else k.value


def _text(ev: Any) -> str:
    return ev["text"] if isinstance(ev, dict) else ev.text


def _command(call_text: str) -> str:
    return _CALL_PREFIX.sub("", call_text, count=1)


_INLINE = re.compile(r"\b(?:python[\d.]*|node|perl|ruby|php|bash|sh)\s+-[ce]\s")
"""An inline program (`python -c "print('...')"`): the text it prints literally is the agent's."""
_OPERATORS = {";", "&&", "||", "|", "&", ";;", "|&"}


_PLAIN_TOKEN = re.compile(r"[();<>|&]+|[^ \t\r\n();<>|&]+")
"""shlex's tokens (posix, punctuation_chars, whitespace_split) of a command without quotes, escapes or comments."""
_SHLEX_SPECIAL = re.compile(r"['\"\\#]")


def shell_tokens(cmd: str) -> list[str]:
    """shlex.shlex(cmd, posix=True, punctuation_chars=True) with whitespace_split, as a list (ValueError when
    a quote is not closed); commands without quotes, escapes or comments skip the pure-Python lexer."""
    if not _SHLEX_SPECIAL.search(cmd):
        return _PLAIN_TOKEN.findall(cmd)
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


@lru_cache(maxsize=1024)
def _segments(cmd: str) -> tuple[tuple[tuple[str, ...], bool], ...] | None:
    """Shell words of each simple command, and whether its output is piped on; None when it does not tokenize.
    (Cached: each call is read twice, for what it writes and for whether it only displays.)"""
    try:
        tokens = shell_tokens(_HEREDOC.sub("\n", cmd))
    except ValueError:
        return None
    out: list[tuple[list[str], bool]] = [([], False)]
    for tok in tokens:
        if tok in _OPERATORS:
            out[-1] = (out[-1][0], tok in ("|", "|&"))
            out.append(([], False))
        else:
            out[-1][0].append(tok)
    return tuple((tuple(words), piped) for words, piped in out if words)


def _shown(words: Sequence[str]) -> str | None:
    """What an echo/printf command prints (its arguments before any redirection), else None."""
    if not words or words[0] not in ("echo", "printf"):
        return None
    args = []
    for w in words[1:]:
        if w.startswith((">", "<")) or w in ("1>", "2>"):
            break
        args.append(w)
    while args and words[0] == "echo" and args[0].startswith("-") and len(args[0]) <= 3:
        args = args[1:]
    return "\n".join(a.replace("\\n", "\n") for a in args)


def written_text(call_text: str) -> tuple[list[str], list[str]]:
    """(text the call only displays, text it writes to files): echo/printf arguments and heredocs
    read to the terminal; heredocs redirected into a file and Write/Edit contents."""
    shown: list[str] = []
    written: list[str] = []
    first, _, rest = call_text.partition("\n")
    if first.startswith(("Write: ", "Edit: ", "MultiEdit: ")):
        written.append(rest)
    cmd = _command(call_text)
    for m in _HEREDOC.finditer(cmd):
        head = cmd[: m.start()].rsplit("\n", 1)[-1]
        (written if ">" in head or "tee " in head else shown).append(m.group(3))
    for words, _ in _segments(cmd) or []:
        text = _shown(words)
        if text:
            shown.append(text)
    return shown, written


_LITERAL = re.compile(r"(\"\"\"|'''|\"|')((?:(?!\1)[^\n\\]|\\.){6,400}?)\1")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0-9.]*[sdifrx]|\\[ntr]")
MIN_LITERAL_CHARS = 8


def program_literals(call_text: str) -> list[str]:
    """String literals of the programs a call writes or runs (heredoc bodies, Write/Edit contents, inline
    `python -c` programs), split at format placeholders (`{x}`, `%s`, `\\n`), each piece of two or more words
    and MIN_LITERAL_CHARS or more characters, normalised (`norm`). What such a program prints from them is the
    agent's own text (`print("SUCCESS: dtypes preserved")`), not state the environment displayed."""
    first, _, rest = call_text.partition("\n")
    programs = [rest] if first.startswith(("Write: ", "Edit: ", "MultiEdit: ")) else []
    cmd = _command(call_text)
    programs += [m.group(3) for m in _HEREDOC.finditer(cmd)]
    if _INLINE.search(cmd):
        programs.append(_HEREDOC.sub("\n", cmd))
    out: list[str] = []
    for prog in programs:
        found = [m.group(2) for m in _LITERAL.finditer(prog)]
        found += [m.group(2) for lit in found for m in _LITERAL.finditer(lit)]  # `python -c "print('...')"`
        for lit in found:
            for piece in _PLACEHOLDER.split(lit):
                n = norm(piece)
                if len(n) >= MIN_LITERAL_CHARS and len(n.split()) >= 2 and n not in out:
                    out.append(n)
    return out


def _only_display(call_text: str) -> bool:
    """A command that only displays the agent's text: echo/printf (not piped on), or `cat` of a heredoc."""
    if call_text.startswith(("Write: ", "Edit: ", "MultiEdit: ", "Read: ")):
        return False
    cmd = _command(call_text)
    segments = _segments(cmd)
    if not segments:
        return False
    heredoc_cat = bool(_HEREDOC.search(cmd)) and all(w[0] == "cat" and not any(x.startswith(">") for x in w[1:])
                                                     for w, _ in segments)
    return heredoc_cat or all(_shown(words) is not None and not piped for words, piped in segments)


def line_authorship(events: Iterable[Any]) -> dict[int, dict[int, str]]:
    """Per evidence event (by index): line number (0-based, of `text.splitlines()`) -> 'echoed' (the
    agent only displayed it) or 'read back' (a file the agent wrote, displayed again)."""
    shown: set[str] = set()
    written: set[str] = set()
    last_call: str | None = None
    call: tuple[bool, bool, str] | None = None  # (whole, inline, normalised call) of last_call, once it is needed
    out: dict[int, dict[int, str]] = {}
    for ev in events:
        kind, text = _kind(ev), _text(ev)
        if kind == "tool_call":
            last_call, call = text, None
            s, w = written_text(text)
            for blocks, into in ((s, shown), (w, written)):
                for block in blocks:
                    into.update(n for n in norm_lines(block) if len(n) >= MIN_AUTHORED_CHARS)
            continue
        if kind not in EVIDENCE_KINDS:
            continue
        if call is None:
            call = (False, False, "") if last_call is None else (
                _only_display(last_call), _INLINE.search(last_call) is not None and not _HEREDOC.search(last_call),
                norm(last_call))
        whole, inline, call_norm = call
        if not (whole or inline or shown or written):
            continue  # no line of this output can be the agent's
        marks: dict[int, str] = {}
        for i, n in enumerate(norm_lines(text)):  # line numbers of text.splitlines(), as every consumer uses
            if not n:
                continue
            if whole or n in shown or (inline and len(n.split()) >= 3 and n in call_norm):
                marks[i] = "echoed"
            elif n in written:
                marks[i] = "read back"
        if marks:
            out[ev["index"] if isinstance(ev, dict) else ev.index] = marks
    return out


def authored_lines(events: Iterable[Any]) -> dict[int, set[int]]:
    """Per evidence event: the lines the agent only displayed (echoed); never evidence of state."""
    return {i: {n for n, how in marks.items() if how == "echoed"}
            for i, marks in line_authorship(events).items() if "echoed" in marks.values()}


class Restatement:
    """Recognises lines that restate the instruction or checklist (see the module docstring)."""

    def __init__(self, texts: Sequence[str]):
        self.items = [n for n in (norm(t) for t in texts) if len(n) >= RESTATE_MIN_CHARS]
        self.joined = "\n".join(norm(t) for t in texts if t)

    def __call__(self, line: str) -> bool:
        """The line contains a whole item or task sentence, or is a sentence-long (RESTATE_MIN_WORDS words)
        piece of the task text. A short fragment (a config line the task quotes) is not a restatement."""
        n = norm(line)
        if not n:
            return False
        if any(item in n for item in self.items):
            return True
        return len(n) >= RESTATE_MIN_CHARS and len(n.split()) >= RESTATE_MIN_WORDS and n in self.joined

    def occurs(self, quote: str) -> bool:
        n = norm(quote)
        return bool(n) and n in self.joined


def mark_authored(text: str, lines: set[int] | None) -> str:
    """The text with its agent-authored lines prefixed by AUTHORED_MARK (for the judge view)."""
    if not lines:
        return text
    parts = text.splitlines(keepends=True)
    return "".join(AUTHORED_MARK + p if i in lines and p.strip() else p for i, p in enumerate(parts))
