"""A shipped server config never sends a schema its decoder cannot compile (issue 30).

llama-cpp-python's server turned TICK's `reasoning` (`maxLength: 1500`) into 1,500 nested grammar rules and
died parsing them; 1,000 compiled. Each local-server config states what its decoder takes (`schema_limits`)
and every request schema of every arm is fitted to it before it is shown, sent, validated or keyed. The
grammar test compiles each arm's schemas with llama.cpp's own JSON-schema-to-grammar converter (pure Python,
no model, no native library loaded); it runs when llama-cpp-python is installed and skips otherwise.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gcpc.judging.spec import ArmSpec
from gcpc.llm.schemas import (
    ChecklistJudgment,
    HolisticJudgment,
    TickAnswer,
    TickChecklist,
    checklist_judgment_schema,
    fit_schema_limits,
    holistic_schema,
    tick_answer_schema,
    tick_checklist_schema,
)
from gcpc.llm.settings import LLMSettings

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(ROOT.glob("conf/llm/*.yaml"))
LIMITED = [p for p in CONFIGS if (yaml.safe_load(p.read_text()) or {}).get("schema_limits")]


def _arm_schemas(llm_cfg: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Every schema a judge request carries, per arm kind, as the arms build them (ArmSpec.schema)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    out: dict[str, dict[str, Any]] = {}
    for name, cfg in params["arm"].items():
        arm = ArmSpec.from_params(name, cfg, params["judging"])
        if arm.kind in ("checklist", "generic"):
            out[f"{name}/verdicts"] = arm.schema(checklist_judgment_schema([f"i{n:02d}" for n in range(1, 13)]),
                                                 ChecklistJudgment, llm_cfg)
        elif arm.kind == "tick":
            out[f"{name}/questions"] = arm.schema(tick_checklist_schema(min_questions=2, max_questions=8), TickChecklist, llm_cfg)
            out[f"{name}/answer"] = arm.schema(tick_answer_schema(), TickAnswer, llm_cfg)
        elif arm.kind == "holistic":
            out[f"{name}/score"] = arm.schema(holistic_schema(), HolisticJudgment, llm_cfg)
    assert {k.split("/")[1] for k in out} >= {"verdicts", "questions", "answer", "score"}
    return out | _generator_schemas(llm_cfg)


def _generator_schemas(llm_cfg: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The synthesis and category-audit request schemas under a generator config (bounded where it sizes
    max_tokens from the schema)."""
    from gcpc.synthesis.audit import audit_request_schema
    from gcpc.synthesis.generate import request_schema
    from gcpc.synthesis.scheme import read_scheme

    scheme = read_scheme(ROOT / "prompts/audit/schemes/full.md", name="full")
    return {"synthesis/checklist": request_schema(llm_cfg or {}),
            "audit/requirements": audit_request_schema([f"i{n:02d}" for n in range(1, 13)], scheme, llm_cfg or {})}


def _max_lengths(node: Any) -> list[int]:
    if isinstance(node, dict):
        own = [node["maxLength"]] if isinstance(node.get("maxLength"), int) else []
        return own + [x for v in node.values() for x in _max_lengths(v)]
    if isinstance(node, list):
        return [x for v in node for x in _max_lengths(v)]
    return []


def test_fit_lowers_only_what_exceeds_the_limit():
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1500, "minLength": 1200},
                                               "b": {"type": "string", "maxLength": 300},
                                               "c": {"type": "array", "items": {"type": "string", "maxLength": 5000}}}}
    fitted = fit_schema_limits(schema, {"max_string_length": 1000})
    assert fitted["properties"]["a"] == {"type": "string", "maxLength": 1000, "minLength": 1000}
    assert fitted["properties"]["b"]["maxLength"] == 300 and fitted["properties"]["c"]["items"]["maxLength"] == 1000
    assert schema["properties"]["a"]["maxLength"] == 1500  # a copy: the arm's own schema is untouched
    assert fit_schema_limits(schema, None) is schema and fit_schema_limits(schema, {"max_string_length": None}) is schema


def test_local_server_configs_state_their_limits_and_schema_sized_caps():
    assert {p.stem for p in LIMITED} >= {"llama-cpp-python", "llama-server", "ollama"}
    for p in CONFIGS:
        cfg = yaml.safe_load(p.read_text())
        settings = LLMSettings.from_cfg(cfg, where=str(p))
        if cfg.get("provider") == "openai" and cfg.get("base_url") and "api.openai.com" not in cfg["base_url"]:
            # compatible servers: a reply is capped at the longest its schema admits (issue 30, item 5)
            assert settings.max_tokens_from_schema, f"{p.name}: set max_tokens_from_schema: true"


@pytest.mark.parametrize("config", LIMITED, ids=[p.stem for p in LIMITED])
def test_every_arm_schema_fits_the_servers_limits(config):
    llm_cfg = yaml.safe_load(config.read_text())
    cap = llm_cfg["schema_limits"]["max_string_length"]
    for name, schema in _arm_schemas(llm_cfg).items():
        assert max(_max_lengths(schema)) <= cap, name
    # the unfitted TICK answer is what crashed llama-cpp-python's server: the limit is what makes it fit
    if cap < 1500:
        assert max(_max_lengths(_arm_schemas(None)["tick/answer"])) > cap


def _llama_converter():
    """llama.cpp's JSON-schema-to-GBNF converter from the installed llama-cpp-python, loaded by file path so
    that the package's native library is not loaded (no model, no server)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llama-cpp-python is not installed (pip install 'llama-cpp-python[server]'; docs/real-server.md)")
    path = Path(next(iter(spec.submodule_search_locations))) / "llama_grammar.py"
    if not path.is_file():
        pytest.skip(f"{path}: llama-cpp-python without its grammar converter")
    mod_spec = importlib.util.spec_from_file_location("gcpc_test_llama_grammar", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module.json_schema_to_gbnf


def _nesting(grammar: str) -> int:
    """Deepest parenthesis nesting of a GBNF text, outside quoted literals and character classes: the
    recursion depth llama.cpp's parser needs for it."""
    depth = deepest = 0
    i, n = 0, len(grammar)
    while i < n:
        c = grammar[i]
        if c in "\"[":
            close = "\"" if c == "\"" else "]"
            i += 1
            while i < n and grammar[i] != close:
                i += 2 if grammar[i] == "\\" else 1
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


def test_llama_cpp_compiles_every_arm_schema_within_its_stated_limit():
    convert = _llama_converter()
    cfg = yaml.safe_load((ROOT / "conf/llm/llama-cpp-python.yaml").read_text())
    cap = cfg["schema_limits"]["max_string_length"]
    for name, schema in _arm_schemas(cfg).items():
        grammar = convert(json.dumps(schema))
        assert "root ::=" in grammar, name
        assert _nesting(grammar) <= cap + 8, f"{name}: grammar nests {_nesting(grammar)} deep (limit {cap})"
    # without the limit, TICK's answer nests ~1,500 deep: the grammar the server could not parse
    assert _nesting(convert(json.dumps(_arm_schemas(None)["tick/answer"]))) > cap + 8


def test_small_integer_ranges_go_as_an_enum_where_the_decoder_ignores_integer_bounds():
    """llama-cpp-python's converter ignores minimum/maximum (Holistic scores 100 and 1e15 got through, issue 30):
    its config sends 0-10 as an enum, which every converter turns into alternatives; other configs are unchanged."""
    from gcpc.llm.schemas import fit_schema_limits, holistic_schema

    schema = holistic_schema()
    score = schema["properties"]["score"]
    assert score["minimum"] == 0 and score["maximum"] == 10 and "enum" not in score
    fitted = fit_schema_limits(schema, {"integer_range_as_enum": 16})
    assert fitted["properties"]["score"]["enum"] == list(range(11))
    assert fit_schema_limits(schema, {"integer_range_as_enum": 5})["properties"]["score"] == score  # 11 values > 5
    assert fit_schema_limits(schema, {"max_string_length": 1000})["properties"]["score"] == score
    cfg = yaml.safe_load((ROOT / "conf" / "llm" / "llama-cpp-python.yaml").read_text())
    assert fit_schema_limits(schema, cfg["schema_limits"])["properties"]["score"]["enum"] == list(range(11))
