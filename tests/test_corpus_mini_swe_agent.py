"""mini-swe-agent `.traj.json` trajectories (SWE-bench bash-only leaderboard format) with SWE-bench harness reports.

Fixture tests use tests/fixtures/swe_bench_mini (two invented runs, written by its make_fixture.py); the
shared-data tests read ../shared/data/swe-bench-verified (246 real runs) and skip when it is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gcpc.corpus.ingest import ingest
from gcpc.corpus.mini_swe_agent import SUBMISSION_PREFIX, read_traj, response_parts
from gcpc.corpus.models import EventKind
from gcpc.corpus.tb1_logs import parse_lines
from gcpc.corpus.terminal import Counter, iter_stream

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = "tests/fixtures/swe_bench_mini"
SHARED = ROOT.parent / "shared" / "data" / "swe-bench-verified"
SHARED_RUN = "runs/20251118_mini-v1.15.0_gemini-3-pro-preview"
ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
"""mini-swe-agent's own action regex (v1.x `action_regex`): a command runs only when it matches exactly once."""


def _fixture_cfg(*runs: str) -> dict:
    return {"name": "swe-bench-mini", "format": "swe-bench", "root": FIXTURE, "benchmark": "swe-bench-verified",
            "condition": "without_skills", "tasks_file": "instances.jsonl",
            "trials_dirs": [f"runs/{r}" for r in runs], "reports_dirs": [f"runs/{r}/logs" for r in runs]}


@pytest.fixture(scope="module")
def two_runs():
    return ingest(_fixture_cfg("mini-model-a", "mini-model-b"), ROOT)


def _by_id(result) -> dict:
    return {t.trajectory_id: t for t in result.trajectories}


def test_response_parts_one_block_or_none():
    parts = response_parts(["THOUGHT: look", "", "```bash", "cat a.py", "```", "", "then more"])
    assert [(p.kind, p.first, p.last, p.text) for p in parts] == [
        (EventKind.AGENT_MESSAGE, 0, 0, "THOUGHT: look"), (EventKind.TOOL_CALL, 2, 4, "cat a.py"),
        (EventKind.AGENT_MESSAGE, 6, 6, "then more")]
    two = response_parts(["THOUGHT:", "```bash", "ls", "```", "```bash", "pwd", "```"])
    assert [(p.kind, p.text) for p in two] == [(EventKind.AGENT_MESSAGE, "THOUGHT:\n```bash\nls\n```\n```bash\npwd\n```")]


def test_fixture_runs_outcomes_and_per_test_results(two_runs):
    ts = _by_id(two_runs)
    assert len(ts) == 6 and not two_runs.exclusions
    a, b = "swe-bench-verified/mini-model-a/", "swe-bench-verified/mini-model-b/"
    assert ts[a + "demo__calc-101"].outcome.status == "PASS" and ts[b + "demo__calc-101"].outcome.status == "FAIL"
    assert ts[a + "demo__strutil-7"].outcome.status == "FAIL" and ts[b + "demo__strutil-7"].outcome.status == "PASS"
    assert ts[a + "demo__fmt-3"].outcome.status == "other" and "did not apply" in ts[a + "demo__fmt-3"].outcome.reason
    assert ts[b + "demo__fmt-3"].outcome.reason == "no evaluation report for this instance"
    assert ts[b + "demo__calc-101"].test_results == {"tests/test_calc.py::TestAdd::test_add[2-3-5]": "failed",
                                                     "tests/test_calc.py::test_add_positive": "passed",
                                                     "tests/test_calc.py::test_sub": "passed"}
    t = ts[a + "demo__calc-101"]
    assert (t.harness, t.model, t.log_format, t.source) == ("mini-swe-agent", "demo/mini-model-a", "mini-swe-agent-traj", "mini-model-a")


def test_fixture_tasks_without_test_patch_have_test_ids_only(two_runs):
    tasks = {t.task_id: t for t in two_runs.tasks}
    assert tasks["demo__fmt-3"].provenance["verifier_source"] == "absent" and not tasks["demo__fmt-3"].verifier_files
    assert [v.id for v in tasks["demo__fmt-3"].tests] == ["tests/test_fmt.py::test_pad_width", "tests/test_fmt.py::test_pad_default"]
    assert "test_patch.diff" in tasks["demo__calc-101"].verifier_files  # a row with test_patch keeps it as the verifier source


def test_fixture_events(two_runs):
    good = _by_id(two_runs)["swe-bench-verified/mini-model-a/demo__calc-101"]
    bad = _by_id(two_runs)["swe-bench-verified/mini-model-b/demo__calc-101"]
    kinds = [(e.kind.value, e.is_error) for e in good.events]
    assert kinds[:2] == [("system", False), ("system", False)]  # system prompt, task + instructions: never evidence
    assert good.events[0].text.startswith("[system prompt]\n") and good.events[1].text.startswith("[task prompt]\n<pr_description>")
    calls = [e.text for e in good.events if e.kind == EventKind.TOOL_CALL]
    assert calls == ["cat calc.py", "ls -R", "python -m pytest -q tests", "sed -i 's/broken/fixed/' calc.py", "python repro.py",
                     "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"]
    # two bash blocks: nothing ran, one agent message, and the format error is a harness message
    two = next(i for i, e in enumerate(good.events) if "Two things at once" in e.text)
    assert good.events[two].kind == EventKind.AGENT_MESSAGE and good.events[two + 1].kind == EventKind.SYSTEM
    assert good.events[two + 1].text.startswith("[harness message]\nPlease always provide EXACTLY ONE action")
    outputs = [e for e in good.events if e.kind == EventKind.TOOL_OUTPUT]
    assert [e.is_error for e in outputs] == [False, False, True, False, False, False]  # return code 1 of the test run
    elided = outputs[1].text
    assert "<elided_chars>\n12345 characters elided\n</elided_chars>" in elided and "<output_head>" in elided
    assert any("1 command output(s) reached the agent elided" in n for n in good.notes)
    assert outputs[-1].text == SUBMISSION_PREFIX + good_submission(good)
    assert good.events[-1].kind == EventKind.SYSTEM and good.events[-1].text == "[agent exit] exit_status=Submitted"
    timeout = [e for e in bad.events if e.kind == EventKind.TOOL_OUTPUT and "timed out" in e.text]
    assert len(timeout) == 1 and timeout[0].is_error
    # every event points into the file: the JSON of its message
    raw = (ROOT / FIXTURE / good.source_path).read_bytes()
    call = next(e for e in good.events if e.kind == EventKind.TOOL_CALL)
    assert "cat calc.py" in raw[call.source.byte_start:call.source.byte_end].decode()


def good_submission(t) -> str:
    doc = json.loads((ROOT / FIXTURE / t.source_path).read_text(encoding="utf-8"))
    return doc["info"]["submission"]


def test_fixture_wrong_trajectory_format_is_excluded(tmp_path):
    import shutil

    shutil.copytree(ROOT / FIXTURE, tmp_path / "c")
    path = tmp_path / "c/runs/mini-model-a/trajs/demo__calc-101/demo__calc-101.traj.json"
    doc = json.loads(path.read_text())
    doc["trajectory_format"] = "mini-swe-agent-2"
    path.write_text(json.dumps(doc))
    result = ingest({**_fixture_cfg("mini-model-a"), "root": str(tmp_path / "c")}, ROOT)
    (ex,) = result.exclusions
    assert ex.reason.startswith("unreadable agent log:") and "trajectory_format is 'mini-swe-agent-2'" in ex.reason
    assert "demo__calc-101.traj.json" in ex.reason


def test_inspect_shows_a_traj_json_as_the_judge_sees_it():
    from gcpc.corpus.inspect import inspect_path

    text = inspect_path(ROOT / FIXTURE / "runs/mini-model-b/trajs/demo__calc-101/demo__calc-101.traj.json")
    assert '"format": "mini-swe-agent-traj"' in text and '"exit_status": "Submitted"' in text
    assert "[submission: output of the final command" in text and "timed out and has been killed" in text


def test_terminal_bench1_sessions_print_the_same_turns(two_runs):
    """The same turns printed through a terminal, as Terminal-Bench 1 logs show them, give the same events: one parser."""
    t = _by_id(two_runs)["swe-bench-verified/mini-model-b/demo__calc-101"]
    doc = json.loads((ROOT / FIXTURE / t.source_path).read_text(encoding="utf-8"))
    lines = ["System:", doc["messages"][0]["content"], "", "User:", "the task", ""]
    for n, m in enumerate(doc["messages"][2:-1]):
        lines += [f"mini-swe-agent (step {n // 2 + 1}, $0.01):" if m["role"] == "assistant" else "User:", m["content"], ""]
    lines += ["User:", ""]  # the empty message after the submit command
    text = ("\n".join(lines) + "\n").encode()
    session = parse_lines(lambda: iter_stream(text, Counter()), lambda: 0, "agent.log", [], held=False)
    from_log = [(e.kind, e.text, e.is_error) for e in session.events if e.kind != EventKind.SYSTEM or "harness" in e.text]
    from_traj = [(e.kind, e.text, e.is_error) for e in t.events[2:]
                 if not e.text.startswith((SUBMISSION_PREFIX, "[agent exit]"))]
    assert from_log == from_traj


# --- the bigger run: two runs of the same instances give same-task PASS/FAIL pairs (RQ5) -----------------


def test_two_runs_give_rq5_same_task_pairs(two_runs, tmp_path):
    from gcpc.analysis.common import resolve_analysis
    from gcpc.analysis.rq5 import pair_diagnosis
    from gcpc.judging.stage import arm_spec, judge_arm
    from gcpc.llm import CallStore, LLMClient, make_provider
    from gcpc.params import load_params
    from gcpc.scoring.finalize import finalize
    from gcpc.synthesis.generate import SynthesisSettings
    from gcpc.synthesis.stage import synthesize_all

    params = load_params(ROOT / "params.yaml")
    llm = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "max_tokens": 4096, "seed": 0, "temperature": 0.0}
    settings = SynthesisSettings.from_params({**params.get("synthesis", {}), "prompts_dir": str(ROOT / "prompts")})
    checklists = synthesize_all(two_runs.tasks, llm, settings, tmp_path / "synth", progress=False)
    by_task = {(c.benchmark, c.task_id): c for c in checklists}
    tasks = {(t.benchmark, t.task_id): t for t in two_runs.tasks}
    client = LLMClient(make_provider(llm), CallStore(tmp_path / "judge_calls.jsonl"), progress=False)
    arm = params["analysis"]["primary_arm"]
    judgments = judge_arm(arm_spec(params, arm), two_runs.trajectories, llm_cfg=llm,
                          client=client, checklists=by_task, tasks=tasks)
    metrics, _, _ = finalize(two_runs.trajectories, judgments, params.get("scoring", {}))
    # zero-evidence logs scored 0 (conf/analysis/zero_evidence_scored.yaml): the heuristic judge finds nothing to
    # decide in some of these tiny failed logs, and their pairs should still count
    cfg = {**resolve_analysis(params.get("analysis"), params.get("arm")), "scores": ["gcpc_plain"], "zero_evidence_score": 0.0}
    judged = metrics[metrics["outcome"].isin(["PASS", "FAIL"])].groupby("task_id")["outcome"].nunique()
    with_both = set(judged[judged == 2].index)
    assert with_both and with_both <= {"demo__calc-101", "demo__strutil-7"}
    e = pair_diagnosis(metrics, cfg)["benchmarks"]["swe-bench-verified"]["arms"][arm]["gcpc_plain"]
    assert e["n"] == e["n_tasks"] == len(with_both) and e["n_tasks_undecidable"] == 0
    assert e["higher"] + e["lower"] + e["tied"] == e["n"]
    paired = metrics[metrics["task_id"].isin(with_both) & metrics["outcome"].isin(["PASS", "FAIL"])]
    assert e["n_items_in_pairs"] == paired["n_items"].sum() > 0
    assert e["abstain_share"] == paired["n_abstain"].sum() / paired["n_items"].sum()


# --- the shared SWE-bench Verified set ----------------------------------------------------------------------

shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared SWE-bench Verified data not found at {SHARED}")


@pytest.fixture(scope="module")
def shared_result():
    import yaml

    cfg = yaml.safe_load((ROOT / "conf/data/swe-bench-verified.yaml").read_text(encoding="utf-8"))
    return ingest(cfg, ROOT)


@shared
def test_shared_set_counts(shared_result):
    r = shared_result
    assert (len(r.tasks), len(r.trajectories), len(r.exclusions)) == (246, 246, 0)
    outcomes = [t.outcome.status for t in r.trajectories]
    assert (outcomes.count("PASS"), outcomes.count("FAIL")) == (179, 67)
    assert all(t.provenance["verifier_source"] == "absent" for t in r.tasks)


@shared
def test_shared_outcomes_and_per_test_results_are_the_reports(shared_result):
    for t in shared_result.trajectories:
        report = json.loads((SHARED / SHARED_RUN / "logs" / t.task_id / "report.json").read_text(encoding="utf-8"))
        assert t.outcome.status == ("PASS" if report["resolved"] else "FAIL")
        expected = {tid: "passed" for g in report["tests_status"].values() for tid in g["success"]}
        expected |= {tid: "failed" for g in report["tests_status"].values() for tid in g["failure"]}
        assert t.test_results == expected
        assert set(expected) <= {v.id for v in next(k for k in shared_result.tasks if k.task_id == t.task_id).tests}


@shared
def test_shared_trajectories_event_by_event(shared_result):
    """Every trajectory of the shared set (astropy__astropy-12907, django__django-12125, sympy__sympy-22456, ...)
    walked message by message with mini-swe-agent's own action regex and compared with the parsed events."""
    for t in shared_result.trajectories:
        _compare_events(t, SHARED / SHARED_RUN / "trajs" / t.task_id / f"{t.task_id}.traj.json")


def _compare_events(t, path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    events = iter(t.events)
    msgs = doc["messages"]
    assert next(events).text == "[system prompt]\n" + msgs[0]["content"]
    assert next(events).text == "[task prompt]\n" + msgs[1]["content"]
    for i, m in enumerate(msgs[2:], 2):
        if m["role"] == "assistant":
            actions = ACTION.findall(m["content"])
            ev = next(events)
            if len(actions) != 1:
                assert (ev.kind, ev.text) == (EventKind.AGENT_MESSAGE, m["content"].strip())
                assert msgs[i + 1]["content"].startswith("Please always provide EXACTLY ONE action")
                continue
            match = ACTION.search(m["content"])
            before, after = m["content"][:match.start()].strip(), m["content"][match.end():].strip()
            if before:
                assert (ev.kind, ev.text) == (EventKind.AGENT_MESSAGE, before)
                ev = next(events)
            assert (ev.kind, ev.text) == (EventKind.TOOL_CALL, actions[0])
            if after:
                assert next(events).text == after
        elif i == len(msgs) - 1:
            ev = next(events)
            assert (ev.kind, ev.text) == (EventKind.TOOL_OUTPUT, SUBMISSION_PREFIX + doc["info"]["submission"])
        else:
            ev = next(events)
            rc = re.match(r"<returncode>(-?\d+)</returncode>", m["content"])
            if rc or m["content"].startswith("The last command <command>"):
                assert (ev.kind, ev.text) == (EventKind.TOOL_OUTPUT, m["content"])
                assert ev.is_error == (rc is None or rc.group(1) != "0")
            else:
                assert (ev.kind, ev.text) == (EventKind.SYSTEM, "[harness message]\n" + m["content"])
        assert ev.source.path == t.source_path and ev.source.byte_start is not None
    assert next(events).text == "[agent exit] exit_status=Submitted"
    assert next(events, None) is None


@shared
def test_shared_read_traj_counts_turns():
    path = SHARED / SHARED_RUN / "trajs" / "astropy__astropy-12907" / "astropy__astropy-12907.traj.json"
    if not path.is_file():
        pytest.skip(f"{path} not in this copy of the shared data")
    doc = json.loads(path.read_text(encoding="utf-8"))
    res = read_traj(doc, "x")
    assert res.steps == sum(m["role"] == "assistant" for m in doc["messages"]) == doc["info"]["model_stats"]["api_calls"]


@shared
def test_bench_script_smoke_size(tmp_path):
    """bench/bench_swe_bench_ingest.py at smoke size (5 instances, one repeat): it runs and counts what it read."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import bench_swe_bench_ingest as bench

    out = tmp_path / "swe.json"
    assert bench.main(["--limit", "5", "--repeat", "1", "--out", str(out)]) == 0
    res = json.loads(out.read_text(encoding="utf-8"))
    assert (res["tasks"], res["trajectories"], res["exclusions"], res["limit"]) == (5, 5, 0, 5)
    assert res["pass"] + res["fail"] == 5 and res["events"] > 5 * 10 and res["trajectory_mb"] > 0
