"""Heuristic answers to the Generic arm's task-agnostic questions (conf/arm/generic.yaml).

A task-agnostic question names nothing to look for, so each question is answered by one of five
rules, chosen by the first cue word found in the question text (summarised in docs/heuristic-provider.md):

  cue (in this order)                       rule
  error                                     final_state  - did the run end without a displayed failure?
  complete, accomplish, finish              completed    - `outputs` and `final_state` together
  check, verif, test                        checked      - was the result displayed again, without failure?
  output, produce, create, deliver          outputs      - the instruction's anchors, by the GCPC item rule
  look, inspect, read, input, explore       looked       - did any instruction anchor get displayed?
  (no cue)                                  outputs

All rules use the same evidence search as GCPC items (judge.py): only tool outputs and file
contents count, lines addressed to an evaluator are ignored, and every Yes or No quotes a line
verbatim with its event index. "Instruction anchors" are the concrete tokens of the task instruction.
"""

from __future__ import annotations

import re
from typing import Any

from gcpc.llm.heuristic.judge import anchors_of, evidence_lines, judge_anchors, quote_of, reads_as_failure

RULE_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("final_state", re.compile(r"\berrors?\b", re.IGNORECASE)),
    ("completed", re.compile(r"\b(?:complete[ds]?|accomplish(?:ed)?|finish(?:ed)?)\b", re.IGNORECASE)),
    ("checked", re.compile(r"\b(?:check|checked|checks|verif\w*|test|tests|tested|testing)\b", re.IGNORECASE)),
    ("outputs", re.compile(r"\b(?:outputs?|produce[ds]?|create[ds]?|deliver\w*)\b", re.IGNORECASE)),
    ("looked", re.compile(r"\b(?:look|looked|inspect\w*|read|inputs?|explore[ds]?)\b", re.IGNORECASE)),
)


def rule_for(question: str) -> str:
    for rule, cue in RULE_CUES:
        if cue.search(question):
            return rule
    return "outputs"


Verdict = tuple[str, list[dict[str, Any]], str]


def _mentions_any(anchors: list[str], events: list[dict[str, Any]]) -> list[tuple[int, str, bool]]:
    """Every evidence line mentioning some instruction anchor, in log order, with its failure reading."""
    lowered = [a.lower() for a in anchors]
    found = []
    for ev, line in evidence_lines(events):
        low = line.lower()
        hit = next((a for a in lowered if a in low), None)
        if hit is not None:
            found.append((ev["index"], line, reads_as_failure(line, ev, hit)))
    return found


def looked(anchors: list[str], events: list[dict[str, Any]]) -> Verdict:
    for idx, line, bad in _mentions_any(anchors, events):
        if not bad:
            return "Yes", [{"event_index": idx, "quote": quote_of(line)}], "Tool output displays material the instruction names."
    return "Abstain", [], "No tool output or file content displays anything the instruction names."


def outputs(anchors: list[str], events: list[dict[str, Any]]) -> Verdict:
    label, evidence, reason = judge_anchors(anchors, events)
    return label, evidence, f"Instruction anchors: {reason}"


def checked(anchors: list[str], events: list[dict[str, Any]]) -> Verdict:
    found = _mentions_any(anchors, events)
    if not found:
        return "Abstain", [], "Nothing the instruction names is displayed, so no check of a result is shown."
    idx, line, bad = found[-1]
    if bad:
        return "No", [{"event_index": idx, "quote": quote_of(line)}], "The last displayed look at the task's material shows a failure."
    if len({i for i, _, _ in found}) >= 2:
        return "Yes", [{"event_index": idx, "quote": quote_of(line)}], "The task's material is displayed again later in the log, without failure."
    return "Abstain", [], "The task's material is displayed only once; no later check is shown."


def final_state(anchors: list[str], events: list[dict[str, Any]]) -> Verdict:
    lines = list(evidence_lines(events))
    if not lines:
        return "Abstain", [], "No tool output or file content is displayed."
    last_event = lines[-1][0]
    own = [line for ev, line in lines if ev is last_event]
    bad = [line for line in own if reads_as_failure(line, last_event)]
    if bad:
        return "No", [{"event_index": last_event["index"], "quote": quote_of(bad[0])}], "The final tool output reads as a failure."
    return "Yes", [{"event_index": last_event["index"], "quote": quote_of(own[-1])}], "The final tool output shows no failure."


def completed(anchors: list[str], events: list[dict[str, Any]]) -> Verdict:
    parts = [outputs(anchors, events), final_state(anchors, events)]
    for label, evidence, reason in parts:
        if label == "No":
            return "No", evidence, reason
    if all(label == "Yes" for label, _, _ in parts):
        return "Yes", [e for _, ev, _ in parts for e in ev][:3], "The outputs are displayed and the final tool output shows no failure."
    return "Abstain", [], "The log does not display both the outputs and a final state without failure."


RULES = {"looked": looked, "outputs": outputs, "checked": checked, "final_state": final_state, "completed": completed}


def judge_generic(inputs: dict[str, Any]) -> dict[str, Any]:
    anchors = anchors_of(inputs["instruction"])
    events = inputs["events"]
    verdicts = []
    for item in inputs["items"]:
        rule = rule_for(item["text"])
        label, evidence, reason = RULES[rule](anchors, events)
        verdicts.append({"item_id": item["item_id"], "label": label, "evidence": evidence, "reason": f"[{rule}] {reason}"})
    return {"verdicts": verdicts}
