"""Property tests for every reader and the pytest collector: on any input they return events (or
tests) or raise a ValueError naming the file; they never crash with another exception, and the
Harbor ingest of a trial never raises at all (a bad trial is an exclusion naming the file).

Bounded for CI: `GCPC_FUZZ_EXAMPLES` examples per property (default 40). The longer run is
`GCPC_FUZZ_EXAMPLES=5000 python -m pytest tests/fuzz -q` (bench/README.md).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcpc.corpus.atif import parse_atif_file
from gcpc.corpus.claude_code import parse_log
from gcpc.corpus.ingest import ingest
from gcpc.corpus.pytest_ast import collect_source
from gcpc.corpus.swe_bench import parse_traj_file
from gcpc.corpus.tb1_logs import read_session

EXAMPLES = int(os.environ.get("GCPC_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

KEYS = st.sampled_from(["type", "message", "content", "role", "text", "id", "name", "input", "tool_use_id", "is_error",
                        "tool_use", "tool_result", "assistant", "user", "system", "result", "subtype", "steps", "source",
                        "message_id", "tool_calls", "function_name", "arguments", "observation", "results", "trajectory",
                        "action", "thought", "response", "history", "info", "schema_version", "agent", "extra"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=30), KEYS)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=5)),
                    max_leaves=25)


def _mutations(base: bytes) -> st.SearchStrategy[bytes]:
    """Valid-looking input, cut short, with bytes spliced in, or doubled."""
    return st.one_of(
        st.just(base),
        st.integers(0, len(base)).map(lambda n: base[:n]),
        st.tuples(st.integers(0, len(base)), st.binary(max_size=8)).map(lambda t: base[: t[0]] + t[1] + base[t[0]:]),
        st.binary(max_size=200),
    )


def _lines(records: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


STREAM = _lines([{"type": "system", "subtype": "init", "cwd": "/r", "tools": ["Bash"]},
                 {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}]}},
                 {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.txt"}]}}])
ATIF = json.dumps({"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1", "model_name": "m"},
                   "steps": [{"step_id": 1, "source": "user", "message": "do it"},
                             {"step_id": 2, "source": "agent", "message": "ok", "tool_calls": [{"tool_call_id": "c", "function_name": "bash", "arguments": {"cmd": "ls"}}],
                              "observation": {"results": [{"source_call_id": "c", "content": "a.txt"}]}}]}).encode()
TRAJ = json.dumps({"environment": "swe_main", "trajectory": [{"thought": "t", "action": "ls", "observation": "a.py", "response": "ls"}],
                   "history": [{"role": "system", "content": "sys"}], "info": {"exit_status": "submitted"}}).encode()
PANE = b"root@box:/app# ls\na.txt\nroot@box:/app# cat a.txt\n\x1b[31mhello\x1b[0m\r\nroot@box:/app# \n"
TESTS = b"import pytest\n\n@pytest.mark.parametrize('v', [1, 2])\ndef test_a(v):\n    assert v\n\nclass TestB:\n    def test_c(self):\n        pass\n"


def _file(data: bytes, name: str):
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / name.replace("/", "_")
    path.write_bytes(data)
    return tmp, path


def _named_error(fn, data: bytes, name: str) -> None:
    tmp, path = _file(data, name)
    with tmp:
        try:
            fn(path, f"corpus/{name}")
        except ValueError as exc:
            assert f"corpus/{name}" in str(exc), str(exc)


@FUZZ
@given(st.one_of(_mutations(STREAM), st.lists(JSON, max_size=6).map(_lines)))
def test_claude_code_stream_json_and_session_jsonl(data):
    _named_error(parse_log, data, "agent/claude-code.txt")
    _named_error(parse_log, data, "agent/sessions/projects/p/s.jsonl")


@FUZZ
@given(st.one_of(_mutations(ATIF), JSON.map(lambda v: json.dumps(v).encode())))
def test_atif(data):
    _named_error(parse_atif_file, data, "agent/trajectory.json")


@FUZZ
@given(st.one_of(_mutations(TRAJ), JSON.map(lambda v: json.dumps({"trajectory": v}).encode())))
def test_swe_agent_traj(data):
    _named_error(parse_traj_file, data, "run/x/x.traj")


@FUZZ
@given(_mutations(PANE), st.sampled_from(["panes/post-agent.txt", "sessions/agent.log"]))
def test_terminal_bench_1_logs(data, name):
    tmp, path = _file(data, name)
    with tmp:
        session, _ = read_session(path, name, [])
        assert all(e.text is not None for e in session.events)


@FUZZ
@given(st.one_of(_mutations(TESTS), st.text(max_size=300).map(str.encode)))
def test_pytest_collector(data):
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        tests = collect_source(source, "test_x.py", notes=[])
    except ValueError as exc:
        assert "test_x.py" in str(exc)
    else:
        assert len(tests) <= 100_000


@FUZZ
@given(st.one_of(_mutations(STREAM), st.binary(max_size=100)), st.one_of(_mutations(b'{"task_name": "t", "verifier_result": {"rewards": {"reward": 1}}}'),
                                                                       JSON.map(lambda v: json.dumps(v).encode())))
def test_harbor_ingest_never_raises(log, result):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tasks" / "t" / "tests").mkdir(parents=True)
        (root / "tasks" / "t" / "instruction.md").write_text("Write a.txt.\n")
        trial = root / "jobs" / "j" / "t__1"
        (trial / "agent").mkdir(parents=True)
        (trial / "result.json").write_bytes(result)
        (trial / "agent" / "claude-code.txt").write_bytes(log)
        res = ingest({"name": "f", "benchmark": "b", "tasks_dir": "tasks", "trials_dirs": ["jobs"]}, root)
        assert len(res.trajectories) + len(res.exclusions) == 1
        for e in res.exclusions:
            assert e.path == "jobs/j/t__1" and e.reason
