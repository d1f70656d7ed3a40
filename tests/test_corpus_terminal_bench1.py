"""Terminal-Bench 1 runs: tasks from results.json, session logs of every agent family, outcomes, duplicates.

Fixture tests use tests/fixtures/terminal_bench_1 (written for gcpc; make_fixture.py there).
Real-data tests read a handful of trials from ../shared/data and skip when it is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.corpus.ingest import ingest, write_outputs
from gcpc.corpus.models import EVIDENCE_KINDS, Trajectory
from gcpc.corpus.render import render_log
from gcpc.corpus.tb1_logs import parse_commands, read_session
from gcpc.corpus.terminal_bench1 import (find_duplicates, listed_without_folder, normalize_test_key, outcome_of,
                                         read_tasks, scan, scan_run)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "terminal_bench_1"
DATA = REPO.parent / "shared" / "data"
TB1 = DATA / "terminal-bench-1" / "runs"
VERIFIER = "TB1-VERIFIER-OUTPUT-7731"
MINI = "20250825_swe-agent-mini_claude-4-sonnet"
CFG = {"name": "tb1-fixture", "format": "terminal-bench-1", "root": "tests/fixtures/terminal_bench_1",
       "trials_dirs": ["runs"], "condition": "without_skills"}


@pytest.fixture(scope="module")
def fixture_result():
    return ingest(CFG, REPO)


def _traj(result, suffix: str) -> Trajectory:
    (t,) = [t for t in result.trajectories if t.trajectory_id.endswith(suffix)]
    return t


def _kinds(t: Trajectory) -> list[str]:
    return [e.kind.value for e in t.events]


# --- fixture ---------------------------------------------------------------------------------


def test_fixture_tasks_from_results_json(fixture_result):
    tasks = {t.task_id: t for t in fixture_result.tasks}
    assert sorted(tasks) == ["fix-perms", "hello-world"]
    hello = tasks["hello-world"]
    assert hello.instruction.startswith("Create a file called hello.txt")
    assert [t.id for t in hello.tests] == ["test_hello_file_content", "test_hello_file_exists"]  # union, sorted
    assert hello.provenance["verifier_source"] == "absent" and hello.verifier_files == {}
    # the mangled key 'test_owner - AssertionError: ...' counts as test_owner
    assert [t.id for t in tasks["fix-perms"].tests] == ["test_mode", "test_owner"]


def test_fixture_mini_agent_log_steps(fixture_result):
    t = _traj(fixture_result, "hello-world.1-of-1.batch-1")
    assert (t.log_format, t.harness, t.model, t.source, t.condition) == (
        "tb1-agent-log", "mini-swe-agent", "model-x", "20250101_swe-agent-mini_model-x", "without_skills")
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    assert [c.text for c in calls] == ["ls -la", 'echo "Hello, world!" > hello.txt', "cat hello.txt",
                                       "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    third_output = t.events[calls[2].index + 1]
    assert third_output.kind.value == "tool_output" and third_output.tool == "bash" and not third_output.is_error
    assert third_output.text.split("\n") == ["<returncode>0</returncode>", "<output>", "Hello, world!", "</output>"]
    assert t.events[calls[0].index - 1].text.startswith("THOUGHT: Let me see what is in the directory")
    prompts = [e.text.split("\n", 1)[0] for e in t.events if e.kind.value == "system"]
    assert "[system prompt]" in prompts and "[task prompt]" in prompts
    text = render_log(t.events, None)
    assert "\x1b" not in text and "\r" not in text and "Waiting for the LM" not in text
    assert "LiteLLM" not in text and "Traceback" not in text
    assert any("LiteLLM logging-error block(s) removed" in n for n in t.notes)
    # source pointers: lines and bytes of the raw stream
    raw = (FIXTURE / "runs" / t.source / "batch-1/hello-world/hello-world.1-of-1.batch-1/sessions/agent.log").read_bytes()
    src = calls[2].source
    assert src.path.endswith("hello-world.1-of-1.batch-1/sessions/agent.log")
    assert b"cat hello.txt" in raw[src.byte_start:src.byte_end]
    assert raw[: src.byte_start].count(b"\n") + 1 == src.line


def test_fixture_verifier_part_of_the_session_is_cut(fixture_result):
    for t in fixture_result.trajectories:
        assert VERIFIER not in render_log(t.events, None), t.trajectory_id
        assert "test session starts" not in render_log(t.events, None)
    hello = _traj(fixture_result, "hello-world.1-of-1.batch-1")
    assert any("verifier phase removed" in n and "bash /tests/run-tests.sh" in n for n in hello.notes)
    orch = _traj(fixture_result, "20250103_orchestrator_model-z/hello-world/hello-world.1-of-2")
    assert any("verifier phase removed" in n for n in orch.notes)


def test_fixture_zero_evidence_agents_are_trajectories_not_errors(fixture_result):
    never = _traj(fixture_result, "fix-perms.2-of-2.batch-1")
    assert set(_kinds(never)) == {"system"}
    assert any("never started" in n for n in never.notes)
    assert "bash: mini: command not found" in render_log(never.events, None)
    assert never.outcome.status == "other" and never.outcome.raw == "is_resolved=null"
    assert "failure_mode=parse_error" in never.outcome.reason

    oh = _traj(fixture_result, "hello-world.1-of-1.oh-1")
    assert (oh.harness, oh.model, oh.log_format) == ("openhands", "openai/model-y", "tb1-pane")
    assert set(_kinds(oh)) == {"system"}
    launch = next(e for e in oh.events if e.text.startswith("[agent launch]"))
    assert "Be careful." in launch.text  # the continuation lines of a multi-line command belong to it
    assert "AgentState.FINISHED" in next(e for e in oh.events if e.text.startswith("[agent output")).text

    orch2 = _traj(fixture_result, "hello-world.2-of-2")
    assert orch2.model == "model-z" and set(_kinds(orch2)) == {"system"}
    assert any("invalid UTF-8" in n for n in orch2.notes)
    assert not any(e.kind in EVIDENCE_KINDS for t in (never, oh, orch2) for e in t.events)


def test_fixture_pane_mid_stream(fixture_result):
    t = _traj(fixture_result, "fix-perms.1-of-1.batch-1")
    assert t.log_format == "tb1-pane" and t.outcome.status == "FAIL"
    assert _kinds(t)[:4] == ["system", "agent_message", "tool_call", "tool_output"]
    assert t.events[0].text.startswith("[agent output]\nx r-x")
    assert t.events[2].text == "chmod 700 /app/run.sh && stat -c %a /app/run.sh"
    assert any("starts mid-stream" in n for n in t.notes)
    assert t.test_results == {"test_mode": "failed", "test_owner": "failed"}


def test_fixture_pane_wrapped_lines_are_joined():
    trial = FIXTURE / "runs/20250101_swe-agent-mini_model-x/batch-1/hello-world/hello-world.1-of-1.batch-1"
    typed, _ = parse_commands((trial / "commands.txt").read_text(), "commands.txt")
    session, _ = read_session(trial / "panes" / "post-agent.txt", "post-agent.txt", typed)
    thought = next(e for e in session.events if e.kind.value == "agent_message")
    assert thought.text.endswith("like tmux does.") and "\n" not in thought.text
    # the message spans its step header (line 17) and the two pane rows the thought was wrapped into
    assert (thought.source.line, thought.source.end_line) == (17, 19)
    assert "LiteLLM" not in render_log(session.events, None)
    assert [e.text for e in session.events if e.kind.value == "tool_call"] == ["ls -la",
                                                                              'echo "Hello, world!" > hello.txt']


def test_fixture_exclusions_duplicates_and_unlisted(fixture_result):
    reasons = {e.path: e.reason for e in fixture_result.exclusions}
    dup = "runs/20250101_swe-agent-mini_model-x/batch-2/batch-1/hello-world/hello-world.1-of-1.batch-1"
    assert reasons[dup].startswith("duplicate: byte-identical copy (commands.txt, results.json) of runs/")
    (d,) = [e for e in fixture_result.exclusions if e.path == dup]
    assert d.duplicate_of == "terminal-bench-1/20250101_swe-agent-mini_model-x/batch-1/hello-world/hello-world.1-of-1.batch-1"
    assert reasons["runs/20250104_droid_model-w/b1/fix-perms/fix-perms.1-of-1.b1"] == (
        "no agent log: neither sessions/agent.log nor panes/post-agent.txt (the folder holds results.json)")
    assert reasons["runs/20250101_swe-agent-mini_model-x/batch-2/hello-world/hello-world.1-of-1.batch-2"].startswith(
        "no agent log")
    crashed = "runs/20250101_swe-agent-mini_model-x/batch-1/fix-perms/fix-perms.3-of-3.batch-1"
    assert reasons[crashed].startswith("no trial folder: listed in runs/20250101_swe-agent-mini_model-x/batch-1/")
    assert len(fixture_result.exclusions) == 4  # the crashed trial is listed once, not per copy of results.json


def test_fixture_malformed_results_json_keeps_the_trial(fixture_result):
    t = _traj(fixture_result, "hello-world.2-of-2.batch-1")
    assert t.outcome.status == "other" and "results.json: invalid JSON" in t.outcome.reason
    assert any("commands.txt:2: not a Python list literal" in n for n in t.notes)


def test_outcome_mapping():
    assert outcome_of({"is_resolved": True}, None).status == "PASS"
    assert outcome_of({"is_resolved": False}, None).status == "FAIL"
    null = outcome_of({"is_resolved": None, "failure_mode": "test_timeout", "parser_results": None}, None)
    assert (null.status, null.raw) == ("other", "is_resolved=null")
    assert "failure_mode=test_timeout" in null.reason and "parser_results null" in null.reason
    assert "unexpected value" in outcome_of({"is_resolved": "yes"}, None).reason
    assert outcome_of(None, "results.json missing").reason == "results.json missing"
    assert normalize_test_key("test_a[1] - AssertionError: x - y") == "test_a[1]"
    assert normalize_test_key("../tests/test_outputs.py - IndexError") == "../tests/test_outputs.py - IndexError"


def test_fixture_population_report_is_deterministic(fixture_result, tmp_path):
    pop = write_outputs(fixture_result, tmp_path / "a")
    write_outputs(ingest(CFG, REPO), tmp_path / "b")
    for name in ("tasks.jsonl", "trajectories.jsonl", "exclusions.jsonl", "population.json", "population.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert pop["counts"] == {"terminal-bench-1": {"without_skills": {"PASS": 2, "FAIL": 3, "other": 2}}}
    assert pop["n_duplicates"] == 1 and pop["n_zero_evidence"] == 5
    assert pop["by_source"]["terminal-bench-1/20250104_droid_model-w"]["excluded"] == {"no agent log": 1}
    assert pop["outcome_other_by_reason"] == {
        "terminal-bench-1: is_resolved is null (failure_mode=parse_error)": 1,
        "terminal-bench-1: results.json": 1}
    md = (tmp_path / "a" / "population.md").read_text(encoding="utf-8")
    assert "## Duplicates removed" in md and "## By source (job or run)" in md
    assert "| terminal-bench-1/20250101_swe-agent-mini_model-x | 4 | 1 | 1 | 2 |" in md
    assert VERIFIER not in (tmp_path / "a" / "trajectories.jsonl").read_text(encoding="utf-8")


# --- real data -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs() -> Path:
    if not TB1.is_dir():
        pytest.skip(f"real data not available at {TB1} (the shared curated-data checkout is absent)")
    return TB1


def _read(trial: Path, log: str):
    typed, _ = parse_commands((trial / "commands.txt").read_text(encoding="utf-8"), "commands.txt")
    session, _ = read_session(trial / log, log, typed)
    return session


def test_real_mini_agent_log(runs):
    trial = runs / MINI / "2025-08-07__20-46-16/hello-world/hello-world.1-of-1.2025-08-07__20-46-16"
    s = _read(trial, "sessions/agent.log")
    calls = [e for e in s.events if e.kind.value == "tool_call"]
    assert [c.text for c in calls] == ['echo "Hello, world!" > hello.txt', "cat hello.txt", "ls -la hello.txt",
                                       "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    out = s.events[calls[2].index + 1]
    assert out.kind.value == "tool_output"
    assert out.text.split("\n")[:3] == ["<returncode>0</returncode>", "<output>",
                                        "-rw-r--r-- 1 root root 14 Aug  8 06:50 hello.txt"]
    assert s.mini_steps == 4
    # the tool call spans its fenced block (lines 1226-1228), the output starts at its `User:` line
    assert (calls[2].source.line, calls[2].source.end_line, out.source.line) == (1226, 1228, 1259)
    raw = (trial / "sessions/agent.log").read_bytes()
    assert raw[calls[2].source.byte_start:calls[2].source.byte_end] == b"```bash\r\nls -la hello.txt\r\n```\r"
    text = render_log(s.events, None)
    assert "\x1b" not in text and "LiteLLM" not in text and "Waiting for the LM" not in text


def test_real_mini_pane(runs):
    trial = runs / MINI / "2025-08-07__20-46-16/hello-world/hello-world.1-of-1.2025-08-07__20-46-16"
    s = _read(trial, "panes/post-agent.txt")
    calls = [e for e in s.events if e.kind.value == "tool_call"]
    assert calls[2].text == "ls -la hello.txt"
    assert s.events[calls[1].index + 1].text.split("\n")[2] == "Hello, world!"
    # the launch command was wrapped at 160 columns by the pane and is joined again
    launch = next(e for e in s.events if e.text.startswith("[agent launch]"))
    assert "Make sure it ends in a newline." in launch.text and (launch.source.line, launch.source.end_line) == (1007, 1008)


def test_real_mini_agent_never_started(runs):
    trial = runs / MINI / "2025-08-07__20-46-16/build-initramfs-qemu/build-initramfs-qemu.1-of-1.2025-08-07__20-46-16"
    s = _read(trial, "sessions/agent.log")
    assert {e.kind.value for e in s.events} == {"system"}
    assert any("never started" in n for n in s.notes)


def test_real_mini_session_with_tests_is_cut(runs):
    trial = runs / MINI / "2025-08-13__19-44-27/simple-sheets-put/simple-sheets-put.1-of-1.2025-08-13__19-44-27"
    s = _read(trial, "sessions/agent.log")
    assert any(n.endswith("verifier phase removed: lines 1956-2082 (from the harness command "
                          "'bash /tests/run-tests.sh')") for n in s.notes)
    text = render_log(s.events, None)
    assert "Collecting pytest==8.3.0" not in text and "bash /tests/run-tests.sh" not in text


def test_real_openhands_pane_is_zero_evidence(runs):
    trial = runs / "20250711_openhands_claude-4-sonnet/openhands-sonnet/hello-world/hello-world.1-of-1.openhands-sonnet"
    s = _read(trial, "panes/post-agent.txt")
    assert {e.kind.value for e in s.events} == {"system"}
    assert s.events[-2].text.startswith("[agent output: no structured steps]")
    assert "AgentState.RUNNING to AgentState.FINISHED" in s.events[-2].text
    assert s.events[-3].text.startswith("[agent launch] root@f3db06c2f6c1:/app# openhands --max-budget-per-task 10")


def test_real_orchestrator_agent_log_test_run_is_cut(runs):
    trial = runs / "20250902_orchestrator_claude-4-sonnet/jupyter-notebook-server/jupyter-notebook-server.2-of-5"
    s = _read(trial, "sessions/agent.log")
    text = render_log(s.events, None)
    assert "test session starts" not in text and "PASSED" not in text and "AssertionError" not in text
    assert [e.kind.value for e in s.events] == ["system", "system"]
    assert any("verifier phase removed: lines 5-" in n for n in s.notes)
    pane = _read(trial, "panes/post-agent.txt")
    assert [e.text for e in pane.events] == ["[harness] root@83e53e424c7f:/app#"]


def test_real_run_layout_duplicates_and_unlisted_trials(runs):
    trials, batches = scan_run(runs / MINI, [DATA / "terminal-bench-1"], [])
    assert len(trials) == 296 and len(batches) == 5
    dups = find_duplicates(trials)
    assert len(dups) == 43
    assert all("2025-08-15__19-28-24/2025-08-15__16-23-45/" in d.as_posix() for d in dups)
    assert all(orig.rel.startswith("2025-08-15__16-23-45/") for orig in dups.values())
    from gcpc.corpus.terminal_bench1 import Scan

    unlisted = listed_without_folder(Scan(trials, batches, []), [DATA / "terminal-bench-1"])
    assert len(unlisted) == 67 and all(e.reason.startswith("no trial folder") for e in unlisted)


def test_real_tasks_from_results(runs):
    sc = scan([runs], [DATA / "terminal-bench-1"])
    notes: list[str] = []
    tasks = {t.task_id: t for t in read_tasks(sc, [DATA / "terminal-bench-1"], notes)}
    assert len(tasks) == 80
    assert [t.id for t in tasks["hello-world"].tests] == ["test_hello_file_content", "test_hello_file_exists"]
    assert tasks["hello-world"].instruction.startswith("Create a file called hello.txt")
    assert all(t.provenance["verifier_source"] == "absent" for t in tasks.values())
    # get-bitcoin-nodes: skipped tests were reported as '[1] ../tests/test_outputs.py:48: ...' in 17 trials
    assert [t.id for t in tasks["get-bitcoin-nodes"].tests] == [
        "test_block_endpoint", "test_error_handling", "test_service_process_running", "test_service_responding",
        "test_transaction_endpoint"]
    assert any("get-bitcoin-nodes" in n and "not test names" in n and "../tests/test_outputs.py:48" in n for n in notes)
    # swe-bench-astropy-1: tests that agents added to the repository's test file are reported by the
    # verifier in a few trials; the union keeps them, and the notes list them with their trial counts
    assert "test_nested_compound_model_separability" in {t.id for t in tasks["swe-bench-astropy-1"].tests}
    assert any("swe-bench-astropy-1" in n and "possibly written by agents" in n
               and "'test_nested_compound_model_separability' (7 trials)" in n for n in notes)
    assert json.loads(json.dumps(tasks["hello-world"].metadata))["runs"][0].startswith("2025")


# --- a task's verifier view does not depend on which runs are loaded ----------------------------

_UNION_INSTRUCTION = ("Write the greeting to /app/greeting.txt.\n\n"
                      "Record the checksum of every input file in /app/checksums.txt.\n\n"
                      "The permissions of /app/secret.key must stay unchanged.")


def _tb1_run(runs_dir: Path, run: str, reported: list[list[str]]) -> None:
    """One run folder; trial k reports the parser_results keys reported[k] (in that order)."""
    n = len(reported)
    for k, keys in enumerate(reported, 1):
        trial = runs_dir / run / "greet" / f"greet.{k}-of-{n}"
        trial.mkdir(parents=True)
        (trial / "results.json").write_text(json.dumps({
            "task_id": "greet", "trial_name": trial.name, "instruction": _UNION_INSTRUCTION, "is_resolved": False,
            "parser_results": dict.fromkeys(keys, "passed")}), encoding="utf-8")


def test_tb1_checklist_is_the_same_whichever_runs_are_loaded(tmp_path):
    """Two sets of runs reporting the same test names in other orders and frequencies (one with a
    mis-parsed key) give one verifier view and byte-identical checklists. The earlier majority rule
    in first-reported order gave set B only the majority names, in another order."""
    from gcpc.synthesis.generate import SynthesisSettings
    from gcpc.synthesis.stage import synthesize_all

    names = ["test_greeting_written", "test_checksums_recorded", "test_secret_permissions"]
    set_a, set_b = tmp_path / "a" / "runs", tmp_path / "b" / "runs"
    _tb1_run(set_a, "20250101_agent-a_model", [names, names, names])
    _tb1_run(set_b, "20250102_agent-b_model", [list(reversed(names)), [names[1]], [names[1]]])
    _tb1_run(set_b, "20250103_agent-c_model", [[names[1], "test_greeting_written - AssertionError: no file",
                                                names[2]], [names[1]], ["../tests/test_outputs.py"]])
    outs = []
    for label, runs in (("a", set_a), ("b", set_b)):
        (task,) = read_tasks(scan([runs], [runs.parent]), [runs.parent], [])
        assert [t.id for t in task.tests] == sorted(names)
        out = tmp_path / f"synth-{label}"
        (cl,) = synthesize_all([task], {"provider": "heuristic", "model": "gcpc-heuristic-v1"},
                               SynthesisSettings(prompts_dir=REPO / "prompts"), out, progress=False)
        assert cl.status == "frozen" and any(i.test_refs for i in cl.items)  # the test ids reach the checklist
        outs.append((out / "checklists.jsonl").read_bytes())
    assert outs[0] == outs[1]
