"""Judging arms: registry and configs, equal information, TICK wording, replay with zero calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Task, Trajectory, VerifierTest
from gcpc.corpus.render import render_log
from gcpc.judging.spec import ArmSpec
from gcpc.judging.stage import ARM_KINDS, arm_spec, judge_arm
from gcpc.judging.tick_arm import check_distinct_questions
from gcpc.llm import LLMClient, make_client
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.llm.schemas import TickChecklist
from gcpc.llm.store import CallStore
from gcpc.synthesis.models import Checklist, ChecklistItem, Provenance

ROOT = Path(__file__).resolve().parents[1]
CONF_ARMS = ROOT / "conf" / "arm"
HEURISTIC = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "max_tokens": 4096, "seed": 0,
             "max_attempts": 3}
MAX_CHARS = 4000

# Metadata the judge must never see: every value is unique, so finding it in a request means a leak.
SENTINELS = {
    "harness": "harness-SENTINEL-4f1c",
    "model": "model-SENTINEL-8a2d",
    "condition": "condition-SENTINEL-1e9b",
    "source": "job-SENTINEL-77c0",
    "trial": "trial-SENTINEL-3d5e",
    "outcome_reason": "outcome-SENTINEL-c2aa",
    "test_result_name": "test_result_SENTINEL_b6f1",
    "log_path": "logs-SENTINEL-90ab/agent.log",
    "trajectory_path": "trajectory-SENTINEL-5e7f",
}


def single_arm_configs() -> dict[str, dict]:
    """Every arm defined in conf/arm (files that compose others have a defaults list instead)."""
    arms = {}
    for path in sorted(CONF_ARMS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if "defaults" not in data:
            assert list(data) == [path.stem], f"{path}: must define exactly the arm '{path.stem}'"
            arms[path.stem] = data[path.stem] | {"template": str(ROOT / data[path.stem]["template"])}
    return arms


def params_with(arms: dict[str, dict], llm: dict | None = None) -> dict:
    return {"arm": arms, "judge": llm or HEURISTIC, "judging": {"max_event_chars": MAX_CHARS}}


def ev(i: int, kind: EventKind, text: str, is_error: bool = False, tool: str | None = None) -> Event:
    return Event(index=i, kind=kind, text=text, tool=tool, is_error=is_error, source=SourceRef(path=SENTINELS["log_path"], line=i + 1))


TASK = Task(
    benchmark="bench", task_id="totals",
    instruction=("Read the numbers in `/root/input/numbers.csv`.\n\n"
                 "1. Save their sum to `/root/out/total.txt`.\n"
                 "2. Print the `total_count` of numbers read.\n"
                 "The sum must be exact."),
    tests=[VerifierTest(id="test_outputs.py::test_total_file", file="test_outputs.py", name="test_total_file",
                        source="def test_total_file():\n    assert open('/root/out/total.txt').read().strip() == '42'")],
    source_path="tasks/totals",
)


def trajectory(events: list[Event], suffix: str = "") -> Trajectory:
    return Trajectory(
        trajectory_id=f"bench/{SENTINELS['source']}/{SENTINELS['trial']}{suffix}", benchmark="bench", task_id="totals",
        harness=SENTINELS["harness"], model=SENTINELS["model"], condition=SENTINELS["condition"], source=SENTINELS["source"],
        trial=SENTINELS["trial"], outcome=Outcome(status="FAIL", reward=0.0, reason=SENTINELS["outcome_reason"]),
        test_results={f"test_outputs.py::{SENTINELS['test_result_name']}": "failed", "test_outputs.py::test_total_file": "passed"},
        events=events, source_path=SENTINELS["trajectory_path"],
    )


EVENTS = [
    ev(0, EventKind.SYSTEM, "[session init] cwd=/root"),
    ev(1, EventKind.AGENT_MESSAGE, "I will add the numbers and write /root/out/total.txt."),
    ev(2, EventKind.TOOL_CALL, "Bash: cat /root/input/numbers.csv", tool="Bash"),
    ev(3, EventKind.TOOL_OUTPUT, "n\n40\n2", tool="Bash"),
    ev(4, EventKind.TOOL_CALL, "Bash: python sum.py && cat /root/out/total.txt", tool="Bash"),
    ev(5, EventKind.TOOL_OUTPUT, "total_count=2\n/root/out/total.txt: 42", tool="Bash"),
    ev(6, EventKind.AGENT_MESSAGE, "Done, all tests pass."),
]

CHECKLIST = Checklist(
    benchmark="bench", task_id="totals", status="frozen", attempts=1, first_attempt_valid=True,
    provenance=Provenance(provider="heuristic", model="gcpc-heuristic-v1", prompt_hash="p", rules_hash="r"),
    items=[
        ChecklistItem(item_id="i01", text="Save their sum to `/root/out/total.txt`", quote="Save their sum to `/root/out/total.txt`.",
                      route="assertion", test_refs=["test_outputs.py::test_total_file"]),
        ChecklistItem(item_id="i02", text="Print the `total_count` of numbers read", quote="Print the `total_count` of numbers read.",
                      route="generated"),
    ],
).with_hash()


class Recorder:
    """The heuristic provider, remembering every request it was asked."""

    name = "heuristic"

    def __init__(self) -> None:
        self.inner = HeuristicProvider()
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        return self.inner.complete(request)


def run_arm(arm: ArmSpec, trajectories: list[Trajectory], store: Path, provider=None, llm: dict | None = None):
    client = (LLMClient(provider, CallStore(store), max_attempts=3, progress=False) if provider is not None
              else make_client(llm or HEURISTIC, store, progress=False))
    try:
        judgments = judge_arm(arm, trajectories, llm_cfg=llm or HEURISTIC, client=client,
                              checklists={("bench", "totals"): CHECKLIST}, tasks={("bench", "totals"): TASK})
    finally:
        client.store.close()
    return judgments, client


# ---------------------------------------------------------------------------------------------------------------


def test_every_configured_arm_has_a_registered_kind_and_its_prompts():
    arms = single_arm_configs()
    assert {"gcpc", "gcpc_gate", "generic", "tick", "tick_adapted", "holistic"} <= set(arms)
    for name, cfg in arms.items():
        spec = arm_spec(params_with(arms), name)
        assert spec.kind in ARM_KINDS, name
        if spec.kind == "tick":
            assert (spec.template / "generate.jinja").is_file() and (spec.template / "judge.jinja").is_file(), name
        elif spec.kind == "floor":
            assert (spec.template / "error_patterns.txt").is_file(), name
        else:
            assert spec.template.is_file(), name
    all_defaults = yaml.safe_load((CONF_ARMS / "all.yaml").read_text())["defaults"]
    assert sorted(all_defaults) == sorted(arms)


def test_generic_arm_has_five_fixed_task_agnostic_questions():
    questions = single_arm_configs()["generic"]["questions"]
    assert len(questions) == len(set(questions)) == 5
    for q in questions:
        assert q.endswith("?")
        assert not (re.findall(r"`|/|_|\d", q)), f"a generic question must not name task specifics: {q}"
    with pytest.raises(ValueError, match="repeats"):
        ArmSpec.from_params("g", {"kind": "generic", "template": "x", "questions": ["a?", "a?"]}, {})


def test_unknown_kind_and_missing_template_folder_are_named():
    with pytest.raises(ValueError, match="unknown kind 'nope'"):
        arm_spec(params_with({"x": {"kind": "nope", "template": "t"}}), "x")
    spec = ArmSpec.from_params("t", {"kind": "tick", "template": str(ROOT / "prompts/judging/gcpc.jinja")}, {})
    with pytest.raises(NotADirectoryError, match="generate.jinja"):
        spec.template_file("generate.jinja")


def _substituted(text: str) -> str:
    return text.replace("response", "agent execution trajectory").replace("Response", "Agent execution trajectory")


@pytest.mark.parametrize("name", ["generate.jinja", "judge.jinja"])
def test_tick_adapted_only_replaces_response_with_agent_execution_trajectory(name):
    published = (ROOT / "prompts/judging/tick" / name).read_text()
    adapted = (ROOT / "prompts/judging/tick_adapted" / name).read_text()
    assert re.search(r"\bresponse\b", published, re.IGNORECASE)
    assert not re.search(r"respons", adapted, re.IGNORECASE)
    assert adapted == _substituted(published)


def test_tick_schemas_avoid_the_substituted_word():
    from gcpc.llm.schemas import TickAnswer

    for schema in (TickChecklist, TickAnswer):
        assert "respons" not in str(schema.model_json_schema()).lower()


def test_no_arm_sees_outcome_verifier_results_or_run_metadata(tmp_path):
    """Every request of every arm: no sentinel metadata, no outcome, no verifier result or test id,
    and the trajectory appears exactly as render_log shows it."""
    arms = single_arm_configs()
    traj = trajectory(EVENTS)
    rendered = render_log(traj.events, max_chars=MAX_CHARS)
    forbidden = [*SENTINELS.values(), "FAIL", "test_total_file", "test_outputs.py", "reward"]
    kinds_seen = set()
    for name in arms:
        spec = arm_spec(params_with(arms), name)
        recorder = Recorder()
        judgments, _ = run_arm(spec, [traj], tmp_path / f"{name}.jsonl", provider=recorder)
        assert [j.status for j in judgments] == ["ok"], (name, judgments[0].error)
        kinds_seen.add(spec.kind)
        if not ARM_KINDS[spec.kind].uses_model:  # floors: no request at all (test_floors.py: outcome-stripped twin)
            assert recorder.requests == [], name
            continue
        assert recorder.requests, name
        for request in recorder.requests:
            dumped = request.model_dump_json()
            for word in forbidden:
                assert word not in dumped, f"arm {name}: request {request.purpose} carries {word!r}"
            text = "\n".join(m.content for m in request.messages)
            if "events" in request.inputs:
                assert rendered.strip() in text, f"arm {name}: the log is not render_log's rendering"
                assert [e["text"] for e in request.inputs["events"]] == [e.text for e in traj.events]
            else:
                assert request.output_schema == "TickChecklist" and set(request.inputs) == {"instruction", "limits"}
        kinds_seen.add(spec.kind)
    assert kinds_seen == set(ARM_KINDS)


def test_arms_label_the_synthetic_run_as_the_rules_say(tmp_path):
    arms = single_arm_configs()
    traj = trajectory(EVENTS)
    got = {name: run_arm(arm_spec(params_with(arms), name), [traj], tmp_path / f"{name}.jsonl")[0][0] for name in arms}
    assert [(lab.item_id, lab.label, lab.route) for lab in got["gcpc"].labels] == [("i01", "Yes", "assertion"), ("i02", "Yes", "generated")]
    assert got["gcpc"].labels[0].evidence[0].event_index == 5
    # looked, outputs, checked (task material displayed only once: Abstain), final state, completed
    assert [lab.label for lab in got["generic"].labels] == ["Yes", "Yes", "Abstain", "Yes", "Yes"]
    assert all(bool(lab.evidence) == (lab.label != "Abstain") and lab.text for lab in got["generic"].labels)
    tick = got["tick"]
    assert 2 <= len(tick.labels) <= 8 and all(lab.route == "judge" for lab in tick.labels)
    assert [lab.label for lab in tick.labels] == [lab.label for lab in got["tick_adapted"].labels]
    assert got["holistic"].score is not None and 0 <= got["holistic"].score <= 10 and got["holistic"].rationale
    assert not got["holistic"].labels


def test_tick_rejects_repeated_or_empty_questions():
    a = "The instruction asks for one thing."
    with pytest.raises(ValueError, match="distinct"):
        check_distinct_questions(TickChecklist(analysis=a, questions=["Is it done?", "Is  it done?"]), None)
    with pytest.raises(ValueError, match="empty"):
        check_distinct_questions(TickChecklist(analysis=a, questions=["Is it done?", " "]), None)
    with pytest.raises(ValueError, match="analysis must not be empty"):
        check_distinct_questions(TickChecklist(analysis="  ", questions=["Is it done?", "Is it checked?"]), None)
    with pytest.raises(Exception, match="at least 2|too_short"):
        TickChecklist(analysis=a, questions=["Only one?"])
    with pytest.raises(Exception, match="analysis"):
        TickChecklist(questions=["Is it done?", "Is it checked?"])  # the analysis is part of the reply


def test_every_arm_regenerates_through_replay_with_zero_calls(tmp_path):
    arms = single_arm_configs()
    replay = yaml.safe_load((ROOT / "conf/llm/replay.yaml").read_text())
    assert replay["provider"] == "replay"
    trajectories = [trajectory(EVENTS), trajectory(EVENTS[:3], "-short")]
    for name in arms:
        spec = arm_spec(params_with(arms), name)
        store = tmp_path / f"{name}.jsonl"
        recorded, first = run_arm(spec, trajectories, store)
        if not ARM_KINDS[spec.kind].uses_model:  # floors call nothing, so replay gives the same scores
            assert first.calls_made == 0
            replayed, client = run_arm(spec, trajectories, store, llm=replay)
            assert client.calls_made == 0 and [j.model_dump() for j in replayed] == [j.model_dump() for j in recorded], name
            continue
        assert first.calls_made > 0
        replayed, client = run_arm(spec, trajectories, store, llm=replay)
        assert client.calls_made == 0, name
        assert [j.model_dump() for j in replayed] == [j.model_dump() for j in recorded], name
        # a request that was never recorded is an error, not a silent new call
        with pytest.raises(Exception, match="no recorded response"):
            run_arm(spec, [trajectory(EVENTS[:5], "-new")], tmp_path / f"{name}-empty.jsonl", llm=replay)


def test_tick_judgments_record_the_generators_analysis(tmp_path):
    """TICK's analysis (written before the questions) is recorded on every judgment of the task; the heuristic
    provider writes one too, labelled as the rules' and the same on every run (issue 35, item 3)."""
    arms = single_arm_configs()
    traj = trajectory(EVENTS)
    for name in ("tick", "tick_adapted"):
        runs = [run_arm(arm_spec(params_with(arms), name), [traj], tmp_path / f"{name}{n}.jsonl")[0][0] for n in (1, 2)]
        assert runs[0].status == "ok"
        assert runs[0].analysis and runs[0].analysis.startswith("Heuristic analysis (rule-based, not an LLM):")
        assert runs[0].analysis == runs[1].analysis
        assert f"{len(runs[0].labels)} of them become questions" in runs[0].analysis
    holistic = run_arm(arm_spec(params_with(arms), "holistic"), [traj], tmp_path / "h.jsonl")[0][0]
    assert holistic.analysis is None
