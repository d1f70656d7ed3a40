"""Issue 30: on compatible servers the generator's and the category audit's requests carry bounded schemas,
so `max_tokens_from_schema` sizes their replies as it does the judge's; the paper's configs keep the
response models' own schemas (their requests, keys and outputs unchanged). The bounds sit above what the
heuristic provider writes on the demo corpus: its answers to the bounded requests are its answers to the
unbounded ones (it fits an answer to the schema it is given, so a bound below its text would cut it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gcpc.corpus.models import Task
from gcpc.io import read_models
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.llm.schemas import GeneratedChecklist, max_reply_tokens, schema_errors
from gcpc.llm.settings import SCHEMA_NOT_SHOWN, sampling_params
from gcpc.synthesis.audit import AuditSettings, audit_request_schema, build_audit_request
from gcpc.synthesis.audit_schema import CategoryAudit
from gcpc.synthesis.generate import SynthesisSettings, build_request, request_schema
from gcpc.synthesis.scheme import read_scheme

ROOT = Path(__file__).resolve().parents[1]
PAPER = ["heuristic", "gpt-5-4-mini", *sorted(p.stem for p in (ROOT / "conf/llm").glob("claude-*.yaml"))]
HEURISTIC = yaml.safe_load((ROOT / "conf/llm/heuristic.yaml").read_text())
LLAMA = yaml.safe_load((ROOT / "conf/llm/llama-cpp-python.yaml").read_text())
SETTINGS = SynthesisSettings(prompts_dir=ROOT / "prompts")
SCHEME = read_scheme(ROOT / "prompts/audit/schemes/full.md", name="full")


def _cfg(name: str) -> dict:
    return yaml.safe_load((ROOT / "conf/llm" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", PAPER)
def test_paper_configs_keep_the_response_models_schemas(name):
    cfg = _cfg(name)
    assert request_schema(cfg) == GeneratedChecklist.model_json_schema()
    assert audit_request_schema(["i01"], SCHEME, cfg) == CategoryAudit.model_json_schema()
    request = build_request("Write x.", [], llm_cfg=cfg, settings=SETTINGS, template=SETTINGS.template())
    assert request.sampling == sampling_params(cfg)  # no schema-sized max_tokens
    assert json.dumps(GeneratedChecklist.model_json_schema(), sort_keys=True) in request.messages[-1].content + request.messages[0].content


def test_compatible_config_sizes_generator_and_audit_max_tokens_and_does_not_repeat_the_schema():
    schema = request_schema(LLAMA)
    bound = max_reply_tokens(schema)
    assert bound is not None and max_reply_tokens(GeneratedChecklist.model_json_schema()) is None
    request = build_request("Write x.", [], llm_cfg=LLAMA, settings=SETTINGS, template=SETTINGS.template())
    assert request.json_schema == schema and request.sampling["max_tokens"] == min(bound, LLAMA["max_tokens"])
    text = "\n".join(m.content for m in request.messages)
    assert SCHEMA_NOT_SHOWN in text and '"maxItems"' not in text  # the grammar carries it, the prompt does not
    # smaller string limits (the real-server smoke run) give a smaller cap
    small = LLAMA | {"schema_limits": {"max_string_length": 50}, "max_tokens": 100_000}
    assert max_reply_tokens(request_schema(small)) < bound
    audit = audit_request_schema(["i01", "i02"], SCHEME, LLAMA)
    assert max_reply_tokens(audit) is not None
    req = audit["properties"]["requirements"]["items"]["properties"]
    assert req["item_ids"]["items"]["enum"] == ["i01", "i02"] and "none" in req["category"]["enum"]
    assert set(SCHEME.names) <= set(req["category"]["enum"])


def test_bounds_sit_above_the_heuristic_answers_on_the_demo(demo_pipeline):
    """Every demo task: the heuristic's checklist and audit answers under the bounded schemas equal its answers
    under the response models' (nothing was cut to fit), and they validate against the bounded schemas."""
    work, _ = demo_pipeline
    tasks = read_models(work / "data/processed/ingest/tasks.jsonl", Task)
    assert tasks
    bounded_cfg = HEURISTIC | {"max_tokens_from_schema": True}
    provider = HeuristicProvider()
    template = SETTINGS.template()
    audit_settings = AuditSettings.from_params({"prompts_dir": str(ROOT / "prompts"), "audit": {"schemes": {"full": "audit/schemes/full.md"}}})
    (scheme, audit_template), = audit_settings.load()
    for task in tasks:
        plain = build_request(task.instruction, task.tests, llm_cfg=HEURISTIC, settings=SETTINGS, template=template)
        bounded = build_request(task.instruction, task.tests, llm_cfg=bounded_cfg, settings=SETTINGS, template=template)
        answer = json.loads(provider.complete(bounded).text)
        assert answer == json.loads(provider.complete(plain).text), task.task_id
        assert schema_errors(answer, bounded.json_schema) == [], task.task_id
        items = [{"item_id": f"i{n:02d}", "text": it["text"], "quote": it["quote"]} for n, it in enumerate(answer["items"], 1)]
        a_plain = build_audit_request(task.instruction, items, scheme, audit_template, HEURISTIC)
        a_bounded = build_audit_request(task.instruction, items, scheme, audit_template, bounded_cfg)
        audit_answer = json.loads(provider.complete(a_bounded).text)
        assert audit_answer == json.loads(provider.complete(a_plain).text), task.task_id
        assert schema_errors(audit_answer, a_bounded.json_schema) == [], task.task_id
