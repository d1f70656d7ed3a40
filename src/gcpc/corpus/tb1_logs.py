"""Terminal-Bench 1 session logs (`sessions/agent.log`, `panes/post-agent.txt`) -> Events.

A Terminal-Bench 1 trial runs in one tmux session. The harness types its own commands into
it (start the recording, install the agent, launch the agent, and in some trials run the
tests); `commands.txt` lists those keystrokes. What the session shows depends on the agent:

* **mini-swe-agent** prints a real transcript: the system and task prompts, then per step
  `mini-swe-agent (step N, $cost):`, the model's response (a `THOUGHT:` paragraph and one
  fenced `bash` block), and `User:` with the command's `<returncode>` and `<output>` (or a
  timeout / format-error message). Its LiteLLM logging-error tracebacks are interleaved. The turns
  are split and classified by `gcpc.corpus.mini_swe_agent`, the parser the agent's `.traj.json`
  files are read with too.
* **OpenHands** prints only installation output and runtime logging: no agent step is visible.
* **the orchestrator agent** does not use the session at all: a shell prompt, or the
  recording start and stop.

Event kinds follow what produced the text: everything the harness typed and every output it
caused (installation, prompts, runtime logging, an agent that never started) is `system`;
a mini-swe-agent response is `agent_message`, its bash block `tool_call`, and the command's
displayed result `tool_output`. So OpenHands and orchestrator trials come out as trajectories
with system events only: real zero-evidence cases, not parse errors.

The verifier must never reach the judge: the session is cut where the harness typed the test
command (found from `commands.txt`, or from the `/tests/run-tests.sh` command line when
`commands.txt` is missing). Removed noise (the tests part, LiteLLM tracebacks, leftover
spinner lines) is counted in the trajectory's notes, never dropped silently.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc.corpus.mini_swe_agent import observation, response_parts
from gcpc.corpus.models import Event, EventKind, SourceRef
from gcpc.corpus.terminal import CleanText, Counter, LogLine, iter_pane, iter_stream

# --- commands.txt -------------------------------------------------------------------------

_KEY = re.compile(r"^(Enter|Escape|BSpace|Tab|BTab|Up|Down|Left|Right|Home|End|PPage|NPage|PageUp|PageDown|"
                  r"IC|DC|F\d{1,2}|[CMS]-.+)$")
TEST_COMMAND = re.compile(r"/tests/run-tests\.sh|/logs/(?:sessions/)?tests\.cast")
"""What marks the start of the verifier phase in a typed command."""


@dataclass(frozen=True)
class TypedCommand:
    text: str
    lineno: int


def parse_commands(text: str, label: str) -> tuple[list[TypedCommand], list[str]]:
    """The commands the harness typed (keys joined, tmux key names dropped); notes for bad lines."""
    out: list[TypedCommand] = []
    notes: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        typed, problem = _typed(line)
        if problem is not None:
            notes.append(f"{label}:{lineno}: {problem}; line ignored")
        elif typed:
            out.append(TypedCommand(typed, lineno))
    return out, notes


@functools.lru_cache(maxsize=4096)
def _typed(line: str) -> tuple[str, str | None]:
    """(the keys of one commands.txt line joined, tmux key names dropped; what is wrong with the line or None).
    Cached: the 9,603 lines of the shared TB1 set are 403 distinct ones (the harness types the same commands)."""
    try:
        keys = ast.literal_eval(line)
    except (ValueError, SyntaxError):
        return "", "not a Python list literal"
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return "", "not a list of strings"
    return "".join(k for k in keys if not _KEY.match(k)), None


def is_harness_bookkeeping(cmd: str) -> bool:
    c = cmd.strip()
    return (c.startswith(("asciinema rec", "source /installed-agent/", "tmux ")) or c in ("clear", "exit")
            or bool(TEST_COMMAND.search(c)))


# --- session structure ----------------------------------------------------------------------

_PROMPT = re.compile(r"^(?P<prompt>(?:\([^)\s]+\) )?[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:[^#$\n]*[#$])(?: (?P<cmd>.*))?$")
_TMUX_WAIT = re.compile(r";\s*tmux wait -S done\s*$")
_SPINNER = re.compile(r"^[\u2800-\u28ff] Waiting for the LM to respond\.\.\.$")
_MINI_STEP = re.compile(r"^mini-swe-agent \(step (?P<n>\d+), \$(?P<cost>[\d.]+)\):$")
_MINI_START = re.compile(r"^(?:\U0001F44B )?This is mini-swe-agent version ")
_RULE = re.compile(r"^\u2500{20,}$")
_LITELLM = re.compile(r"^\d\d:\d\d:\d\d - LiteLLM:[A-Z]+")
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_MINI_NOT_FOUND = re.compile(r"(?:^|: )mini: command not found$")


@dataclass
class SessionResult:
    events: list[Event]
    notes: list[str] = field(default_factory=list)
    mini_steps: int = 0


class _Sink:
    """Builds events with source pointers spanning the LogLines they came from."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.events: list[Event] = []
        self.tool_calls = 0

    def add(self, kind: EventKind, text: str, first: LogLine, last: LogLine, *, tool: str | None = None,
            is_error: bool = False) -> None:
        self.tool_calls += kind == EventKind.TOOL_CALL
        self.events.append(Event(
            index=len(self.events), kind=kind, text=text, tool=tool, is_error=is_error,
            source=SourceRef(path=self.label, line=first.line, end_line=last.end_line,
                             byte_start=first.byte_start, byte_end=last.byte_end)))


def _trim(lines: list[LogLine]) -> list[LogLine]:
    """Drop blank lines at both ends."""
    i, j = 0, len(lines)
    while i < j and not lines[i].text.strip():
        i += 1
    while j > i and not lines[j - 1].text.strip():
        j -= 1
    return lines[i:j]


def _trimmed(lines: Iterable[LogLine]) -> Iterator[LogLine]:
    """`_trim` as the lines stream: blank lines are held back until a non-blank line follows them."""
    started = False
    blank: list[LogLine] = []
    for ln in lines:
        if not ln.text.strip():
            if started:
                blank.append(ln)
            continue
        started = True
        if blank:
            yield from blank
            blank.clear()
        yield ln


class _Block:
    """`prefix` + the lines joined (no blank line at either end), the first and last line, built as they stream in.

    No LogLine is kept per line, and the text grows in place (`acc += piece` on the only reference
    resizes the string, which the allocator does without a copy for large blocks), so a block as
    large as the whole log costs about its own size, not twice."""

    CHUNK = 4096

    def __init__(self, prefix: str = "") -> None:
        self.first: LogLine | None = None
        self.last: LogLine | None = None
        self._acc = prefix
        self._joined = False  # whether _acc holds any line yet
        self._parts: list[str] = []
        self._blank: list[str] = []

    def add(self, ln: LogLine) -> None:
        if not ln.text.strip():
            if self.first is not None:
                self._blank.append(ln.text)
            return
        if self.first is None:
            self.first = ln
        elif self._blank:
            self._parts.extend(self._blank)
            self._blank.clear()
        self._parts.append(ln.text)
        self.last = ln
        if len(self._parts) >= self.CHUNK:
            self._flush()

    def extend(self, lines: Iterable[LogLine]) -> None:
        """`add` for every line (the same block; the loop kept in locals)."""
        parts, blank, first, last = self._parts, self._blank, self.first, self.last
        for ln in lines:
            text = ln.text
            if not text.strip():
                if first is not None:
                    blank.append(text)
                continue
            if first is None:
                first = self.first = ln
            elif blank:
                parts.extend(blank)
                blank.clear()
            parts.append(text)
            last = ln
            if len(parts) >= self.CHUNK:
                self._flush()
                parts = self._parts
        self.last = last

    def _flush(self) -> None:
        piece = ("\n" if self._joined else "") + "\n".join(self._parts)
        self._parts = []
        acc, self._acc = self._acc, ""
        acc += piece
        self._acc, self._joined = acc, True

    def __bool__(self) -> bool:
        return self.first is not None

    def text(self) -> str:
        """The prefix and the joined lines; the block gives its text away (call once)."""
        if self._parts:
            self._flush()
        acc, self._acc = self._acc, ""
        return acc


class _Window:
    """Lines of a stream by index, read ahead on demand; `release(i)` drops the lines before i."""

    def __init__(self, lines: Iterable[LogLine]) -> None:
        self._it = iter(lines)
        self._buf: list[LogLine] = []
        self._head = 0  # index of _buf[0]

    def has(self, i: int) -> bool:
        while i >= self._head + len(self._buf):
            ln = next(self._it, None)
            if ln is None:
                return False
            self._buf.append(ln)
        return True

    def __getitem__(self, i: int) -> LogLine:
        k = i - self._head
        if 0 <= k < len(self._buf):  # already read (the common case)
            return self._buf[k]
        if i < self._head or not self.has(i):
            raise IndexError(i)
        return self._buf[i - self._head]

    def release(self, i: int) -> None:
        n = min(i - self._head, len(self._buf))
        if n >= 1024 or (n > 0 and n == len(self._buf)):
            del self._buf[:n]
            self._head += n


def _litellm_end(lines: _Window, i: int) -> int:
    """If lines[i] starts a LiteLLM logging block, the index just past it; else i."""
    if not _LITELLM.match(lines[i].text):
        return i
    j = i + 1
    while lines.has(j):
        t = lines[j].text
        if t.startswith("Traceback (most recent call last)") or (t[:1] in (" ", "\t") and t.strip()):
            j += 1
        elif t.startswith(_CHAINED):
            j += 1
        elif not t.strip() and lines.has(j + 1) and lines[j + 1].text.startswith((*_CHAINED, "Traceback (most recent")):
            j += 1
        elif _EXC_LINE.match(t) and j > i + 1:
            j += 1
            # a chained exception continues after a blank line
            if not (lines.has(j + 1) and not lines[j].text.strip() and lines[j + 1].text.startswith(_CHAINED)):
                break
        else:
            break
    return j


# --- mini-swe-agent -----------------------------------------------------------------------


class _MiniParser:
    """Reads a mini-swe-agent transcript as it streams: command outputs are joined, never held line by line."""

    def __init__(self, sink: _Sink) -> None:
        self.sink = sink
        self.steps = 0
        self.litellm_blocks = 0
        self.litellm_lines = 0

    def _skip_noise(self, lines: _Window, i: int) -> int:
        if not lines[i].text[:1].isdigit():  # a LiteLLM block starts with its time, 'hh:mm:ss - LiteLLM:'
            return i
        j = _litellm_end(lines, i)
        if j > i:
            self.litellm_blocks += 1
            self.litellm_lines += j - i
        return j

    def parse(self, lines: _Window) -> None:
        i = 0
        loose = _Block("[agent output]\n")  # lines outside any recognised block

        def flush_loose() -> None:
            nonlocal loose
            if loose:
                self.sink.add(EventKind.SYSTEM, loose.text(), loose.first, loose.last)  # type: ignore[arg-type]
            loose = _Block("[agent output]\n")

        while lines.has(i):
            lines.release(i)
            j = self._skip_noise(lines, i)
            if j > i:
                i = j
                continue
            text = lines[i].text
            if _MINI_STEP.match(text):
                flush_loose()
                i = self._response(lines, i)
            elif text == "System:":
                flush_loose()
                i = self._message(lines, i, role="system")
            elif text == "User:":
                flush_loose()
                i = self._message(lines, i, role="user")
            elif _RULE.match(text):
                flush_loose()
                i += 1
            else:
                loose.add(lines[i])
                i += 1
        flush_loose()

    def _collect(self, lines: _Window, i: int, body: list[LogLine] | _Block, *, user: bool) -> int:
        """Add the lines of the block starting after index i, up to the next block marker, to `body`."""
        add = body.append if isinstance(body, list) else body.add
        in_output = False
        j = i + 1
        while lines.has(j):
            lines.release(j)
            ln = lines[j]
            t = ln.text
            if not in_output:
                first = t[:1]  # each marker's first character is tested before its pattern (most lines are none)
                if first.isdigit():  # a LiteLLM block starts with its time (as `_skip_noise` tests)
                    k = self._skip_noise(lines, j)
                    if k > j:
                        j = k
                        continue
                if ((first == "m" and _MINI_STEP.match(t)) or t == "User:" or t == "System:"
                        or t.startswith("Saved trajectory to ")):
                    break
                if first == "\u2500" and _RULE.match(t):
                    break
            if user and "<output" in t and "</output" not in t.split("<output", 1)[1]:
                in_output = True
            elif user and in_output and "</output" in t:
                in_output = False
            add(ln)
            j += 1
        return j

    def _message(self, lines: _Window, i: int, role: str) -> int:
        header = lines[i]
        block = _Block()
        j = self._collect(lines, i, block, user=(role == "user"))
        last = block.last or header
        text = block.text()
        if role == "system":
            self.sink.add(EventKind.SYSTEM, "[system prompt]\n" + text, header, last)
            return j
        if self.steps == 0 and not self.sink.tool_calls:
            self.sink.add(EventKind.SYSTEM, "[task prompt]\n" + text, header, last)
            return j
        if not block:
            return j  # the final, empty `User:` after the submission command
        kind, shown, is_error = observation(text)
        self.sink.add(kind, shown, header, last, tool="bash" if kind == EventKind.TOOL_OUTPUT else None,
                      is_error=is_error)
        return j

    def _response(self, lines: _Window, i: int) -> int:
        self.steps += 1
        header = lines[i]
        body: list[LogLine] = []
        j = self._collect(lines, i, body, user=False)
        block = _trim(body)
        if not block:
            self.sink.add(EventKind.AGENT_MESSAGE, f"({header.text.rstrip(':')}: empty response)", header, header)
            return j
        for n, part in enumerate(response_parts([ln.text for ln in block])):
            # a message that opens the response is pointed at from its step header
            first = header if n == 0 and part.kind == EventKind.AGENT_MESSAGE else block[part.first]
            self.sink.add(part.kind, part.text, first, block[part.last],
                          tool="bash" if part.kind == EventKind.TOOL_CALL else None)
        return j


def _is_mini_line(text: str) -> bool:
    return bool(_MINI_STEP.match(text) or _MINI_START.match(text) or text == "System:")


# --- the whole session -----------------------------------------------------------------------


def _harness_line(ln: LogLine, typed: list[TypedCommand]) -> tuple[bool, TypedCommand | None, str | None]:
    """(is a harness prompt line, matching typed command, command text)."""
    if "@" not in ln.text:  # every prompt has user@host (a quick test: most lines are not prompts)
        return False, None, None
    m = _PROMPT.match(ln.text)
    if not m:
        return False, None, None
    cmd = m.group("cmd")
    if cmd is None or not cmd.strip():
        return True, None, None
    bare = _TMUX_WAIT.sub("", cmd).rstrip()
    for t in typed:
        first = t.text.split("\n", 1)[0].rstrip()
        if bare == t.text.rstrip() or (first and bare.startswith(first)):
            return True, t, bare
    if _TMUX_WAIT.search(cmd) or is_harness_bookkeeping(bare):
        return True, None, bare
    return False, None, None


@dataclass
class _Pass:
    """What one read of the session found: the verifier cut, removed spinner lines, and per segment what it holds."""

    cut: tuple[str, int] | None = None  # (command, its line)
    last_end_line: int = 0
    spinners: int = 0
    any_text: bool = False
    has_mini: list[bool] = field(default_factory=lambda: [False])  # per segment; [0] is the lead before any command
    not_found: list[int | None] = field(default_factory=lambda: [None])  # first 'mini: command not found' line
    lead_line: int | None = None  # first non-blank line of the lead


_Token = tuple[str, Any, Any]


def _tokens(lines: Iterable[LogLine], typed: list[TypedCommand], st: _Pass, *, read_to_end: bool) -> Iterator[_Token]:
    """The session as ("cmd", command lines, typed match) at each harness command and ("line", line, None) between.

    Everything from the harness's test command on is the verifier phase and yields nothing (its extent is recorded);
    leftover spinner lines are counted and skipped."""
    test_typed = next((t for t in typed if TEST_COMMAND.search(t.text)), None)
    command: list[LogLine] | None = None
    match: TypedCommand | None = None
    extra = 0
    # the pass's counters live in locals while the lines stream (written back when the generator ends)
    any_text, last_end, spinners = st.any_text, st.last_end_line, st.spinners
    try:
        for ln in lines:
            text = ln.text
            last_end = ln.end_line
            if not any_text and text.strip():
                any_text = True
            if st.cut is not None:
                if not read_to_end:
                    break
                continue
            if "@" in text:  # every harness prompt has user@host (most lines are not prompts)
                is_cmd, m, cmd = _harness_line(ln, typed)
                if is_cmd and cmd is not None and (TEST_COMMAND.search(cmd) or (test_typed is not None and m == test_typed)):
                    st.cut = (cmd, ln.line)
                    continue
            else:
                is_cmd = False
            if "\u2800" <= text[:1] <= "\u28ff" and _SPINNER.match(text):  # a spinner starts with a braille pattern
                spinners += 1
                continue
            if command is not None:
                if extra and (text == ">" or text.startswith("> ")):
                    command.append(ln)
                    extra -= 1
                    continue
                yield ("cmd", command, match)
                command = None
            if is_cmd:
                command, match, extra = [ln], m, (m.text.count("\n") if m else 0)
                continue
            yield ("line", ln, None)
        if command is not None:
            yield ("cmd", command, match)
    finally:
        st.any_text, st.last_end_line, st.spinners = any_text, last_end, spinners


def _scan(lines: Iterable[LogLine], typed: list[TypedCommand], record: list[_Token] | None = None) -> _Pass:
    """The structure pass; `record` (for a session held in memory) keeps its tokens for the events pass: the
    tokens up to the verifier cut are the same in both passes, so the second need not find them again."""
    st = _Pass()
    keep = record.append if record is not None else None
    has_mini, not_found = st.has_mini, st.not_found
    for tok in _tokens(lines, typed, st, read_to_end=True):
        if keep is not None:
            keep(tok)
        kind, value, _ = tok
        if kind == "cmd":
            has_mini.append(False)
            not_found.append(None)
            continue
        text = value.text
        if st.lead_line is None and len(has_mini) == 1 and text.strip():
            st.lead_line = value.line
        # a mini-swe-agent line starts with one of these characters (a quick test before the patterns)
        if not has_mini[-1] and text[:1] in _MINI_FIRST and _is_mini_line(text):
            has_mini[-1] = True
        if not_found[-1] is None and text.endswith("mini: command not found") and _MINI_NOT_FOUND.search(text):
            not_found[-1] = value.line
    return st


_MINI_FIRST = frozenset("mTS\U0001F44B")
"""First characters of the lines `_is_mini_line` accepts ('mini-swe-agent (step', '[\U0001F44B ]This is', 'System:')."""


READ_ONCE_BYTES = 2_000_000
"""Logs up to this size are cleaned once and held (fast); larger ones are cleaned twice as streams (bounded memory)."""

LineSource = Callable[[], Iterator[LogLine]]
"""Opens the session's clean lines afresh: the session is read twice (structure first, then events)."""


def parse_lines(source: LineSource, invalid_utf8: Callable[[], int], label: str, typed: list[TypedCommand],
                held: bool = False) -> SessionResult:
    """Events of one Terminal-Bench 1 session, read as a stream in two passes (memory bounded by the largest block).
    `held`: the lines are in memory anyway, so the first pass's tokens are kept for the second."""
    notes: list[str] = []
    recorded: list[_Token] | None = [] if held else None
    st = _scan(source(), typed, recorded)
    if invalid_utf8():
        notes.append(f"{label}: {invalid_utf8()} invalid UTF-8 byte sequence(s) shown as U+FFFD")
    if not st.any_text:
        notes.append(f"{label}: empty log (nothing recorded)")
        return SessionResult([], notes)
    if st.cut is not None:
        notes.append(f"{label}: verifier phase removed: lines {st.cut[1]}-{st.last_end_line} "
                     f"(from the harness command '{st.cut[0]}')")
    if st.spinners:
        notes.append(f"{label}: {st.spinners} leftover spinner line(s) removed")

    sink = _Sink(label)
    mini = _MiniParser(sink)
    toks = iter(recorded) if recorded is not None else _tokens(source(), typed, _Pass(), read_to_end=False)
    pending: list[_Token] = []

    def body() -> Iterator[LogLine]:
        """The lines up to the next harness command (which is kept for the caller)."""
        for tok in toks:
            if tok[0] == "cmd":
                pending.append(tok)
                return
            yield tok[1]

    def block_of(lines: Iterable[LogLine], prefix: str) -> _Block:
        block = _Block(prefix)
        block.extend(lines)
        return block

    launch = next((t for t in typed if not is_harness_bookkeeping(t.text)), None)
    if st.lead_line is not None:
        notes.append(f"{label}: starts mid-stream (line {st.lead_line} is not a harness command)")
        if st.has_mini[0]:
            mini.parse(_Window(_trimmed(body())))
        else:
            lead = block_of(body(), "[log starts mid-stream]\n")
            sink.add(EventKind.SYSTEM, lead.text(), lead.first, lead.last)  # type: ignore[arg-type]
    if not pending:  # a lead of blank lines only (a body that reached a command left it in `pending`)
        for _ in body():
            pass
    seg = 0
    while pending:
        _, command, match = pending.pop()
        seg += 1
        head = "\n".join(ln.text for ln in command)
        _, _, cmd = _harness_line(command[0], typed)
        is_launch = cmd is not None and (
            (launch is not None and match == launch) or (launch is None and not typed and not is_harness_bookkeeping(cmd)))
        if not is_launch:
            block = block_of(body(), "[harness] " + head + "\n")
            text = block.text() if block else "[harness] " + head
            sink.add(EventKind.SYSTEM, text, command[0], block.last or command[-1])
            continue
        sink.add(EventKind.SYSTEM, "[agent launch] " + head, command[0], command[-1])
        if st.not_found[seg] is not None and not st.has_mini[seg]:
            notes.append(f"{label}: the agent never started ('mini: command not found', line {st.not_found[seg]})")
            block = block_of(body(), "[agent output]\n")
            sink.add(EventKind.SYSTEM, block.text(), block.first, block.last)  # type: ignore[arg-type]
        elif st.has_mini[seg]:
            mini.parse(_Window(_trimmed(body())))
        else:
            block = block_of(body(), "[agent output: no structured steps]\n")
            if block:
                sink.add(EventKind.SYSTEM, block.text(), block.first, block.last)  # type: ignore[arg-type]
        if not pending:  # whatever a parser left unread
            for _ in body():
                pass
    if mini.litellm_blocks:
        notes.append(f"{label}: {mini.litellm_blocks} LiteLLM logging-error block(s) removed "
                     f"({mini.litellm_lines} lines)")
    return SessionResult(sink.events, notes, mini.steps)


def parse_session(clean: CleanText, label: str, typed: list[TypedCommand]) -> SessionResult:
    """Events of one Terminal-Bench 1 session log already cleaned into LogLines."""
    return parse_lines(lambda: iter(clean.lines), lambda: clean.invalid_utf8, label, typed, held=True)


def read_session(path: Path, label: str, typed: list[TypedCommand]) -> tuple[SessionResult, bytes | Path]:
    """Read and parse one agent.log (raw stream) or post-agent.txt (pane capture), streaming; also what was read,
    for its size (`size.log_size`): the bytes of a log read at once (not read again), else its path."""
    clean_lines = iter_pane if path.name.endswith(".txt") else iter_stream
    counter = Counter()
    if path.stat().st_size <= READ_ONCE_BYTES:
        data = path.read_bytes()
        lines = list(clean_lines(data, counter))
        return parse_lines(lambda: iter(lines), lambda: counter.invalid_utf8, label, typed, held=True), data

    def source() -> Iterator[LogLine]:
        counter.invalid_utf8 = 0
        with path.open("rb") as fh:
            yield from clean_lines(fh, counter)

    return parse_lines(source, lambda: counter.invalid_utf8, label, typed), path
