"""Heuristic judging rules and the evidence gate, on hand-built logs."""

from gcpc.corpus.models import Event, EventKind, SourceRef
from gcpc.judging.evidence import gate_verdicts
from gcpc.llm.heuristic.judge import judge_checklist
from gcpc.llm.schemas import Evidence, ItemVerdict

SRC = SourceRef(path="agent/claude-code.txt", line=1)


def ev(i, kind, text, is_error=False):
    return Event(index=i, kind=kind, text=text, source=SRC, is_error=is_error)


def as_inputs(events):
    return [{"index": e.index, "kind": e.kind.value, "text": e.text, "is_error": e.is_error, "tool": e.tool} for e in events]


ITEM = {"item_id": "i01", "text": "Save the result to `/root/report.json` (expected fields: `total`)"}


def verdict(events, item=ITEM):
    return judge_checklist({"items": [item], "events": as_inputs(events)})["verdicts"][0]


def test_yes_only_from_displayed_state():
    v = verdict([ev(0, EventKind.TOOL_OUTPUT, '$ cat /root/report.json\n{"total": 42}')])
    assert v["label"] == "Yes" and v["evidence"][0]["event_index"] == 0


def test_agent_claims_are_not_evidence():
    claims = [ev(0, EventKind.AGENT_MESSAGE, 'I saved /root/report.json with {"total": 42}. All done!'),
              ev(1, EventKind.TOOL_CALL, "Write /root/report.json total")]
    assert verdict(claims)["label"] == "Abstain"


def test_no_when_the_latest_mention_is_a_failure_and_yes_after_a_fix():
    broken = [ev(0, EventKind.TOOL_OUTPUT, "cat: /root/report.json: No such file or directory", is_error=True)]
    assert verdict(broken)["label"] == "No"
    fixed = broken + [ev(1, EventKind.FILE_CONTENT, '{"total": 42}\n/root/report.json written')]
    assert verdict(fixed)["label"] == "Yes"


def test_item_without_anchors_abstains():
    assert verdict([ev(0, EventKind.TOOL_OUTPUT, "ok")], {"item_id": "i01", "text": "Work carefully and explain choices"})["label"] == "Abstain"


def test_evidence_gate_downgrades_unsupported_verdicts():
    events = [ev(0, EventKind.AGENT_MESSAGE, "total is 42"), ev(1, EventKind.TOOL_OUTPUT, "total = 41")]
    verdicts = [
        ItemVerdict(item_id="a", label="Yes", evidence=[Evidence(event_index=0, quote="total is 42")], reason="agent said so"),
        ItemVerdict(item_id="b", label="No", evidence=[Evidence(event_index=1, quote="total = 40")], reason="misquoted"),
        ItemVerdict(item_id="c", label="Yes", evidence=[Evidence(event_index=1, quote="total  = 41")], reason="shown"),
        ItemVerdict(item_id="d", label="Yes", evidence=[], reason="no evidence"),
        ItemVerdict(item_id="e", label="Yes", evidence=[Evidence(event_index=9, quote="x")], reason="bad index"),
    ]
    routes = {k: "judge" for k in "abcde"}
    gated = gate_verdicts(verdicts, events, routes=routes, test_refs={}, enabled=True)
    assert [g.label for g in gated] == ["Abstain", "Abstain", "Yes", "Abstain", "Abstain"]
    assert gated[0].downgraded and "agent_message" in gated[0].downgrade_reason
    assert gated[1].raw_label == "No" and "quote not found" in gated[1].downgrade_reason
    ungated = gate_verdicts(verdicts, events, routes=routes, test_refs={}, enabled=False)
    assert [g.label for g in ungated] == ["Yes", "No", "Yes", "Yes", "Yes"] and not any(g.downgraded for g in ungated)
