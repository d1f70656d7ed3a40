"""The `instant` benchmark provider (gcpc.llm.instant): schema-valid at the first attempt through
the real client path, deterministic per request, evidence quoted verbatim from displayed events."""

from __future__ import annotations

from gcpc.llm import CallStore, LLMClient, LLMRequest, Message, make_provider
from gcpc.llm.instant import InstantProvider
from gcpc.llm.schemas import (ChecklistJudgment, HolisticJudgment, TickAnswer, checklist_judgment_schema, holistic_schema,
                              tick_answer_schema)

EVENTS = [{"index": 0, "kind": "agent_message", "text": "I will write the report."},
          {"index": 1, "kind": "tool_output", "text": "\n  total_rows,42\nsecond line"},
          {"index": 2, "kind": "file_content", "text": "header\n" + "x" * 500}]


def _req(schema_name: str, json_schema: dict, inputs: dict, salt: str = "") -> LLMRequest:
    return LLMRequest(purpose="judgment:bench", provider="instant", model="instant-v1",
                      messages=[Message(role="user", content=f"log {salt}")], output_schema=schema_name,
                      json_schema=json_schema, template_hash="t", inputs=inputs)


def test_replies_validate_at_the_first_attempt_and_are_deterministic(tmp_path):
    items = [{"item_id": f"i{k}", "text": f"item {k}"} for k in range(12)]
    reqs = [_req("ChecklistJudgment", checklist_judgment_schema([i["item_id"] for i in items]),
                 {"items": items, "events": EVENTS}, salt=str(s)) for s in range(20)]
    client = LLMClient(InstantProvider(), CallStore(tmp_path / "llm_calls.jsonl"), progress=False)
    results = client.run(reqs, ChecklistJudgment)
    assert all(r.ok and r.attempts == 1 for r in results)
    labels = [v["label"] for r in results for v in r.parsed["verdicts"]]
    assert {"Yes", "No", "Abstain"} <= set(labels)
    for r in results:
        assert [v["item_id"] for v in r.parsed["verdicts"]] == [i["item_id"] for i in items]
        for v in r.parsed["verdicts"]:
            assert (v["label"] == "Abstain") == (not v["evidence"])
            for e in v["evidence"]:
                event = EVENTS[e["event_index"]]
                assert event["kind"] in ("tool_output", "file_content") and e["quote"] in event["text"]
    again = LLMClient(InstantProvider(), CallStore(tmp_path / "other.jsonl"), progress=False).run(reqs, ChecklistJudgment)
    assert [r.parsed for r in again] == [r.parsed for r in results]
    client.store.close()


def test_no_displayed_event_means_abstain_and_other_schemas_validate(tmp_path):
    items = [{"item_id": "a", "text": "x"}, {"item_id": "b", "text": "y"}]
    only_agent = [EVENTS[0]]
    client = LLMClient(make_provider({"provider": "instant", "model": "instant-v1"}), CallStore(tmp_path / "c.jsonl"),
                       progress=False)
    r = client.run_one(_req("ChecklistJudgment", checklist_judgment_schema(["a", "b"]), {"items": items, "events": only_agent}),
                       ChecklistJudgment)
    assert r.ok and {v["label"] for v in r.parsed["verdicts"]} == {"Abstain"}
    tick = [client.run_one(_req("TickAnswer", tick_answer_schema(), {"question": "q", "events": EVENTS}, str(s)), TickAnswer)
            for s in range(16)]
    assert all(t.ok for t in tick) and {t.parsed["verdict"] for t in tick} == {"YES", "NO"}
    hol = [client.run_one(_req("HolisticJudgment", holistic_schema(), {"instruction": "i", "events": EVENTS}, str(s)),
                          HolisticJudgment) for s in range(16)]
    assert all(h.ok and 0 <= h.parsed["score"] <= 10 for h in hol) and len({h.parsed["score"] for h in hol}) > 3
    client.store.close()
