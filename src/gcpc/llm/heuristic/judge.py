"""Heuristic item judging: search the displayed environment state for each item's anchors.

Rules (summarised in docs/heuristic-provider.md):
  * Anchors are the concrete tokens of the item text (see tokens.py), except bare alphabetic
    words shorter than five letters (`unit`, `code`), which match too much prose. No anchor: Abstain.
  * Only tool-output and file-content events are searched; agent messages, tool calls and
    system events are never evidence, so a claim the agent only states earns nothing.
  * A line that addresses an evaluator, judge or grader is data aimed at the judge, not displayed
    state: it is never evidence (the judging prompts tell an LLM to ignore such text; this is the rule).
  * A line mentioning an anchor is contrary when its event is an error result or the rest of the
    line (the anchor itself removed, so `Restart=on-failure` is not a failure) reads as a failure
    (traceback, error, no such file, not found, failed, ...); otherwise it shows the anchor as state.
  * Per anchor the latest mention in log order counts (a later fix overrides an earlier error).
  * No when some anchor's latest mention is contrary; Yes when at least half of the anchors
    (and at least one) are shown as state; else Abstain.
  * Evidence is the verbatim line of the deciding mention(s), with its event index.

The search functions here are shared by the baseline arms' rules (generic.py, tick.py, holistic.py),
so every arm's heuristic verdicts rest on the same evidence search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from gcpc.corpus.authorship import Restatement
from gcpc.llm.heuristic.tokens import concrete_tokens

EVIDENCE_KINDS = {"tool_output", "file_content"}

CONTRARY = re.compile(
    r"traceback|\berror\b|errno|exception|no such file|not found|cannot|can't|could not|"
    r"\bfailed\b|\bfailure\b|permission denied|\binvalid\b|does not exist|missing|mismatch|assertionerror",
    re.IGNORECASE,
)

ADDRESSED_TO_EVALUATOR = re.compile(r"\b(?:evaluators?|judges?|graders?)\b", re.IGNORECASE)


def anchors_of(text: str) -> list[str]:
    return [t for t in concrete_tokens(text) if not (t.isalpha() and len(t) < 5)]


def evidence_lines(events: list[dict[str, Any]], restated: Callable[[str], bool] | None = None
                   ) -> Iterator[tuple[dict[str, Any], str]]:
    """(event, stripped line) for every non-empty line of a tool output or file content, in log order,
    leaving out lines that address an evaluator, judge or grader, lines the agent wrote itself
    (the event's `authored` line numbers: echoed, heredoc, a file it wrote read back) and lines that
    restate the task (`restated`)."""
    for ev in events:
        if ev["kind"] not in EVIDENCE_KINDS:
            continue
        authored = set(ev.get("authored") or ())
        for n, line in enumerate(ev["text"].splitlines()):
            stripped = line.strip()
            if (stripped and n not in authored and not ADDRESSED_TO_EVALUATOR.search(stripped)
                    and not (restated is not None and restated(stripped))):
                yield ev, stripped


def reads_as_failure(line: str, event: dict[str, Any], removed: str | None = None) -> bool:
    """The line's event is an error result, or the line (without `removed`) reads as a failure."""
    lowered = line.lower()
    if removed:
        lowered = lowered.replace(removed.lower(), " ")
    return bool(event.get("is_error")) or bool(CONTRARY.search(lowered))


def mentions(events: list[dict[str, Any]], anchor: str, restated: Callable[[str], bool] | None = None
             ) -> list[tuple[int, str, bool]]:
    """(event index, verbatim line, contrary?) for every evidence line that contains the anchor."""
    needle = anchor.lower()
    return [(ev["index"], line, reads_as_failure(line, ev, needle))
            for ev, line in evidence_lines(events, restated) if needle in line.lower()]


def anchor_states(anchors: list[str], events: list[dict[str, Any]], restated: Callable[[str], bool] | None = None
                  ) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """(shown, contrary): per anchor its latest mention, split by whether that mention reads as a failure."""
    shown, contrary = [], []
    for anchor in anchors:
        found = mentions(events, anchor, restated)
        if not found:
            continue
        idx, line, bad = found[-1]
        (contrary if bad else shown).append((anchor, idx, line))
    return shown, contrary


def judge_anchors(anchors: list[str], events: list[dict[str, Any]], restated: Callable[[str], bool] | None = None
                  ) -> tuple[str, list[dict[str, Any]], str]:
    """(label, evidence, reason) of the anchor rule above, for any list of anchors."""
    if not anchors:
        return "Abstain", [], "No concrete path, literal, number or identifier to look for in the log."
    shown, contrary = anchor_states(anchors, events, restated)
    if contrary:
        anchor, idx, line = contrary[0]
        return "No", [{"event_index": idx, "quote": line}], f"The latest displayed mention of '{anchor}' is a failure."
    if shown and len(shown) * 2 >= len(anchors):
        evidence = [{"event_index": idx, "quote": line} for _, idx, line in shown[:3]]
        names = ", ".join(f"'{a}'" for a, _, _ in shown)
        return "Yes", evidence, f"Tool output or file content displays {names} ({len(shown)} of {len(anchors)} anchors)."
    return "Abstain", [], f"Only {len(shown)} of {len(anchors)} anchors appear in tool output or file content."


def judge_item(item: dict[str, Any], events: list[dict[str, Any]], restated: Callable[[str], bool] | None = None
               ) -> dict[str, Any]:
    anchors = anchors_of(item["text"])
    if not anchors:
        return {"item_id": item["item_id"], "label": "Abstain", "evidence": [],
                "reason": "The item names no concrete path, literal, number or identifier to look for in the log."}
    label, evidence, reason = judge_anchors(anchors, events, restated)
    return {"item_id": item["item_id"], "label": label, "evidence": evidence, "reason": reason}


def judge_checklist(inputs: dict[str, Any]) -> dict[str, Any]:
    """A GCPC checklist judgment (the Generic arm's questions go to `generic.judge_generic`: the provider
    dispatches on `mode`, so generic.py, which builds on this module, is not imported back from here)."""
    events = inputs["events"]
    restated = Restatement([item["text"] for item in inputs["items"]])  # an echoed or cat'ed checklist is not state
    return {"verdicts": [judge_item(item, events, restated) for item in inputs["items"]]}
