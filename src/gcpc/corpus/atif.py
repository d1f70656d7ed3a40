"""Harbor's Agent Trajectory Interchange Format (ATIF, `agent/trajectory.json`) -> Events.

ATIF (Harbor RFC 0001, schema versions `ATIF-v1.x`) is one JSON object: `schema_version`,
`session_id`, `agent` {name, version, model_name}, and ordered `steps`. Each step has
`step_id`, `source` (`system` | `user` | `agent`), `message` (a string, or from v1.6 a list of
content parts), and for agent steps optional `reasoning_content`, `tool_calls`
[{tool_call_id, function_name, arguments}] and `observation` {results: [{source_call_id,
content, subagent_trajectory_ref}]}.

Mapping (same evidence rules as the Claude Code reader): system and user steps are `system`
(the first user step is the task prompt); reasoning and messages are `agent_message`; each
tool call is a `tool_call`; each observation result of an agent step is a `tool_output`
(`file_content` for file-reading tools), matched to its call by `source_call_id`. Results of
system steps and subagent references are `system`. Unknown fields are ignored; an unknown step
source is kept as a `system` event, never dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc.corpus.claude_code import format_tool_call, render_content
from gcpc.corpus.jsonpos import Span, load_with_spans
from gcpc.corpus.models import Event, EventKind, SourceRef

FILE_READ_TOOLS = frozenset({"Read", "read_file", "view_file", "file_read"})


def _text(value: Any) -> str:
    return render_content(value) if value is not None else ""


class _Builder:
    def __init__(self, label: str) -> None:
        self.label = label
        self.events: list[Event] = []

    def add(self, kind: EventKind, text: str, span: Span | None, *, tool: str | None = None,
            is_error: bool = False) -> None:
        src = (SourceRef(path=self.label, line=span.line, end_line=span.end_line, byte_start=span.byte_start,
                         byte_end=span.byte_end) if span else SourceRef(path=self.label, line=1))
        self.events.append(Event(index=len(self.events), kind=kind, text=text, tool=tool, is_error=is_error,
                                 source=src))


def parse_atif(doc: Any, label: str, spans: list[Span] | None = None) -> tuple[list[Event], dict[str, Any]]:
    """Events of one ATIF document, and its metadata (schema_version, agent name/version/model)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{label}: ATIF root is not a JSON object")
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise ValueError(f"{label}: ATIF field 'steps' is missing or not a list")
    version = doc.get("schema_version")
    if not (isinstance(version, str) and version.startswith("ATIF-v1")):
        raise ValueError(f"{label}: field 'schema_version' is {version!r}, not an ATIF-v1.x version")
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    meta = {"schema_version": version, "agent_name": agent.get("name"), "agent_version": agent.get("version"),
            "model_name": agent.get("model_name"), "session_id": doc.get("session_id")}
    if spans is not None and len(spans) != len(steps):
        spans = None
    b = _Builder(label)
    seen_user = False
    for i, step in enumerate(steps):
        span = spans[i] if spans else None
        if not isinstance(step, dict):
            b.add(EventKind.SYSTEM, f"[non-object step {i + 1}] {step!r}", span)
            continue
        source = step.get("source")
        message = _text(step.get("message"))
        if source == "system":
            if message.strip():
                b.add(EventKind.SYSTEM, "[system prompt]\n" + message, span)
        elif source == "user":
            if message.strip():
                b.add(EventKind.SYSTEM, ("[user message]\n" if seen_user else "[task prompt]\n") + message, span)
            seen_user = True
        elif source == "agent":
            reasoning = _text(step.get("reasoning_content"))
            if reasoning.strip():
                b.add(EventKind.AGENT_MESSAGE, "(thinking) " + reasoning, span)
            if message.strip():
                b.add(EventKind.AGENT_MESSAGE, message, span)
        else:
            b.add(EventKind.SYSTEM, f"[{source} step]\n{message}", span)
        names: dict[str, str] = {}
        calls = step.get("tool_calls") or []
        for call in calls if isinstance(calls, list) else [calls]:
            if not isinstance(call, dict):
                b.add(EventKind.SYSTEM, f"[malformed tool call] {call!r}", span)
                continue
            name = str(call.get("function_name") or "?")
            if call.get("tool_call_id") is not None:
                names[str(call["tool_call_id"])] = name
            b.add(EventKind.TOOL_CALL, format_tool_call(name, call.get("arguments")), span, tool=name)
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        for res in results if isinstance(results, list) else []:
            if not isinstance(res, dict):
                b.add(EventKind.SYSTEM, f"[malformed observation result] {res!r}", span)
                continue
            tool = names.get(str(res.get("source_call_id"))) if res.get("source_call_id") is not None else None
            extra = res.get("extra") if isinstance(res.get("extra"), dict) else {}
            is_error = bool(res.get("is_error") or extra.get("is_error"))
            refs = res.get("subagent_trajectory_ref")
            content = res.get("content")
            if content is not None:
                if source == "agent":
                    kind = EventKind.FILE_CONTENT if tool in FILE_READ_TOOLS and not is_error else EventKind.TOOL_OUTPUT
                else:
                    kind = EventKind.SYSTEM
                b.add(kind, _text(content), span, tool=tool, is_error=is_error)
            if isinstance(refs, list):
                for ref in refs:
                    sid = ref.get("session_id") if isinstance(ref, dict) else ref
                    path = ref.get("trajectory_path") if isinstance(ref, dict) else None
                    b.add(EventKind.SYSTEM, f"[subagent trajectory] session_id={sid}" +
                          (f" path={path}" if path else ""), span, tool=tool)
    return b.events, meta


def parse_atif_file(path: str | Path, source_path: str | None = None) -> tuple[list[Event], dict[str, Any], bytes]:
    """Read and parse one ATIF file; errors (not UTF-8, invalid JSON, wrong schema) name the file."""
    path = Path(path)
    label = source_path or path.as_posix()
    data = path.read_bytes()
    doc, spans, _ = load_with_spans(data, label, "steps")
    events, meta = parse_atif(doc, label, spans)
    return events, meta, data
