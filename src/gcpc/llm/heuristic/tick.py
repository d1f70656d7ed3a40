"""Heuristic TICK: questions from instruction sentences, YES/NO from the GCPC evidence search.

Rules (summarised in docs/heuristic-provider.md):
  * Question generation reads the instruction only. Fenced code, headings and table rows are
    skipped; each list item is a unit; the other lines are joined into paragraphs and split into
    sentences. A unit of four or more words is a requirement unless it is a bare lead-in ending
    in ':' with no concrete token.
  * More than `max` requirements: those with concrete tokens are kept first, then the others, in
    instruction order, up to `max`. Fewer than `min`: units are split into clauses at '; ',
    ', and ', ' and then '; still fewer: one more question asks about the whole instruction
    ("Was the instruction as a whole carried out? <instruction>"). An empty instruction gives no
    question, which the schema rejects (at least 2), so the arm reports that task as failed.
  * A question reads "Is the following requirement of the instruction met? <unit>". The reply's
    `analysis`, written before the questions, is a labelled count of what these rules found
    ("Heuristic analysis (rule-based, not an LLM): ...", `tick_analysis`).
  * Answering one question: its anchors (concrete tokens of the question) go through the same
    search as a GCPC item (judge.py). Yes -> YES; No or Abstain -> NO, because TICK has no
    abstention: a requirement the log does not show as met is answered NO. The reasoning quotes
    the deciding line and comes before the verdict.
"""

from __future__ import annotations

import re
from typing import Any

from gcpc.llm.heuristic.judge import anchors_of, judge_anchors
from gcpc.llm.heuristic.tokens import concrete_tokens, strip_list_marker, words
from gcpc.llm.schemas import TICK_QUESTION_MAX_CHARS

QUESTION_PREFIX = "Is the following requirement of the instruction met? "
WHOLE_PREFIX = "Was the instruction as a whole carried out? "

_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"(])")
_CLAUSE_SPLIT = re.compile(r";\s+|,\s+and\s+|\s+and then\s+")


def instruction_units(instruction: str) -> list[str]:
    """List items and sentences of the instruction's prose, in order."""
    units: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            text = " ".join(paragraph)
            units.extend(s.strip() for s in _SENTENCE_SPLIT.split(text) if s.strip())
            paragraph.clear()

    in_fence = False
    for raw in instruction.splitlines():
        if _FENCE.match(raw):
            flush()
            in_fence = not in_fence
            continue
        line = raw.strip()
        if in_fence or not line or line.startswith(("#", "|")):
            flush()
            continue
        body = strip_list_marker(line).strip()
        if body != line:
            flush()
            units.append(body)
        else:
            paragraph.append(line)
    flush()
    return units


def _is_requirement(unit: str) -> bool:
    if len(words(unit)) < 4:
        return False
    return not (unit.rstrip().endswith(":") and not concrete_tokens(unit))


def select_requirements(instruction: str, lo: int, hi: int) -> list[str]:
    units = list(dict.fromkeys(u for u in instruction_units(instruction) if _is_requirement(u)))
    if len(units) > hi:
        order = {u: n for n, u in enumerate(units)}
        ranked = [u for u in units if concrete_tokens(u)] + [u for u in units if not concrete_tokens(u)]
        units = sorted(ranked[:hi], key=order.__getitem__)
    if len(units) < lo:
        clauses = [c.strip() for u in units for c in _CLAUSE_SPLIT.split(u) if len(words(c)) >= 4]
        if len(clauses) > len(units):
            units = list(dict.fromkeys(clauses))[:hi]
    return units


def _within(prefix: str, text: str, limit: int = TICK_QUESTION_MAX_CHARS) -> str:
    """prefix + text, the text cut at a word boundary with an ellipsis when the question would exceed the schema's
    limit (a SWE-bench issue has paragraph-long sentences and stack traces); the kept part is verbatim."""
    if len(prefix) + len(text) <= limit:
        return prefix + text
    room = limit - len(prefix) - 1
    cut = text[:room]
    space = cut.rfind(" ")
    return prefix + (cut[:space] if space > room // 2 else cut).rstrip() + "…"


def generate_tick_checklist(inputs: dict[str, Any]) -> dict[str, Any]:
    limits = inputs.get("limits", {})
    lo, hi = int(limits.get("min_questions", 2)), int(limits.get("max_questions", 8))
    questions = [_within(QUESTION_PREFIX, u) for u in select_requirements(inputs["instruction"], lo, hi)]
    whole = " ".join(inputs["instruction"].split())
    if len(questions) < lo and whole:
        questions.append(_within(WHOLE_PREFIX, whole))
    return {"analysis": tick_analysis(inputs["instruction"], questions), "questions": questions}


def tick_analysis(instruction: str, questions: list[str]) -> str:
    """The reply's analysis (written before the questions, as TICK asks): what the rules found, labelled as
    the heuristic's and not a model's reading; deterministic, from the instruction and the questions only."""
    units = instruction_units(instruction)
    n_req = sum(_is_requirement(u) for u in dict.fromkeys(units))
    whole = sum(q.startswith(WHOLE_PREFIX) for q in questions)
    return (f"Heuristic analysis (rule-based, not an LLM): the instruction has {len(units)} sentence or list-item "
            f"units, {n_req} of them stating a requirement (four or more words, not a bare lead-in); "
            f"{len(questions) - whole} of them become questions, in instruction order"
            + (", plus one about the instruction as a whole" if whole else "") + ".")


def answer_tick_question(inputs: dict[str, Any]) -> dict[str, Any]:
    question = inputs["question"]
    label, evidence, reason = judge_anchors(anchors_of(question), inputs["events"])
    if evidence:
        shown = "; ".join(f"[{e['event_index']}] {e['quote']}" for e in evidence)
        reasoning = f"{reason} Displayed: {shown}"
    else:
        reasoning = reason
    if label == "Abstain":
        reasoning += " TICK has no abstention: a requirement the log does not show as met is answered NO."
    return {"reasoning": reasoning, "verdict": "YES" if label == "Yes" else "NO"}
