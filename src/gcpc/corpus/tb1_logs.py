"""Terminal-Bench 1 session logs (`sessions/agent.log`, `panes/post-agent.txt`) -> Events.

A Terminal-Bench 1 trial runs in one tmux session. The harness types its own commands into
it (start the recording, install the agent, launch the agent, and in some trials run the
tests); `commands.txt` lists those keystrokes. What the session shows depends on the agent:

* **mini-swe-agent** prints a real transcript: the system and task prompts, then per step
  `mini-swe-agent (step N, $cost):`, the model's response (a `THOUGHT:` paragraph and one
  fenced `bash` block), and `User:` with the command's `<returncode>` and `<output>` (or a
  timeout / format-error message). Its LiteLLM logging-error tracebacks are interleaved.
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
import re
from dataclasses import dataclass, field
from pathlib import Path

from gcpc.corpus.models import Event, EventKind, SourceRef
from gcpc.corpus.terminal import CleanText, LogLine, clean_stream, unwrap_pane

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
        try:
            keys = ast.literal_eval(line)
        except (ValueError, SyntaxError):
            notes.append(f"{label}:{lineno}: not a Python list literal; line ignored")
            continue
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            notes.append(f"{label}:{lineno}: not a list of strings; line ignored")
            continue
        typed = "".join(k for k in keys if not _KEY.match(k))
        if typed:
            out.append(TypedCommand(typed, lineno))
    return out, notes


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
_FENCE_OPEN = re.compile(r"^```bash\s*$")
_FENCE_CLOSE = re.compile(r"^```\s*$")
_RETURNCODE = re.compile(r"^<returncode>(-?\d+)</returncode>")
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

    def add(self, kind: EventKind, text: str, lines: list[LogLine], *, tool: str | None = None,
            is_error: bool = False) -> None:
        first, last = lines[0], lines[-1]
        self.events.append(Event(
            index=len(self.events), kind=kind, text=text, tool=tool, is_error=is_error,
            source=SourceRef(path=self.label, line=first.line, end_line=last.end_line,
                             byte_start=first.byte_start, byte_end=last.byte_end)))


def _join(lines: list[LogLine]) -> str:
    return "\n".join(ln.text for ln in lines).strip("\n")


def _trim(lines: list[LogLine]) -> list[LogLine]:
    """Drop blank lines at both ends."""
    i, j = 0, len(lines)
    while i < j and not lines[i].text.strip():
        i += 1
    while j > i and not lines[j - 1].text.strip():
        j -= 1
    return lines[i:j]


def _litellm_end(lines: list[LogLine], i: int) -> int:
    """If lines[i] starts a LiteLLM logging block, the index just past it; else i."""
    if not _LITELLM.match(lines[i].text):
        return i
    j = i + 1
    n = len(lines)
    while j < n:
        t = lines[j].text
        if t.startswith("Traceback (most recent call last)") or (t[:1] in (" ", "\t") and t.strip()):
            j += 1
        elif t.startswith(_CHAINED):
            j += 1
        elif not t.strip() and j + 1 < n and lines[j + 1].text.startswith((*_CHAINED, "Traceback (most recent")):
            j += 1
        elif _EXC_LINE.match(t) and j > i + 1:
            j += 1
            # a chained exception continues after a blank line
            if not (j + 1 < n and not lines[j].text.strip() and lines[j + 1].text.startswith(_CHAINED)):
                break
        else:
            break
    return j


# --- mini-swe-agent -----------------------------------------------------------------------


class _MiniParser:
    def __init__(self, sink: _Sink) -> None:
        self.sink = sink
        self.steps = 0
        self.litellm_blocks = 0
        self.litellm_lines = 0

    def _skip_noise(self, lines: list[LogLine], i: int) -> int:
        j = _litellm_end(lines, i)
        if j > i:
            self.litellm_blocks += 1
            self.litellm_lines += j - i
        return j

    def parse(self, lines: list[LogLine]) -> None:
        i, n = 0, len(lines)
        loose: list[LogLine] = []  # lines outside any recognised block

        def flush_loose() -> None:
            block = _trim(loose)
            if block:
                self.sink.add(EventKind.SYSTEM, "[agent output]\n" + _join(block), block)
            loose.clear()

        while i < n:
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
                loose.append(lines[i])
                i += 1
        flush_loose()

    def _collect(self, lines: list[LogLine], i: int, *, user: bool) -> tuple[list[LogLine], int]:
        """Lines of the block starting after index i, up to the next block marker."""
        body: list[LogLine] = []
        in_output = False
        j = i + 1
        n = len(lines)
        while j < n:
            t = lines[j].text
            if not in_output:
                k = self._skip_noise(lines, j)
                if k > j:
                    j = k
                    continue
                if _MINI_STEP.match(t) or t == "User:" or t == "System:" or t.startswith("Saved trajectory to "):
                    break
                if _RULE.match(t):
                    break
            if user and "<output" in t and "</output" not in t.split("<output", 1)[1]:
                in_output = True
            elif user and in_output and "</output" in t:
                in_output = False
            body.append(lines[j])
            j += 1
        return body, j

    def _message(self, lines: list[LogLine], i: int, role: str) -> int:
        body, j = self._collect(lines, i, user=(role == "user"))
        block = _trim(body)
        header = [lines[i]]
        span = header + block
        text = _join(block)
        if role == "system":
            self.sink.add(EventKind.SYSTEM, "[system prompt]\n" + text, span)
            return j
        if self.steps == 0 and not any(e.kind == EventKind.TOOL_CALL for e in self.sink.events):
            self.sink.add(EventKind.SYSTEM, "[task prompt]\n" + text, span)
            return j
        if not block:
            return j  # the final, empty `User:` after the submission command
        m = _RETURNCODE.match(text)
        if m:
            self.sink.add(EventKind.TOOL_OUTPUT, text, span, tool="bash", is_error=int(m.group(1)) != 0)
        elif text.startswith("The last command <command>") and "timed out" in text.split("\n", 1)[0]:
            self.sink.add(EventKind.TOOL_OUTPUT, text, span, tool="bash", is_error=True)
        else:
            self.sink.add(EventKind.SYSTEM, "[harness message]\n" + text, span)
        return j

    def _response(self, lines: list[LogLine], i: int) -> int:
        self.steps += 1
        body, j = self._collect(lines, i, user=False)
        block = _trim(body)
        header = lines[i]
        if not block:
            self.sink.add(EventKind.AGENT_MESSAGE, f"({header.text.rstrip(':')}: empty response)", [header])
            return j
        opens = [k for k, ln in enumerate(block) if _FENCE_OPEN.match(ln.text)]
        fences: list[tuple[int, int]] = []
        for k in opens:
            close = next((c for c in range(k + 1, len(block)) if _FENCE_CLOSE.match(block[c].text)), None)
            if close is not None and (not fences or k > fences[-1][1]):
                fences.append((k, close))
        if len(fences) != 1:
            # mini-swe-agent executes nothing unless there is exactly one bash block
            self.sink.add(EventKind.AGENT_MESSAGE, _join(block), [header, *block])
            return j
        k, close = fences[0]
        before, command, after = _trim(block[:k]), block[k + 1:close], _trim(block[close + 1:])
        if before:
            self.sink.add(EventKind.AGENT_MESSAGE, _join(before), [header, *before])
        self.sink.add(EventKind.TOOL_CALL, "\n".join(ln.text for ln in command), block[k:close + 1], tool="bash")
        if after:
            self.sink.add(EventKind.AGENT_MESSAGE, _join(after), after)
        return j


def _has_mini(lines: list[LogLine]) -> bool:
    return any(_MINI_STEP.match(ln.text) or _MINI_START.match(ln.text) or ln.text == "System:" for ln in lines)


# --- the whole session -----------------------------------------------------------------------


@dataclass
class _Segment:
    command: list[LogLine]  # the prompt line (and continuation lines) that typed it; empty before the first
    body: list[LogLine]
    typed: TypedCommand | None = None


def _harness_line(ln: LogLine, typed: list[TypedCommand]) -> tuple[bool, TypedCommand | None, str | None]:
    """(is a harness prompt line, matching typed command, command text)."""
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


def parse_session(clean: CleanText, label: str, typed: list[TypedCommand]) -> SessionResult:
    """Events of one Terminal-Bench 1 session log (already cleaned into LogLines)."""
    lines = clean.lines
    notes: list[str] = []
    sink = _Sink(label)
    if clean.invalid_utf8:
        notes.append(f"{label}: {clean.invalid_utf8} invalid UTF-8 byte sequence(s) shown as U+FFFD")
    if not lines or not any(ln.text.strip() for ln in lines):
        notes.append(f"{label}: empty log (nothing recorded)")
        return SessionResult([], notes)

    # 1. cut the verifier phase
    test_typed = next((t for t in typed if TEST_COMMAND.search(t.text)), None)
    for idx, ln in enumerate(lines):
        is_cmd, match, cmd = _harness_line(ln, typed)
        if not is_cmd or cmd is None:
            continue
        if TEST_COMMAND.search(cmd) or (test_typed is not None and match == test_typed):
            cut = lines[idx:]
            notes.append(f"{label}: verifier phase removed: lines {cut[0].line}-{cut[-1].end_line} "
                         f"(from the harness command '{cmd}')")
            lines = lines[:idx]
            break

    # 2. spinner leftovers (a redrawn status line; never content)
    kept = [ln for ln in lines if not _SPINNER.match(ln.text)]
    if len(kept) != len(lines):
        notes.append(f"{label}: {len(lines) - len(kept)} leftover spinner line(s) removed")
    lines = kept

    # 3. split at the harness's command lines
    segments: list[_Segment] = [_Segment([], [])]
    i = 0
    while i < len(lines):
        ln = lines[i]
        is_cmd, match, cmd = _harness_line(ln, typed)
        if is_cmd:
            command = [ln]
            extra = match.text.count("\n") if match else 0
            while extra and i + 1 < len(lines) and (lines[i + 1].text == ">" or lines[i + 1].text.startswith("> ")):
                i += 1
                extra -= 1
                command.append(lines[i])
            segments.append(_Segment(command, [], match))
        else:
            segments[-1].body.append(ln)
        i += 1

    launch = next((t for t in typed if not is_harness_bookkeeping(t.text)), None)
    mini = _MiniParser(sink)
    lead = _trim(segments[0].body)
    if lead:
        notes.append(f"{label}: starts mid-stream (line {lead[0].line} is not a harness command)")
        if _has_mini(lead):
            mini.parse(lead)
        else:
            sink.add(EventKind.SYSTEM, "[log starts mid-stream]\n" + _join(lead), lead)

    for seg in segments[1:]:
        head = "\n".join(ln.text for ln in seg.command)
        body = _trim(seg.body)
        _, _, cmd = _harness_line(seg.command[0], typed)
        is_launch = cmd is not None and (
            (launch is not None and seg.typed == launch) or (launch is None and not typed and not is_harness_bookkeeping(cmd)))
        if not is_launch:
            text = "[harness] " + head + ("\n" + _join(body) if body else "")
            sink.add(EventKind.SYSTEM, text, seg.command + body)
            continue
        sink.add(EventKind.SYSTEM, "[agent launch] " + head, seg.command)
        if not body:
            continue
        if any(_MINI_NOT_FOUND.search(ln.text) for ln in body) and not _has_mini(body):
            notes.append(f"{label}: the agent never started ('mini: command not found', line "
                         f"{next(ln.line for ln in body if _MINI_NOT_FOUND.search(ln.text))})")
            sink.add(EventKind.SYSTEM, "[agent output]\n" + _join(body), body)
        elif _has_mini(body):
            mini.parse(body)
        else:
            sink.add(EventKind.SYSTEM, "[agent output: no structured steps]\n" + _join(body), body)
    if mini.litellm_blocks:
        notes.append(f"{label}: {mini.litellm_blocks} LiteLLM logging-error block(s) removed "
                     f"({mini.litellm_lines} lines)")
    return SessionResult(sink.events, notes, mini.steps)


def read_session(path: Path, label: str, typed: list[TypedCommand]) -> tuple[SessionResult, Path]:
    """Read and parse one agent.log (raw stream) or post-agent.txt (pane capture); also its path (for its size)."""
    data = path.read_bytes()
    is_pane = path.name.endswith(".txt")
    clean = unwrap_pane(data) if is_pane else clean_stream(data)
    del data  # sized again from the file (log_size reads a path in chunks): the bytes are not kept
    return parse_session(clean, label, typed), path
