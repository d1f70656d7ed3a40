"""What a judge is shown of a trajectory: the rendered log without harness noise, within a budget.

Every arm gets its log through `judge_input` (via `spec.judge_view`), in this order:

1. **Harness setup dropped.** A harness's own bootstrap (Terminal-Bench 1's `[harness]` events:
   installing the agent, starting the recording) is not the agent's work; its output is replaced
   by one marked line counting what was dropped, the command line that caused it stays.
2. **Installation output collapsed.** Inside any other output, a run of at least
   `collapse_install_min_lines` package-install / progress lines (`gcpc.corpus.noise.INSTALL_LINE`)
   becomes one marked summary line plus the run's last line.
3. **Per-event cut** (`max_event_chars`, default 4,000; 0 = none): head and tail kept, cut marked.
   The paper states no cut: this is the named extension `max_event_chars` (docs/fidelity.md).
4. **Per-trajectory budget** (`max_log_chars`): if the log is still longer, the longest events are
   cut first, all to the same length (the largest length that fits), each cut marked.

Nothing is silent: `JudgeInput.cuts` counts every removal and is recorded in the request inputs
and on the judgment. Event indices never change, so what a judge cites still points at the log.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gcpc.corpus.models import Event, EventKind
from gcpc.corpus.noise import collapse_install_runs, count_install_lines
from gcpc.corpus.render import _marker, event_header, truncate_middle

HARNESS_PREFIX = "[harness] "
"""How `gcpc.corpus.tb1_logs` marks output the harness itself caused (not the agent)."""
HARNESS_DROPPED = "[harness setup output dropped: {n} lines, {k} of them package-install/progress]"
MIN_BUDGET_CUT = 200
"""No event is cut below this by the budget (its marker alone is ~35 characters)."""


class ViewSettings(BaseModel):
    """params.yaml `judging:` keys that shape the judge view (all arms alike)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    max_event_chars: int = Field(default=4000, ge=0, description="per-event cut; 0 = none")
    drop_harness_setup: bool = True
    collapse_install_min_lines: int = Field(default=5, ge=0, description="0 = never collapse")
    max_log_chars: int | None = Field(default=None, ge=1000, description="per-trajectory budget; null = none")

    @classmethod
    def from_params(cls, judging: dict[str, Any]) -> ViewSettings:
        return cls.model_validate(judging or {})


@dataclass(frozen=True)
class JudgeInput:
    log: str
    events: list[dict[str, Any]]  # the same events as structured inputs (rule-based judges read them)
    cuts: dict[str, Any]  # provenance: every removal, counted


def _blocks_len(texts: Sequence[str], headers: Sequence[str]) -> int:
    # render_log: header + "\n" + text per block, blocks joined by "\n\n", one final "\n"
    if not texts:
        return 0
    return sum(len(h) + 1 + len(t) for h, t in zip(headers, texts, strict=True)) + 2 * (len(texts) - 1) + 1


def _capped_len(lengths: Sequence[int], cap: int) -> int:
    return sum(min(n, cap) for n in lengths)


_COLLAPSED: dict[tuple[str, int], Any] | None = None
"""While `shared_collapse` is active: collapse_install_runs per (text, min_lines), computed once."""


class shared_collapse:  # noqa: N801 (a context manager, used as `with shared_collapse():`)
    """Within it, an event text's install-run collapse (a regex scan of every line) is computed once however many
    arms render the log: the cost estimate renders each trajectory's view once per arm (issue 36). Single-threaded
    use only; the judge stage (one arm, two threads) never enters it. The result is the same, only not recomputed."""

    def __enter__(self) -> shared_collapse:
        global _COLLAPSED
        _COLLAPSED = {}
        return self

    def __exit__(self, *exc: object) -> None:
        global _COLLAPSED
        _COLLAPSED = None


def _collapse(text: str, min_lines: int) -> Any:
    memo = _COLLAPSED
    if memo is None:
        return collapse_install_runs(text, min_lines)
    key = (text, min_lines)
    found = memo.get(key)
    if found is None:
        found = memo[key] = collapse_install_runs(text, min_lines)
    return found


def judge_input(events: Sequence[Event], view: ViewSettings | int) -> JudgeInput:
    """The judge-visible log and its provenance (see the module docstring for the steps)."""
    if isinstance(view, int):
        view = ViewSettings(max_event_chars=view, drop_harness_setup=False, collapse_install_min_lines=0)
    texts: list[str] = []
    harness_events = harness_lines = harness_install = 0
    collapsed_lines = collapsed_runs = collapsed_events = 0
    event_cuts = event_cut_chars = 0
    for e in events:
        text = e.text
        if view.drop_harness_setup and e.kind == EventKind.SYSTEM and text.startswith(HARNESS_PREFIX):
            head, _, body = text.partition("\n")
            if body:
                n = body.count("\n") + 1
                k = count_install_lines(body)
                harness_events += 1
                harness_lines += n
                harness_install += k
                text = head + "\n" + HARNESS_DROPPED.format(n=n, k=k)
        elif view.collapse_install_min_lines and e.kind in (EventKind.TOOL_OUTPUT, EventKind.SYSTEM):
            c = _collapse(text, view.collapse_install_min_lines)
            if c.runs:
                collapsed_events += 1
                collapsed_lines += c.lines
                collapsed_runs += c.runs
                text = c.text
        if view.max_event_chars and len(text) > view.max_event_chars:
            event_cuts += 1
            event_cut_chars += len(text) - view.max_event_chars
            text = truncate_middle(text, view.max_event_chars)
        texts.append(text)
    headers = [event_header(e) for e in events]
    budget_cap = None
    budget_cuts = budget_cut_chars = 0
    total = _blocks_len(texts, headers)
    if view.max_log_chars is not None and total > view.max_log_chars:
        fixed = total - sum(len(t) for t in texts)
        room = view.max_log_chars - fixed
        lengths = [len(t) for t in texts]
        # the largest cap with sum(min(len, cap)) <= room: longest events are cut first, to one length
        lo, hi = MIN_BUDGET_CUT, max(lengths)
        if _capped_len(lengths, lo) > room:
            budget_cap = lo  # cannot fit: cut everything to the floor and say so
        else:
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if _capped_len(lengths, mid) <= room:
                    lo = mid
                else:
                    hi = mid - 1
            budget_cap = lo
        # never cut below the marker length (truncate_middle keeps exactly `cap` characters)
        budget_cap = max(budget_cap, len(_marker(10 ** 9)))
        for i, t in enumerate(texts):
            if len(t) > budget_cap:
                budget_cuts += 1
                budget_cut_chars += len(t) - budget_cap
                texts[i] = truncate_middle(t, budget_cap)
    blocks = [f"{h}\n{t}" for h, t in zip(headers, texts, strict=True)]
    log = "\n\n".join(blocks) + "\n" if blocks else ""
    visible = [{"index": e.index, "kind": e.kind.value, "tool": e.tool, "is_error": e.is_error, "text": t}
               for e, t in zip(events, texts, strict=True)]
    cuts: dict[str, Any] = {
        "harness_setup": {"events": harness_events, "lines": harness_lines, "install_lines": harness_install},
        "install_collapsed": {"events": collapsed_events, "runs": collapsed_runs, "lines": collapsed_lines},
        "event_cut": {"max_event_chars": view.max_event_chars, "events": event_cuts, "chars": event_cut_chars},
        "budget": {"max_log_chars": view.max_log_chars, "cap": budget_cap, "events": budget_cuts,
                   "chars": budget_cut_chars, "over_budget": view.max_log_chars is not None and len(log) > view.max_log_chars},
        "rendered_chars": len(log),
    }
    _remember_cuts(events, view, cuts)
    return JudgeInput(log, visible, cuts)


_RECENT_CUTS: OrderedDict[int, tuple[Sequence[Event], ViewSettings | int, dict[str, Any]]] = OrderedDict()
RECENT_CUTS = 512
"""Cuts of the last views built (more than one judge-stage chunk). Each entry holds its event list, so the id
it is found by cannot be reused while it is there."""


_RECENT_CUTS_LOCK = threading.Lock()  # the judge stage prepares two chunks at once, on two threads


def _remember_cuts(events: Sequence[Event], view: ViewSettings | int, cuts: dict[str, Any]) -> None:
    held = (events, view, copy.deepcopy(cuts))
    with _RECENT_CUTS_LOCK:
        _RECENT_CUTS[id(events)] = held
        _RECENT_CUTS.move_to_end(id(events))
        while len(_RECENT_CUTS) > RECENT_CUTS:
            _RECENT_CUTS.popitem(last=False)


def input_cuts(events: Sequence[Event], view: ViewSettings | int) -> dict[str, Any]:
    """`judge_input(events, view).cuts`. An arm records them on each judgment after it built the same
    view for the request: that view's cuts are reused instead of building it again."""
    held = _RECENT_CUTS.get(id(events))
    if held is not None and held[0] is events and held[1] == view:
        return copy.deepcopy(held[2])
    return judge_input(events, view).cuts
