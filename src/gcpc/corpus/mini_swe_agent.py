"""mini-swe-agent turns -> Events: the one parser of this agent's conversation, for every place it is read.

mini-swe-agent talks to its model in plain text. An assistant turn is a `THOUGHT:` paragraph and
one fenced ```` ```bash ```` block (the agent runs the command only when there is exactly one such
block, otherwise it answers with a format error); a user turn is the command's result
(`<returncode>N</returncode>` then `<output>`, or for long outputs a `<warning>` and
`<output_head>` / `<elided_chars>` / `<output_tail>`), a timeout message, or a harness message.

Two readers see these turns: the agent's own `.traj.json` files (`read_traj`, used by the
SWE-bench corpus reader) and the Terminal-Bench 1 terminal sessions, which print the same turns
(`gcpc.corpus.tb1_logs`). Both split responses with `response_parts` and classify results with
`observation`, so what counts as a command, an output or an error cannot drift between them.
Outputs are kept as the agent saw them: an elided output keeps its `<elided_chars>` marker and
nothing is filled in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gcpc.corpus.jsonpos import Span
from gcpc.corpus.models import Event, EventKind, SourceRef

FENCE_OPEN = re.compile(r"^```bash\s*$")
FENCE_CLOSE = re.compile(r"^```\s*$")
RETURNCODE = re.compile(r"^<returncode>(-?\d+)</returncode>")
ELIDED = re.compile(r"<elided_chars>\s*(\d+) characters elided\s*</elided_chars>")
TRAJECTORY_FORMAT = "mini-swe-agent-1"
SUBMISSION_PREFIX = "[submission: output of the final command, the patch the agent submitted]\n"


@dataclass(frozen=True)
class Part:
    """One event of a response: its kind, text and the first and last line (indexes into the response's lines)."""

    kind: EventKind
    first: int
    last: int
    text: str


def _trim(texts: Sequence[str], lo: int, hi: int) -> tuple[int, int]:
    """The range [lo, hi) without blank lines at either end."""
    while lo < hi and not texts[lo].strip():
        lo += 1
    while hi > lo and not texts[hi - 1].strip():
        hi -= 1
    return lo, hi


def _join(texts: Sequence[str]) -> str:
    return "\n".join(texts).strip("\n")


def response_parts(texts: Sequence[str]) -> list[Part]:
    """Events of one assistant response, given as lines with no blank line at either end (at least one line).

    Exactly one bash block: the text before it and after it are agent messages, the block's body the
    tool call (its span covers the fences). Any other number of blocks: the agent executed nothing,
    so the whole response is one agent message."""
    fences: list[tuple[int, int]] = []
    for k, t in enumerate(texts):
        if not FENCE_OPEN.match(t):
            continue
        close = next((c for c in range(k + 1, len(texts)) if FENCE_CLOSE.match(texts[c])), None)
        if close is not None and (not fences or k > fences[-1][1]):
            fences.append((k, close))
    if len(fences) != 1:
        return [Part(EventKind.AGENT_MESSAGE, 0, len(texts) - 1, _join(texts))]
    k, close = fences[0]
    parts: list[Part] = []
    lo, hi = _trim(texts, 0, k)
    if hi > lo:
        parts.append(Part(EventKind.AGENT_MESSAGE, lo, hi - 1, _join(texts[lo:hi])))
    parts.append(Part(EventKind.TOOL_CALL, k, close, "\n".join(texts[k + 1:close])))
    lo, hi = _trim(texts, close + 1, len(texts))
    if hi > lo:
        parts.append(Part(EventKind.AGENT_MESSAGE, lo, hi - 1, _join(texts[lo:hi])))
    return parts


def observation(text: str) -> tuple[EventKind, str, bool]:
    """(kind, event text, is_error) of a user turn after the first: a command's result is tool output (an
    error when its return code is not 0, or when it timed out); anything else a harness message."""
    m = RETURNCODE.match(text)
    if m:
        return EventKind.TOOL_OUTPUT, text, int(m.group(1)) != 0
    if text.startswith("The last command <command>") and "timed out" in text.split("\n", 1)[0]:
        return EventKind.TOOL_OUTPUT, text, True
    return EventKind.SYSTEM, "[harness message]\n" + text, False


# --- the agent's own trajectory files (`<instance_id>.traj.json`) ----------------------------


def is_mini_traj(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("trajectory_format") == TRAJECTORY_FORMAT


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content blocks [{type: text, text: ...}]
        return "\n".join(v.get("text", "") if isinstance(v, dict) else str(v) for v in value)
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass
class TrajResult:
    events: list[Event]
    info: dict[str, Any]
    notes: list[str]
    steps: int


def read_traj(doc: Any, label: str, spans: list[Span] | None = None) -> TrajResult:
    """Events of one mini-swe-agent `.traj.json` document (`spans`: where each message sits in the file).

    The system prompt and the first user message (the task and the agent's instructions) are
    system events, never evidence. The last user message of a submitted run is the output of the
    submit command, i.e. the patch the agent handed in (`info.submission`): it is tool output, marked
    as the submission. The model's hidden reasoning (`extra`) was not part of the conversation and is
    not read."""
    if not isinstance(doc, dict):
        raise ValueError(f"{label}: .traj.json root is not a JSON object")
    messages = doc.get("messages")
    if not isinstance(messages, list):
        raise ValueError(f"{label}: field 'messages' is missing or not a list")
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    if spans is not None and len(spans) != len(messages):
        spans = None
    submission = info.get("submission") if isinstance(info.get("submission"), str) else None
    exit_status = info.get("exit_status")
    events: list[Event] = []
    notes: list[str] = []

    def add(kind: EventKind, text: str, i: int | None, tool: str | None = None, is_error: bool = False) -> None:
        span = spans[i] if spans is not None and i is not None else None
        ref = (SourceRef(path=label, line=span.line, end_line=span.end_line, byte_start=span.byte_start,
                         byte_end=span.byte_end) if span is not None else SourceRef(path=label, line=1))
        events.append(Event(index=len(events), kind=kind, text=text, tool=tool, is_error=is_error, source=ref))

    steps = 0
    elided = 0
    submitted_seen = False
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ValueError(f"{label}: messages[{i}] is not a JSON object")
        role = msg.get("role")
        text = _content(msg.get("content"))
        if role == "system":
            add(EventKind.SYSTEM, "[system prompt]\n" + text, i)
        elif role == "assistant":
            steps += 1
            lines = text.split("\n")
            lo, hi = _trim(lines, 0, len(lines))
            if hi == lo:
                add(EventKind.AGENT_MESSAGE, f"(step {steps}: empty response)", i)
                continue
            for part in response_parts(lines[lo:hi]):
                add(part.kind, part.text, i, tool="bash" if part.kind == EventKind.TOOL_CALL else None)
        elif role == "user" and steps == 0:
            add(EventKind.SYSTEM, "[task prompt]\n" + text, i)
        elif role == "user":
            if (i == len(messages) - 1 and exit_status == "Submitted" and submission is not None
                    and text == submission):
                add(EventKind.TOOL_OUTPUT, SUBMISSION_PREFIX + (text or "(empty: no change submitted)"), i, tool="bash")
                submitted_seen = True
                continue
            kind, shown, is_error = observation(text)
            elided += kind == EventKind.TOOL_OUTPUT and bool(ELIDED.search(text))
            add(kind, shown, i, tool="bash" if kind == EventKind.TOOL_OUTPUT else None, is_error=is_error)
        else:
            add(EventKind.SYSTEM, f"[{role} message]\n" + text, i)
    if submission and not submitted_seen:
        # a submission that is not the last message (an older layout): still the patch the agent handed in
        add(EventKind.TOOL_OUTPUT, SUBMISSION_PREFIX + submission, None, tool="bash")
    if exit_status is not None:
        add(EventKind.SYSTEM, f"[agent exit] exit_status={exit_status}", None)
    if elided:
        notes.append(f"{label}: {elided} command output(s) reached the agent elided (head and tail only); "
                     "the elided characters are not in the log and are not filled in")
    return TrajResult(events, info, notes, steps)


def model_of(info: dict[str, Any]) -> str | None:
    """The model named in the run's config (`info.config.model.model_name`)."""
    cfg = info.get("config")
    model = cfg.get("model") if isinstance(cfg, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    return str(name) if name else None
