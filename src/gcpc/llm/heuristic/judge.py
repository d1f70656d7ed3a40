"""Heuristic item judging: search the displayed environment state for each item's anchors.

Rules (summarised in docs/heuristic-provider.md):
  * Anchors are the concrete tokens of the item text (see tokens.py), except bare alphabetic
    words shorter than five letters (`unit`, `code`), which match too much prose. No anchor: Abstain.
  * Only tool-output and file-content events are searched; agent messages, tool calls and
    system events are never evidence, so a claim the agent only states earns nothing.
  * A line mentioning an anchor is contrary when its event is an error result or the rest of the
    line (the anchor itself removed, so `Restart=on-failure` is not a failure) reads as a failure
    (traceback, error, no such file, not found, failed, ...); otherwise it shows the anchor as state.
  * Per anchor the latest mention in log order counts (a later fix overrides an earlier error).
  * No when some anchor's latest mention is contrary; Yes when at least half of the anchors
    (and at least one) are shown as state; else Abstain.
  * Evidence is the verbatim line of the deciding mention(s), with its event index.
"""

from __future__ import annotations

import re
from typing import Any

from gcpc.llm.heuristic.tokens import concrete_tokens

EVIDENCE_KINDS = {"tool_output", "file_content"}

CONTRARY = re.compile(
    r"traceback|\berror\b|errno|exception|no such file|not found|cannot|can't|could not|"
    r"\bfailed\b|\bfailure\b|permission denied|\binvalid\b|does not exist|missing|mismatch|assertionerror",
    re.IGNORECASE,
)


def anchors_of(text: str) -> list[str]:
    return [t for t in concrete_tokens(text) if not (t.isalpha() and len(t) < 5)]


def _mentions(events: list[dict[str, Any]], anchor: str) -> list[tuple[int, str, bool]]:
    """(event index, verbatim line, contrary?) for every evidence line that contains the anchor."""
    needle = anchor.lower()
    found = []
    for ev in events:
        if ev["kind"] not in EVIDENCE_KINDS:
            continue
        for line in ev["text"].splitlines():
            lowered = line.lower()
            if needle in lowered:
                contrary = bool(ev.get("is_error")) or bool(CONTRARY.search(lowered.replace(needle, " ")))
                found.append((ev["index"], line.strip(), contrary))
    return found


def judge_item(item: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    anchors = anchors_of(item["text"])
    if not anchors:
        return {"item_id": item["item_id"], "label": "Abstain", "evidence": [],
                "reason": "The item names no concrete path, literal, number or identifier to look for in the log."}
    shown, contrary = [], []
    for anchor in anchors:
        mentions = _mentions(events, anchor)
        if not mentions:
            continue
        idx, line, bad = mentions[-1]
        (contrary if bad else shown).append((anchor, idx, line))
    if contrary:
        anchor, idx, line = contrary[0]
        return {"item_id": item["item_id"], "label": "No", "evidence": [{"event_index": idx, "quote": line}],
                "reason": f"The latest displayed mention of '{anchor}' is a failure."}
    if shown and len(shown) * 2 >= len(anchors):
        evidence = [{"event_index": idx, "quote": line} for _, idx, line in shown[:3]]
        names = ", ".join(f"'{a}'" for a, _, _ in shown)
        return {"item_id": item["item_id"], "label": "Yes", "evidence": evidence,
                "reason": f"Tool output or file content displays {names} ({len(shown)} of {len(anchors)} anchors)."}
    return {"item_id": item["item_id"], "label": "Abstain", "evidence": [],
            "reason": f"Only {len(shown)} of {len(anchors)} anchors appear in tool output or file content."}


def judge_checklist(inputs: dict[str, Any]) -> dict[str, Any]:
    events = inputs["events"]
    return {"verdicts": [judge_item(item, events) for item in inputs["items"]]}
