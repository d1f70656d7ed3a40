"""The heuristic provider satisfies every schema it is given (issue 23, item 6): its answers are fitted to
the request's JSON schema (maxLength, maxItems, minimum/maximum), so TICK no longer loses the Terminal-Bench 1
tasks whose instruction sentences are longer than a TICK question may be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc.judging.spec import ArmSpec
from gcpc.judging.tick_arm import GENERATE, build_generation_request, check_distinct_questions
from gcpc.llm.heuristic import HeuristicProvider
from gcpc.llm.heuristic.fit import fit_to_schema, shorten
from gcpc.llm.prompts import PromptTemplate
from gcpc.llm.schemas import TICK_QUESTION_MAX_CHARS, TickChecklist, holistic_schema, schema_errors

ROOT = Path(__file__).resolve().parents[1]
TB1_RUN = ROOT.parent / "shared" / "data" / "terminal-bench-1" / "runs" / "20250902_orchestrator_claude-4-sonnet"
LLM = {"provider": "heuristic", "model": "gcpc-heuristic-v1", "temperature": 0.0, "max_tokens": 4096, "seed": 0}
LONG_SENTENCE = ("Create `/app/report.json` listing, for every service in `services.yaml`, its name, port, health "
                 "endpoint, owner, restart policy, memory limit, CPU limit, environment variables, mounted volumes, "
                 "log rotation settings, dependencies on other services, the Docker image tag, the exposed protocols, "
                 "the readiness probe delay, the liveness probe period, the scaling bounds, the alert channel, "
                 "and the runbook URL as documented in `docs/ops.md`.")


def _tick_arm() -> ArmSpec:
    from gcpc.judging.stage import arm_spec

    params = {"arm": {"tick": {"kind": "tick", "template": str(ROOT / "prompts" / "judging" / "tick")}}}
    return arm_spec(params, "tick")


def _generate(instruction: str) -> tuple[dict, dict]:
    arm = _tick_arm()
    request = build_generation_request(instruction, arm=arm, llm_cfg=LLM, template=PromptTemplate(arm.template_file(GENERATE)))
    return json.loads(HeuristicProvider().complete(request).text), request.json_schema


def test_shorten_and_fit():
    assert shorten("short", 10) == "short"
    s = shorten("alpha beta gamma delta epsilon", 16)
    assert s == "alpha beta…" and len(s) <= 16
    assert len(shorten("x" * 50, 10)) == 10 and shorten("x" * 50, 10).endswith("…")
    schema = {"type": "object", "properties": {"a": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 5}},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 10}}}
    assert fit_to_schema({"a": ["abcdefgh", "ab", "zz"], "n": 12}, schema) == {"a": ["abcd…", "ab"], "n": 10}
    fits = {"rationale": "fine", "score": 7}
    assert fit_to_schema(fits, holistic_schema()) == fits  # an answer that fits is returned unchanged


def test_tick_questions_over_the_limit_are_fitted_to_the_schema():
    assert len(LONG_SENTENCE) > TICK_QUESTION_MAX_CHARS
    answer, schema = _generate(LONG_SENTENCE + "\n\nAlso write `/app/done.txt` containing the word ok when finished.")
    assert schema_errors(answer, schema) == []  # before: questions[0] is too long (> 400 characters)
    parsed = TickChecklist.model_validate(answer)
    check_distinct_questions(parsed, None)  # type: ignore[arg-type]
    assert any(q.endswith("…") for q in parsed.questions) and all(len(q) <= TICK_QUESTION_MAX_CHARS for q in parsed.questions)


@pytest.mark.parametrize("task", ["build-tcc-qemu", "get-bitcoin-nodes"])
def test_real_terminal_bench1_tasks_get_valid_tick_questions(task):
    results = TB1_RUN / task / f"{task}.1-of-5" / "results.json"
    if not results.is_file():
        pytest.skip(f"real data not available at {results} (the shared curated-data checkout is absent)")
    instruction = json.loads(results.read_text(encoding="utf-8"))["instruction"]
    answer, schema = _generate(instruction)
    assert schema_errors(answer, schema) == []
