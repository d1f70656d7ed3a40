"""Heuristic Holistic score: a stated function of the evidence the GCPC search finds.

Rule (summarised in docs/heuristic-provider.md), with the instruction's anchors (judge.py):
  * No tool output or file content at all: score 0.
  * Base: 10 x (anchors whose latest displayed mention shows state) / (all anchors), rounded half
    up; 5 when the instruction has no anchor.
  * Minus 2 when some anchor's latest mention reads as a failure; minus 2 when the final tool
    output or file content reads as a failure. Clamped to 0..10.
The rationale states the counts, so the score can be recomputed by hand from the log.
"""

from __future__ import annotations

import math
from typing import Any

from gcpc.llm.heuristic.judge import anchor_states, anchors_of, evidence_lines, reads_as_failure


def holistic_score(instruction: str, events: list[dict[str, Any]]) -> tuple[int, str]:
    lines = list(evidence_lines(events))
    if not lines:
        return 0, "No tool output or file content is displayed, so nothing the task asks for is shown as achieved."
    anchors = anchors_of(instruction)
    shown, contrary = anchor_states(anchors, events)
    base = math.floor(10 * len(shown) / len(anchors) + 0.5) if anchors else 5
    last_event = lines[-1][0]
    final_failure = any(reads_as_failure(line, last_event) for ev, line in lines if ev is last_event)
    score = max(0, min(10, base - 2 * bool(contrary) - 2 * final_failure))
    what = (f"{len(shown)} of {len(anchors)} things the instruction names are displayed as state and "
            f"{len(contrary)} as failures" if anchors else "The instruction names nothing concrete to look for")
    ending = "the final tool output reads as a failure" if final_failure else "the final tool output shows no failure"
    return score, f"{what}; {ending}."


def score_holistic(inputs: dict[str, Any]) -> dict[str, Any]:
    score, rationale = holistic_score(inputs["instruction"], inputs["events"])
    return {"rationale": rationale, "score": score}
