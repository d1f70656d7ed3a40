"""Claude Code log parsing: event kinds decide what may count as evidence, so they are tested closely."""

from __future__ import annotations

import json

import pytest

from gcpc.corpus.claude_code import parse_lines, parse_log
from gcpc.corpus.models import EventKind
from gcpc.corpus.render import render_log, truncate_middle


def _assistant(*blocks):
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}


def _results(*blocks):
    return {"type": "user", "message": {"role": "user", "content": list(blocks)}}


STREAM = [
    {"type": "system", "subtype": "init", "cwd": "/root", "tools": ["Bash", "Read"], "skills": ["docx"],
     "model": "m"},
    _assistant({"type": "thinking", "thinking": "plan it"}),
    _assistant({"type": "text", "text": "Reading the input."}),
    _assistant({"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/root/in.md"}}),
    _assistant({"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls /nope"}}),
    _results({"type": "tool_result", "tool_use_id": "t2", "content": "Exit code 2\nls: cannot access",
              "is_error": True}),
    _results({"type": "tool_result", "tool_use_id": "t1",
              "content": "     1\u2192hello\n\n<system-reminder>\nharness text\n</system-reminder>\n"}),
    _assistant({"type": "tool_use", "id": "t3", "name": "Write",
                "input": {"file_path": "/root/out.txt", "content": "WRITTEN BODY"}}),
    _results({"type": "tool_result", "tool_use_id": "t3",
              "content": [{"type": "text", "text": "File created"}, {"type": "image", "source": {}}]}),
    {"type": "user", "isSynthetic": True,
     "message": {"role": "user", "content": [{"type": "text", "text": "Base directory for this skill: /s\n# Skill"}]}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "All done, output is correct."},
]


def _lines(records):
    return [json.dumps(r) for r in records]


def test_stream_json_kinds_and_order():
    events = parse_lines(_lines(STREAM), "jobs/j/t/agent/claude-code.txt")
    kinds = [e.kind for e in events]
    assert kinds == [
        EventKind.SYSTEM,  # init
        EventKind.AGENT_MESSAGE,  # thinking
        EventKind.AGENT_MESSAGE,  # text
        EventKind.TOOL_CALL,  # Read
        EventKind.TOOL_CALL,  # Bash
        EventKind.TOOL_OUTPUT,  # Bash error
        EventKind.FILE_CONTENT,  # Read result, matched by tool_use_id despite order
        EventKind.TOOL_CALL,  # Write
        EventKind.TOOL_OUTPUT,
        EventKind.SYSTEM,  # injected skill text
        EventKind.AGENT_MESSAGE,  # final result is a claim, not evidence
    ]
    assert [e.index for e in events] == list(range(len(events)))
    assert [e.source.line for e in events] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert all(e.source.path == "jobs/j/t/agent/claude-code.txt" for e in events)
    init = events[0].text
    assert "cwd=/root" in init and "Bash" in init and "docx" not in init  # skills list = condition, hidden
    bash_out = events[5]
    assert bash_out.is_error and bash_out.tool == "Bash"
    read_out = events[6]
    assert read_out.tool == "Read" and not read_out.is_error
    assert "hello" in read_out.text and "system-reminder" not in read_out.text
    assert "WRITTEN BODY" in events[7].text and events[7].text.startswith("Write: /root/out.txt")
    assert events[8].text == "File created\n[image]"
    assert "All done" in events[10].text


def test_failed_read_is_tool_output_not_file_content():
    records = [
        _assistant({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "/root/a.docx"}}),
        _results({"type": "tool_result", "tool_use_id": "r", "is_error": True,
                  "content": "<tool_use_error>This tool cannot read binary files.</tool_use_error>"}),
    ]
    out = parse_lines(_lines(records), "x")[1]
    assert (out.kind, out.tool, out.is_error) == (EventKind.TOOL_OUTPUT, "Read", True)


def test_session_transcript_prompt_is_system_and_bookkeeping_skipped():
    records = [
        {"type": "queue-operation", "operation": "dequeue"},
        {"type": "user", "parentUuid": None, "message": {"role": "user", "content": "Do the task."}},
        _assistant({"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "echo hi"}}),
        _results({"type": "tool_result", "tool_use_id": "a", "content": "hi", "is_error": False}),
        {"type": "summary", "summary": "x"},
        {"type": "mystery-record", "payload": {"k": 1}},
        _assistant({"type": "text", "text": "Finished."}),
    ]
    events = parse_lines(_lines(records), "s.jsonl")
    assert [e.kind for e in events] == [
        EventKind.SYSTEM, EventKind.TOOL_CALL, EventKind.TOOL_OUTPUT, EventKind.SYSTEM, EventKind.AGENT_MESSAGE,
    ]
    assert events[0].text.startswith("[task prompt]") and "Do the task." in events[0].text
    assert events[0].source.line == 2
    assert "mystery-record" in events[3].text  # unknown records are kept, never silently dropped
    assert events[2].text == "hi" and events[2].tool == "Bash"


def test_malformed_line_names_file_and_line(tmp_path):
    log = tmp_path / "claude-code.txt"
    log.write_text(json.dumps(STREAM[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"claude-code\.txt:2"):
        parse_log(log)


def test_render_log_blocks_and_truncation():
    events = parse_lines(_lines(STREAM), "x")
    text = render_log(events)
    assert "[5] TOOL_OUTPUT (Bash, error):\nExit code 2" in text
    assert "[6] FILE_CONTENT (Read):" in text
    long = "A" * 50 + "B" * 50
    cut = truncate_middle(long, 60)
    assert cut.startswith("A") and cut.endswith("B") and "chars truncated" in cut
    assert len(cut) <= 60
    assert truncate_middle(long, None) == long
    assert render_log([]) == ""
