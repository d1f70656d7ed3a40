"""Floor arms: outcome-blind scores from the judge-visible log alone, with no model.

A checklist judge is only interesting if it knows more than a trivial reading of the log. Each
floor arm turns one such reading into a score in [0, 1] (higher = more likely PASS), so RQ1 can
put every judge arm beside the best of them (gcpc.analysis.floors). A floor sees exactly what a
judge sees: the trajectory after run-metadata redaction (judge_arm does it for every arm), through
`judge_view` with the arm's view settings (harness setup dropped, installation collapsed, per-event cut,
budget: gcpc.judging.view), and its judgments record the same `input_cuts`. It never reads the outcome, the verifier's
per-test results or any other Trajectory field. Definitions (docs/floors.md):

* `exit0_share`: share of agent steps (tool calls) whose displayed output shows the command exited 0
  (a tool output not marked `error` by the renderer and without a non-zero `<returncode>`); a call
  with no displayed result (timed out, never answered) did not visibly exit 0. The denominator is
  the number of tool outputs instead where a log shows more outputs than calls; 0 for no step.
* `steps`: number of agent steps (tool calls); fewer is better, score 1 / (1 + steps).
* `log_length`: characters of the rendered judge-visible log; shorter is better, score
  1 / (1 + chars / 1000).
* `clean_tail`: 1 when the last `tail_events` tool outputs / file contents exist and none shows an
  error (error mark, non-zero return code, or a pattern of the arm's error-pattern file), else 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gcpc.corpus.models import EVIDENCE_KINDS, EventKind
from gcpc.judging.models import Judgment
from gcpc.judging.spec import ArmInputs, ArmSpec, judge_view
from gcpc.judging.view import ViewSettings, input_cuts

PROVIDER = "none"
"""Floor judgments name no provider: no model was asked."""

RETURNCODE = re.compile(r"^\s*<returncode>(-?\d+)</returncode>")
PATTERNS_FILE = "error_patterns.txt"
EVIDENCE = {k.value for k in EVIDENCE_KINDS}


def load_patterns(path: Path) -> tuple[re.Pattern[str], ...]:
    """The error patterns of `clean_tail` (one regex a line; '#' comments and blank lines skipped)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: error-pattern file of the clean_tail floor is missing")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            out.append(re.compile(line))
        except re.error as exc:
            raise ValueError(f"{path}:{n}: not a regular expression ({exc}): {line!r}") from exc
    return tuple(out)


def failed(event: dict[str, Any]) -> bool:
    """Whether a visible tool output shows a failed command: the renderer's `error` mark, or a
    `<returncode>N</returncode>` header with N != 0 (mini-swe-agent prints it)."""
    m = RETURNCODE.match(event["text"])
    return bool(event["is_error"]) or (m is not None and int(m.group(1)) != 0)


@dataclass(frozen=True)
class FloorView:
    """What a floor reads: the rendered log and the visible events (judge_view's two halves)."""

    log: str
    events: list[dict[str, Any]]


def view(events: Sequence[Any], settings: ViewSettings | int) -> FloorView:
    log, visible = judge_view(events, settings)
    return FloorView(log=log, events=visible)


def features(v: FloorView, *, tail_events: int, patterns: Sequence[re.Pattern[str]]) -> dict[str, Any]:
    """Every floor feature of one judge-visible log (all four are stored with each floor judgment)."""
    outputs = [e for e in v.events if e["kind"] == EventKind.TOOL_OUTPUT.value]
    n_failed = sum(failed(e) for e in outputs)
    tail = [e for e in v.events if e["kind"] in EVIDENCE][-tail_events:] if tail_events > 0 else []
    tail_errors = [e["index"] for e in tail if failed(e) or any(p.search(e["text"]) for p in patterns)]
    return {
        "n_tool_calls": sum(e["kind"] == EventKind.TOOL_CALL.value for e in v.events),
        "n_tool_outputs": len(outputs),
        "n_exit0": len(outputs) - n_failed,
        "log_chars": len(v.log),
        "n_tail": len(tail),
        "tail_error_events": tail_errors,
    }


def _exit0(f: dict[str, Any]) -> tuple[float, str]:
    n = max(f["n_tool_calls"], f["n_tool_outputs"])
    return (f["n_exit0"] / n if n else 0.0), f"{f['n_exit0']} of {n} agent steps show an exit 0"


def _steps(f: dict[str, Any]) -> tuple[float, str]:
    return 1.0 / (1.0 + f["n_tool_calls"]), f"{f['n_tool_calls']} agent steps (tool calls)"


def _log_length(f: dict[str, Any]) -> tuple[float, str]:
    return 1.0 / (1.0 + f["log_chars"] / 1000.0), f"{f['log_chars']} characters of judge-visible log"


def _clean_tail(f: dict[str, Any]) -> tuple[float, str]:
    if not f["n_tail"]:
        return 0.0, "no tool output or file content to end on"
    if f["tail_error_events"]:
        return 0.0, f"error in the last {f['n_tail']} evidence events (events {f['tail_error_events']})"
    return 1.0, f"no error in the last {f['n_tail']} evidence events"


FLOORS: dict[str, Callable[[dict[str, Any]], tuple[float, str]]] = {
    "exit0_share": _exit0,
    "steps": _steps,
    "log_length": _log_length,
    "clean_tail": _clean_tail,
}
"""Feature name -> (score in [0, 1], higher = more likely PASS; a one-line reason)."""


def floor_score(v: FloorView, feature: str, *, tail_events: int, patterns: Sequence[re.Pattern[str]]) -> tuple[float, str, dict[str, Any]]:
    if feature not in FLOORS:
        raise ValueError(f"floor feature '{feature}' is unknown (known: {', '.join(FLOORS)})")
    f = features(v, tail_events=tail_events, patterns=patterns)
    score, reason = FLOORS[feature](f)
    return score, reason, f


def judge_floor_arm(inputs: ArmInputs, *, arm: ArmSpec, llm_cfg: dict[str, Any] | None = None,
                    client: Any = None) -> list[Judgment]:
    """Score every trajectory with the arm's floor feature; no client call is made."""
    if arm.feature not in FLOORS:
        raise ValueError(f"params.yaml: arm '{arm.name}' (kind floor) needs 'feature', one of {', '.join(FLOORS)}; got {arm.feature!r}")
    if not arm.template.is_dir():
        raise NotADirectoryError(f"params.yaml: arm '{arm.name}' (kind floor) needs 'template' to be a folder holding {PATTERNS_FILE}; "
                                 f"got {arm.template}")
    patterns = load_patterns(arm.template / PATTERNS_FILE)
    out = []
    for traj in inputs.trajectories:
        score, reason, feats = floor_score(view(traj.events, arm.view), arm.feature, tail_events=arm.tail_events,
                                           patterns=patterns)
        out.append(Judgment(trajectory_id=traj.trajectory_id, benchmark=traj.benchmark, task_id=traj.task_id, arm=arm.name,
                            kind=arm.kind, checklist_hash="", provider=PROVIDER, model=f"floor:{arm.feature}", request_key=None,
                            status="ok", evidence_gate=False, score=score, rationale=reason, floor=feats,
                            input_cuts=input_cuts(traj.events, arm.view)))
    return sorted(out, key=lambda j: j.trajectory_id)
