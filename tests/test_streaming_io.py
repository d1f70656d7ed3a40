"""The memory-bounded paths give the same bytes and numbers as the whole-text ones."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

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


def test_long_strings_are_written_in_pieces_with_the_same_bytes(tmp_path, monkeypatch):
    traj = _traj()
    monkeypatch.setattr(gio, "LARGE_RECORD", 0)
    monkeypatch.setattr(gio, "STRING_PIECE", 7)  # pieces cut through escapes' neighbours: é, U+2028, quotes, newlines
    gio.write_jsonl(tmp_path / "a.jsonl", [traj])
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == gio.canonical_json(traj) + "\n"


TB1_FIXTURE = Path(__file__).parent / "fixtures" / "terminal_bench_1"
TB1_SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "terminal-bench-1"


def _tb1_logs(root: Path) -> list[Path]:
    return sorted(p for pattern in ("*/sessions/agent.log", "*/panes/post-agent.txt") for p in root.rglob(pattern))


def _both_ways(log: Path, monkeypatch) -> tuple:
    """The session read whole (cleaned once, held) and as a stream read twice."""
    from gcpc.corpus import tb1_logs

    trial = log.parent.parent
    cmds = trial / "commands.txt"
    typed = tb1_logs.parse_commands(cmds.read_text(encoding="utf-8", errors="replace"), "c")[0] if cmds.is_file() else []
    whole, _ = tb1_logs.read_session(log, "log", typed)
    with monkeypatch.context() as m:
        m.setattr(tb1_logs, "READ_ONCE_BYTES", -1)
        streamed, _ = tb1_logs.read_session(log, "log", typed)
    return whole, streamed


def test_streamed_terminal_bench_1_sessions_equal_the_held_ones(monkeypatch):
    logs = _tb1_logs(TB1_FIXTURE)
    assert len(logs) >= 5
    for log in logs:
        whole, streamed = _both_ways(log, monkeypatch)
        assert streamed == whole, log


def test_streamed_sessions_equal_the_held_ones_on_shared_runs(monkeypatch):
    if not TB1_SHARED.is_dir():
        pytest.skip(f"real data not available at {TB1_SHARED} (the shared curated-data checkout is absent)")
    logs = _tb1_logs(TB1_SHARED)
    sample = sorted(logs, key=lambda p: p.stat().st_size)[-40:]  # the largest: most structure, most lines
    for log in sample:
        whole, streamed = _both_ways(log, monkeypatch)
        assert streamed == whole, log


def test_the_stream_screen_finalizes_old_rows_without_changing_the_text(monkeypatch):
    from gcpc.corpus import terminal

    esc = "\x1b"
    raw = "".join(f"row {i}\r\n" + (f"spin\r{esc}[1A{esc}[2Krow {i} redrawn\r\n" if i % 7 == 0 else "") for i in range(200))
    whole = terminal.clean_stream(raw.encode())
    monkeypatch.setattr(terminal, "SCREEN_ROWS", 3)
    assert terminal.clean_stream(raw.encode()) == whole
    assert any(ln.text.endswith("redrawn") and ln.end_line == ln.line + 1 for ln in whole.lines)
