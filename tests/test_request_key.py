"""The request key and the stored record encode a log's events once for all the requests that share
them (TICK's questions over one log), with the same bytes as encoding each request whole."""

import json

from gcpc.io import canonical_json, canonical_json_parts, canonical_json_shared, content_hash, jsonable_shared
from gcpc.llm.base import CallRecord, LLMRequest, Message
from gcpc.llm.store import _externalize, _split
from gcpc.llm.secrets import redact

EVENTS = [{"index": i, "kind": "tool_output", "tool": "Bash", "is_error": i % 2 == 0, "text": f"line {i} é \u2028 " * 40,
           "authored": [0], "score": 0.1 * i} for i in range(30)]


def _request(question: str, events: list) -> LLMRequest:
    return LLMRequest(purpose="judgment:tick", provider="heuristic", model="m",
                      messages=[Message(role="system", content="s"), Message(role="user", content="log", cache_prefix=True),
                                Message(role="user", content=question)],
                      output_schema="TickAnswer", json_schema={"type": "object", "x": [1, 2.5, None]},
                      sampling={"temperature": 0.0}, template_hash="t", inputs={"question": question, "events": events})


def _old_key(r: LLMRequest) -> str:
    # `repeat` (a repeated judging pass) counts only when set: unset, the key is the one it was before the field
    return content_hash(r.model_dump(mode="json", exclude={"purpose"} | ({"repeat"} if r.repeat is None else set())))


def test_parts_equal_whole():
    obj = {"b": [1, {"z": 1, "a": "é"}], "a": None, "ü": 1.5e-7, "": True}
    assert canonical_json_parts({k: canonical_json(v) for k, v in obj.items()}) == canonical_json(obj)
    assert canonical_json_parts({}) == canonical_json({}) == "{}"


def test_shared_encoding_is_the_plain_one_and_held_per_object():
    events = [dict(e) for e in EVENTS]
    assert canonical_json_shared(events) == canonical_json(events)
    assert jsonable_shared(events) is jsonable_shared(events)  # one converted object for every request holding it
    other = [dict(e) for e in EVENTS[:3]]
    assert canonical_json_shared(other) == canonical_json(other) != canonical_json_shared(events)


def test_keys_equal_the_whole_request_hash():
    events = [dict(e) for e in EVENTS]
    requests = [_request(f"question {q}?", events) for q in range(9)]
    keys = [r.key for r in requests]
    assert keys == [_old_key(r) for r in requests]
    assert len(set(keys)) == 9
    alone = _request("question 0?", [dict(e) for e in EVENTS])  # the same content, another object
    assert alone.key == keys[0]
    changed = [dict(e) for e in EVENTS]
    changed[5]["text"] += "x"
    assert _request("question 0?", changed).key != keys[0]
    without = LLMRequest(**{**alone.model_dump(), "inputs": {"question": "q"}})
    assert without.key == _old_key(without)
    again = alone.model_copy(update={"repeat": 2})
    assert again.key == _old_key(again) != alone.key


def test_stored_lines_equal_the_whole_record_encoding():
    events = [dict(e) for e in EVENTS]
    for q in range(3):
        request = _request(f"question {q}?", events)
        record = CallRecord(key=request.key, attempt=1, purpose=request.purpose, provider="heuristic", model="m",
                            request=request.json_dump(), response_text="{}", parsed={}, ok=True)
        data = record.model_dump(mode="json")
        data.pop("wire")  # empty (an offline provider sends nothing): not stored, so its lines keep their bytes
        blobs: dict[str, str] = {}
        data["request"] = _externalize(data["request"], blobs)
        assert _split(record) == (redact(canonical_json(data)) + "\n", blobs)
        # an unset `repeat` is left out of the record, as of the key: records stay as they were
        assert record.request == json.loads(json.dumps(request.model_dump(mode="json", exclude={"repeat"})))


def _tick_answer_key(cfg: dict) -> str:
    """The request key of one TICK answer request built as the arm builds it, under an llm config."""
    from gcpc.llm.schemas import fit_schema_limits, tick_answer_schema
    from gcpc.llm.settings import sampling_params

    schema = fit_schema_limits(tick_answer_schema(), cfg.get("schema_limits"))  # as ArmSpec.schema fits it
    return LLMRequest(purpose="judgment:tick", provider=cfg["provider"], model=cfg["model"],
                      messages=[Message(role="user", content="Q?")], output_schema="TickAnswer", json_schema=schema,
                      sampling=sampling_params(cfg, schema), template_hash="t").key


def test_decoder_settings_change_the_request_key():
    """Issue 30: everything that shapes what a server may return is part of the request identity, so a cached
    answer made under one constraint is never replayed under another."""
    base = {"provider": "openai", "model": "m", "temperature": 0.0, "max_tokens": 2048,
            "structured_output": "json_object", "max_tokens_from_schema": True}
    keys = {
        "base": _tick_answer_key(base),
        "no length limits": _tick_answer_key(base | {"schema_length_limits": False}),
        "json_schema": _tick_answer_key(base | {"structured_output": "json_schema"}),
        "json_schema, not strict": _tick_answer_key(base | {"structured_output": "json_schema", "json_schema_strict": False}),
        "json_schema, not strict, no limits": _tick_answer_key(
            base | {"structured_output": "json_schema", "json_schema_strict": False, "schema_length_limits": False}),
        "prompt": _tick_answer_key(base | {"structured_output": "prompt"}),
        "max_tokens 64": _tick_answer_key(base | {"max_tokens": 64}),
        "no schema-sized cap": _tick_answer_key(base | {"max_tokens_from_schema": False}),
        "schema not in the prompt": _tick_answer_key(base | {"schema_in_prompt": False}),
        "json_schema, not in the prompt": _tick_answer_key(base | {"structured_output": "json_schema", "schema_in_prompt": False}),
        "smaller string limit": _tick_answer_key(base | {"schema_limits": {"max_string_length": 200}}),
    }
    assert len(set(keys.values())) == len(keys), keys
    # settings that do not change the wire leave the key alone: defaults spelled out, and length limits in
    # strict json_schema mode (moved into descriptions there whatever the setting) or in prompt mode
    assert _tick_answer_key(base | {"schema_length_limits": True}) == keys["base"]
    strict = base | {"structured_output": "json_schema"}
    assert _tick_answer_key(strict | {"schema_length_limits": False}) == keys["json_schema"]
    assert _tick_answer_key(base | {"structured_output": "prompt", "schema_length_limits": False}) == keys["prompt"]
    assert _tick_answer_key(strict | {"json_schema_strict": True}) == keys["json_schema"]
    # prompt mode always shows the schema: schema_in_prompt does not apply there
    assert _tick_answer_key(base | {"structured_output": "prompt", "schema_in_prompt": False}) == keys["prompt"]
    assert _tick_answer_key(base | {"schema_in_prompt": True}) == keys["base"]


def test_schema_in_prompt_changes_the_prompt_only_where_the_decoder_enforces_it():
    """The judge prompt shows the reply schema unless the config says its decoder enforces it (issue 30, item 6);
    the paper's configs leave it unset, so their prompts (and keys) are unchanged."""
    from pathlib import Path

    import yaml

    from gcpc.judging.spec import ArmSpec
    from gcpc.judging.tick_arm import JUDGE, build_question_requests
    from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
    from gcpc.llm.settings import SCHEMA_NOT_SHOWN

    root = Path(__file__).resolve().parents[1]
    arm = ArmSpec.from_params("tick", {"kind": "tick", "template": str(root / "prompts/judging/tick")}, {"max_event_chars": 4000})
    traj = Trajectory(trajectory_id="b/j/t", benchmark="b", task_id="t", harness="h", model="m", condition="c", source="j",
                      trial="t", outcome=Outcome(status="PASS"), source_path="x",
                      events=[Event(index=0, kind=EventKind.TOOL_CALL, text="Bash: make", tool="Bash", source=SourceRef(path="log", line=1))])

    def prompt(cfg: dict) -> str:
        (request,) = build_question_requests(traj, "Build it.", ["Was it built?"], arm=arm, llm_cfg=cfg,
                                             template=arm.judge_template(arm.template_file(JUDGE)))
        return "\n".join(m.content for m in request.messages)

    llama = yaml.safe_load((root / "conf/llm/llama-cpp-python.yaml").read_text())
    assert llama["schema_in_prompt"] is False
    assert SCHEMA_NOT_SHOWN in prompt(llama) and '"additionalProperties"' not in prompt(llama)
    assert '"additionalProperties"' in prompt(llama | {"schema_in_prompt": True}) and SCHEMA_NOT_SHOWN not in prompt(llama | {"schema_in_prompt": True})
    assert '"additionalProperties"' in prompt(llama | {"structured_output": "prompt"})  # the prompt is the only place it reaches the model
    for name in ["heuristic", "gpt-5-4-mini", *sorted(p.stem for p in (root / "conf/llm").glob("claude-*.yaml"))]:
        cfg = yaml.safe_load((root / "conf/llm" / f"{name}.yaml").read_text())
        assert "schema_in_prompt" not in cfg and '"additionalProperties"' in prompt(cfg), name
