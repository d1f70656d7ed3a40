"""The evidence gate: a Yes or No must rest on a verbatim quote from a tool output or file content.

A verdict becomes Abstain, and the downgrade is recorded with its reason, when its quote:
* is not found in the cited event, or the cited event does not exist, or is the agent's own
  message (or a tool call, or a system event);
* is shorter than `min_quote_chars` characters (not counting whitespace): a one-character quote
  is found almost anywhere;
* occurs in the cited event only on agent-authored lines (`authorship`: echoed, heredoc or
  written by the agent and read back): the agent displayed it, the environment did not;
* occurs in the instruction or checklist text and in no evidence line that the agent did not
  author and that is not itself a restatement of the task (`cat instruction.md`).
With the gate off, labels pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from gcpc.corpus.models import EVIDENCE_KINDS, Event
from gcpc.corpus.authorship import Restatement, authored_lines
from gcpc.judging.models import ItemLabel
from gcpc.llm.schemas import ItemVerdict
from gcpc.synthesis.gates import normalize_ws


class _Evidence:
    def __init__(self, events: Sequence[Event], task_texts: Sequence[str], min_quote_chars: int):
        self.by_index = {e.index: e for e in events}
        self.authored = authored_lines(events)
        self.restated = Restatement(task_texts)
        self.min_quote_chars = min_quote_chars
        self._independent: str | None = None

    def own_text(self, event: Event) -> str:
        """The event's text without its agent-authored lines."""
        marked = self.authored.get(event.index)
        if not marked:
            return event.text
        return "\n".join(line for i, line in enumerate(event.text.splitlines()) if i not in marked)

    def independent(self) -> str:
        """Every evidence line the agent did not author and that does not restate the task, joined."""
        if self._independent is None:
            lines = [line for e in self.by_index.values() if e.kind in EVIDENCE_KINDS
                     for line in self.own_text(e).splitlines() if not self.restated(line)]
            self._independent = normalize_ws("\n".join(lines))
        return self._independent

    def problem(self, verdict: ItemVerdict) -> str | None:
        if not verdict.evidence:
            return "no evidence cited"
        for ev in verdict.evidence:
            event = self.by_index.get(ev.event_index)
            if event is None:
                return f"cited event [{ev.event_index}] does not exist"
            if event.kind not in EVIDENCE_KINDS:
                return f"cited event [{ev.event_index}] is {event.kind.value}, not a tool output or file content"
            quote = normalize_ws(ev.quote)
            if not ev.quote.strip() or quote not in normalize_ws(event.text):
                return f"quote not found in event [{ev.event_index}]"
            if len("".join(ev.quote.split())) < self.min_quote_chars:
                return f"quote shorter than {self.min_quote_chars} characters"
            if quote not in normalize_ws(self.own_text(event)):
                return f"quote is agent-authored text in event [{ev.event_index}] (echoed or written by the agent)"
            if self.restated.occurs(ev.quote) and quote not in self.independent():
                return "quote restates the instruction or checklist and is shown by no output the agent did not author"
        return None


def gate_verdicts(
    verdicts: Sequence[ItemVerdict],
    events: Sequence[Event],
    *,
    routes: dict[str, str],
    test_refs: dict[str, list[str]],
    enabled: bool = True,
    task_texts: Sequence[str] = (),
    min_quote_chars: int = 4,
) -> list[ItemLabel]:
    gate = _Evidence(events, task_texts, min_quote_chars) if enabled else None
    labels = []
    for v in verdicts:
        problem = gate.problem(v) if gate is not None and v.label != "Abstain" else None
        labels.append(ItemLabel(
            item_id=v.item_id, route=routes[v.item_id], label="Abstain" if problem else v.label, raw_label=v.label,
            evidence=v.evidence, reason=v.reason, downgraded=problem is not None, downgrade_reason=problem,
            test_refs=test_refs.get(v.item_id, []),
        ))
    return labels
