"""The evidence gate: a Yes or No must rest on a verbatim quote from a tool output or file content.

A verdict whose quote is not found in the cited event, whose cited event does not exist, or whose
cited event is the agent's own message (or a tool call, or a system event) becomes Abstain,
and the downgrade is recorded with its reason. With the gate off, labels pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from gcpc.corpus.models import EVIDENCE_KINDS, Event
from gcpc.judging.models import ItemLabel
from gcpc.llm.schemas import ItemVerdict
from gcpc.synthesis.gates import normalize_ws


def _evidence_problem(verdict: ItemVerdict, events_by_index: dict[int, Event]) -> str | None:
    if not verdict.evidence:
        return "no evidence cited"
    for ev in verdict.evidence:
        event = events_by_index.get(ev.event_index)
        if event is None:
            return f"cited event [{ev.event_index}] does not exist"
        if event.kind not in EVIDENCE_KINDS:
            return f"cited event [{ev.event_index}] is {event.kind.value}, not a tool output or file content"
        if not ev.quote.strip() or normalize_ws(ev.quote) not in normalize_ws(event.text):
            return f"quote not found in event [{ev.event_index}]"
    return None


def gate_verdicts(
    verdicts: Sequence[ItemVerdict],
    events: Sequence[Event],
    *,
    routes: dict[str, str],
    test_refs: dict[str, list[str]],
    enabled: bool = True,
) -> list[ItemLabel]:
    by_index = {e.index: e for e in events}
    labels = []
    for v in verdicts:
        problem = _evidence_problem(v, by_index) if enabled and v.label != "Abstain" else None
        labels.append(ItemLabel(
            item_id=v.item_id, route=routes[v.item_id], label="Abstain" if problem else v.label, raw_label=v.label,
            evidence=v.evidence, reason=v.reason, downgraded=problem is not None, downgrade_reason=problem,
            test_refs=test_refs.get(v.item_id, []),
        ))
    return labels
