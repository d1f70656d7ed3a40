"""The memory-bounded paths give the same bytes and numbers as the whole-text ones."""

from __future__ import annotations

import hashlib

import gcpc.io as gio
from gcpc.corpus.claude_code import parse_lines, parse_log, split_lines
from gcpc.corpus.ingest import log_fingerprint
from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.corpus.render import render_log
from gcpc.corpus.size import log_size


def _traj() -> Trajectory:
    events = [Event(index=i, kind=EventKind.TOOL_OUTPUT if i % 2 else EventKind.TOOL_CALL, text=f"line {i} \u00e9\u2028\"q\"\n" * (i * 50),
                    tool="Bash", source=SourceRef(path="a/log", line=i + 1)) for i in range(6)]
    return Trajectory(trajectory_id="b/j/t", benchmark="b", task_id="t", harness="h", model="m", condition="c", source="j",
                      trial="t", outcome=Outcome(status="PASS", reward=1.0), events=events, source_path="j/t", notes=["n"])


def test_a_large_record_is_written_event_by_event_with_the_same_bytes(tmp_path, monkeypatch):
    traj = _traj()
    monkeypatch.setattr(gio, "LARGE_RECORD", 0)
    gio.write_jsonl(tmp_path / "a.jsonl", [traj])
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == gio.canonical_json(traj) + "\n"


def test_sizes_and_fingerprints_in_pieces_equal_the_whole_text(tmp_path):
    traj = _traj()
    path = tmp_path / "log.txt"
    data = "caf\u00e9 \u2028 x\n".encode() * 1000 + b"\xff\xfe tail"
    path.write_bytes(data)
    assert log_size([path], traj.events) == log_size([data], traj.events)
    assert log_size([data], traj.events).raw_chars == len(data.decode("utf-8", errors="replace"))
    assert log_size([data], traj.events).rendered_chars == len(render_log(traj.events))
    whole = hashlib.sha256(f"b\nt\n{render_log(traj.events, None)}".encode()).hexdigest()
    assert log_fingerprint(traj) == whole


def test_streamed_claude_code_parse_equals_the_whole_file_parse(tmp_path):
    path = tmp_path / "claude-code.txt"
    path.write_text('{"type":"user","message":{"content":"do it"}}\n\n{"type":"assistant","message":{"content":'
                    '[{"type":"text","text":"a\u2028b"}]}}\n{"type":"result","result":"done"}', encoding="utf-8")
    lines, spans = split_lines(path.read_bytes(), "x")
    assert parse_log(path, "x") == parse_lines(lines, "x", spans)
