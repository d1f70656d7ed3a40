"""The TICK arm's prompts follow the published protocol point by point (Cook et al. 2024, arXiv
2410.03608, "TICKing All the Boxes"; issue 23, item 5). The wording is the project's; each point the
protocol fixes is checked on the prompt text. tests/test_judging_arms.py checks that tick_adapted is
the same text with "response" replaced by "agent execution trajectory"."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2
import jsonschema
from jinja2 import meta

from gcpc.judging.models import ItemLabel
from gcpc.judging.tick_arm import LIMITS
from gcpc.llm.schemas import TickAnswer, tick_answer_schema, tick_checklist_schema
from gcpc.scoring.metrics import gcpc_score

ROOT = Path(__file__).resolve().parents[1]
TICK = ROOT / "prompts/judging/tick"


def _text(name: str) -> str:
    return (TICK / name).read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _variables(name: str) -> set[str]:
    return meta.find_undeclared_variables(jinja2.Environment().parse(_text(name)))


def test_generator_is_given_the_instruction_only():
    assert _variables("generate.jinja") == {"instruction", "schema"}
    text = _flat(_text("generate.jinja"))
    assert "You are given one thing: the INSTRUCTION" in text


def test_questions_may_be_instruction_specific_or_generally_sensible_for_the_domain():
    text = _flat(_text("generate.jinja"))
    assert "stated explicitly in the INSTRUCTION, or it may be a generally sensible criterion for the problem domain" in text
    # the drift of issue 23: domain criteria were ruled out
    assert "rather than a quality that any answer" not in text
    # comprehensive but concise, precise: the published question requirements
    for phrase in ("comprehensive but concise", "be precise", "using the wording of the INSTRUCTION"):
        assert phrase in text


def test_yes_means_success_and_two_to_eight_questions():
    text = _flat(_text("generate.jinja"))
    assert "answerable with yes or no, where yes means that the response successfully met" in text
    assert "at least 2 and at most 8 questions" in text
    assert LIMITS == {"min_questions": 2, "max_questions": 8}
    schema = tick_checklist_schema(**LIMITS)["properties"]["questions"]
    assert (schema["minItems"], schema["maxItems"]) == (2, 8)
    assert "Analyse the INSTRUCTION before you write the checklist" in text


def test_examples_are_valid_replies_and_include_a_domain_criterion():
    prefix = _text("generate.jinja").split("\n===\n")[0]
    examples = re.findall(r"^INSTRUCTION:\n(.+)\n(\{.+\})$", prefix, re.MULTILINE)
    assert len(examples) == 4
    schema = tick_checklist_schema(**LIMITS)
    for instruction, reply in examples:
        parsed = json.loads(reply)
        jsonschema.validate(parsed, schema)
        for q in parsed["questions"]:
            assert re.match(r"(Is|Does|Are|Do)\b", q) and q.endswith("?"), q
    # at least one example asks a generally sensible criterion the instruction does not state
    code = next(json.loads(r)["questions"] for i, r in examples if "parse_dates" in i)
    assert any("easy to read" in q for q in code)


def test_each_question_answered_alone_with_reasoning_before_yes_or_no():
    assert _variables("judge.jinja") == {"instruction", "question", "schema"}
    text = _flat(_text("judge.jinja"))
    assert "Reason about the question step by step first, and only then answer it" in text
    assert '"YES" if the response successfully meets the criterion' in text and '"NO" if it does not' in text
    assert list(TickAnswer.model_fields) == ["reasoning", "verdict"]
    assert list(tick_answer_schema()["properties"]) == ["reasoning", "verdict"]


def test_score_is_the_fraction_of_yes():
    labels = [ItemLabel(item_id=f"q{i:02d}", route="judge", label=lab) for i, lab in enumerate(["Yes", "No", "Yes", "Yes", "No"], 1)]
    assert gcpc_score(labels) == 3 / 5


def test_reply_carries_the_analysis_before_the_questions():
    """Published TICK has the model analyse the instruction before it writes the questions ("Analysis: … /
    Answer:"); the JSON reply has a field for it, first, and the prompt asks for it (issue 35, item 3)."""
    from gcpc.llm.schemas import TickChecklist

    assert list(TickChecklist.model_fields) == ["analysis", "questions"]
    schema = tick_checklist_schema(**LIMITS)
    assert list(schema["properties"]) == ["analysis", "questions"] and schema["required"] == ["analysis", "questions"]
    assert schema["properties"]["analysis"]["minLength"] == 1
    text = _flat(_text("generate.jinja"))
    assert 'write your analysis' in text and 'in the reply\'s "analysis" field, which comes before the questions' in text
    prefix = _text("generate.jinja").split("\n===\n")[0]
    replies = re.findall(r"^INSTRUCTION:\n.+\n(\{.+\})$", prefix, re.MULTILINE)
    assert len(replies) == 4
    for reply in replies:
        assert list(json.loads(reply)) == ["analysis", "questions"] and json.loads(reply)["analysis"].strip()
