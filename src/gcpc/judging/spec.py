"""What every judging arm shares: its configuration, its inputs, and the one judge-visible view of a log.

Equal information: an arm gets the task instruction (or the frozen checklist) and the trajectory's
events, and renders the events only through `gcpc.corpus.render.render_log`. Nothing here passes
on a trajectory's outcome, verifier results (`test_results`) or run metadata (harness, model,
condition, source, trial, ids, paths); tests/test_judging_arms.py asserts that no request carries them.
"""

from __future__ import annotations

import re

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc.errors import ParamsError
from gcpc.corpus.models import Event, Task, Trajectory
from gcpc.corpus.render import render_log, truncate_middle
from gcpc.corpus.authorship import authored_lines, line_authorship
from gcpc.corpus.authorship import mark_authored as mark_authored_text
from gcpc.judging.view import ViewSettings, judge_input
from gcpc.llm.prompts import LayoutTemplate
from gcpc.llm.schemas import fit_schema_limits
from gcpc.llm.tokens import TEMPLATE_TOKENS_PER_MESSAGE, count_tokens_once, server_token_counter
from gcpc.synthesis.models import Checklist


def visible_events(events: Sequence[Event], max_chars: int) -> list[dict[str, Any]]:
    """The events exactly as the rendered log shows them (same truncation), for rule-based judges;
    evidence events also list their agent-authored lines (`authorship.authored_lines`)."""
    out = [{"index": e.index, "kind": e.kind.value, "tool": e.tool, "is_error": e.is_error,
            "text": truncate_middle(e.text, max_chars)} for e in events]
    authored = authored_lines(out)
    for ev in out:
        if ev["kind"] in ("tool_output", "file_content"):
            ev["authored"] = sorted(authored.get(ev["index"], ()))
    return out


REDACTED = "[run metadata redacted]"
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"
"""The non-ASCII characters Python's case-insensitive regex matches to ASCII letters (İ ı ſ K: i, i, s, k)."""
LAYOUT = Path("prompts/judging/layout")
"""The judging layout every model arm shares (system block + log; prompts/judging/layout/README.md)."""


def resolve_layout(path: str | Path | None) -> Path:
    """`judging.layout` as configured; a relative path missing from the working directory is taken
    from the repository (so library callers outside the repository root get the committed layout)."""
    p = Path(path) if path else LAYOUT
    if p.is_absolute() or p.exists():
        return p
    return Path(__file__).resolve().parents[3] / p
REPLY_SCHEMAS = ("per_request", "generic")


def metadata_strings(traj: Trajectory) -> list[str]:
    """Run configuration as it may appear verbatim in a log: model ids (with provider prefix or '@'
    variants), the harness name. Longest first, so a model id is redacted before its parts."""
    found: set[str] = set()
    for model in filter(None, [traj.model]):
        for m in (model, model.split("/")[-1]):
            found.update({m, m.replace("@", "-")})
    if traj.harness:
        found.add(traj.harness)
    return sorted((s for s in found if len(s) >= 4 and s.lower() not in {"unknown", "none"}), key=lambda s: (-len(s), s))


def redact_run_metadata(traj: Trajectory) -> Trajectory:
    """The trajectory with its own model and harness names removed from every event.

    Logs sometimes print them (a launch command, a banner, an init record); no arm may see the run's
    configuration, so they are replaced before rendering, for every arm alike.
    """
    needles = metadata_strings(traj)
    if not needles:
        return traj
    pattern = re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE)
    # An ASCII text matches ASCII needles case-insensitively exactly when its lower case contains one of them
    # lower-cased (the regex's Unicode case folds, e.g. the Kelvin sign for k, need a non-ASCII character in
    # the text): a C substring search. The regex scan of every event took 2.8 s of a 32 s profile of the judge
    # stage on Terminal-Bench 1 (issue 29). Non-ASCII texts (or needles) take the regex as before.
    # A non-ASCII text matches the same way when it holds none of the four characters the regex folds onto ASCII
    # letters (U+0130, U+0131, U+017F, U+212A: the only ones; no other lower-cases to ASCII), so a terminal log's
    # box-drawing characters no longer send the whole text to the regex (issue 36).
    lowered = [n.lower() for n in needles] if all(n.isascii() for n in needles) else None

    def plain(text: str) -> bool:  # the lower-case search decides as the regex does
        return lowered is not None and (text.isascii() or not any(c in text for c in FOLDS_TO_ASCII))

    def mentions(text: str) -> bool:
        if plain(text):
            low = text.lower()
            return any(n in low for n in lowered)  # type: ignore[union-attr]
        return pattern.search(text) is not None

    def redacted(text: str) -> str:
        # pattern.sub(REDACTED, text) without the regex (an IGNORECASE alternation tries every needle at every
        # position: 0.8 ms an event on the TB1 logs that print their model; issue 36): the leftmost match, at one
        # position the first needle (the regex's alternation order), then on after it
        if not plain(text):
            return pattern.sub(REDACTED, text)
        assert lowered is not None
        low = text.lower()  # as long as the text: U+0130, the one character whose lower case is two, is not in it
        found = [low.find(n) for n in lowered]
        out, pos = [], 0
        while True:
            at, which = min(((p, i) for i, p in enumerate(found) if p >= 0), default=(-1, -1))
            if at < 0:
                break
            out += [text[pos:at], REDACTED]
            pos = at + len(lowered[which])
            found = [p if p < 0 or p >= pos else low.find(lowered[i], pos) for i, p in enumerate(found)]
        out.append(text[pos:])
        return "".join(out)

    # most logs never print their run's configuration: one search of all the texts together (joined by a character
    # no needle holds, so no match spans two events) settles it without a pass over the events (issue 36: 0.87 ms
    # of CPU per judge call went to the pass)
    if not any("\x00" in n for n in needles) and not mentions("\x00".join(e.text for e in traj.events)):
        return traj
    events = [e if not mentions(e.text) else e.model_copy(update={"text": redacted(e.text)})
              for e in traj.events]
    return traj.model_copy(update={"events": events})


def with_authored(visible: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Visible events with each evidence event's agent-authored lines listed (`authorship.authored_lines`)."""
    authored = authored_lines(visible)
    for ev in visible:
        if ev["kind"] in ("tool_output", "file_content"):
            ev["authored"] = sorted(authored.get(ev["index"], ()))
    return visible


def judge_view(events: Sequence[Event], view: ViewSettings | int, *, mark_authored: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """(rendered log for the prompt, the same events as structured inputs): all an arm may see of a trajectory.

    `view` is the arm's `ViewSettings` (harness setup dropped, installation collapsed, per-event cut,
    per-trajectory budget: `gcpc.judging.view`); a bare int is the per-event cut alone (= `render_log`).
    With `mark_authored` (extension `judging.mark_agent_authored`), agent-authored lines of tool
    outputs are prefixed `[agent-authored] ` in the rendered log, so an LLM judge can discount them."""
    shown = judge_input(events, view)
    visible = with_authored(shown.events)
    if not mark_authored:
        return shown.log, visible
    marks = line_authorship(visible)  # echoed and read-back lines alike
    marked = [e.model_copy(update={"text": mark_authored_text(v["text"], set(marks.get(v["index"], {})))})
              for e, v in zip(events, visible, strict=True)]
    return render_log(marked, max_chars=None), visible


def with_event_cap(view: ViewSettings | int, cap: int) -> ViewSettings | int:
    """The same view with another per-event cut."""
    return cap if isinstance(view, int) else view.model_copy(update={"max_event_chars": cap})


CONTEXT_MARGIN = 0.05
"""Share of the context window left free: the count is cl100k BPE (gcpc.llm.tokens), not the judge's own tokenizer."""
MIN_EVENT_CHARS = 200
"""No event is cut below this many characters to fit a window; a log that needs more is excluded."""


class LogTooLong(ValueError):
    """Even with every event cut to MIN_EVENT_CHARS the request would not fit the judge's context window."""


def fit_view(events: Sequence[Event], view: ViewSettings | int, llm_cfg: dict[str, Any], render: Any, *,
             mark_authored: bool = False) -> tuple[str, list[dict[str, Any]], Any, dict[str, Any] | None]:
    """The judge view fitted into the judge's `context_window` (tokens, from the llm config).

    `view` is the arm's `ViewSettings` (or a bare per-event cut); fitting lowers its per-event cut.
    `render(log) -> messages` renders the prompt around a log. Without a window, or when the prompt
    fits, this is `judge_view` unchanged. Otherwise the longest events are cut first: one
    per-event cap, the largest that fits (found by bisection, so deterministic), applied with the
    usual marked middle cut (`[... N chars truncated ...]`). Returns (log, visible events, messages,
    what was cut or None); raises LogTooLong when even MIN_EVENT_CHARS per event does not fit.
    """
    window = llm_cfg.get("context_window")
    max_chars = view if isinstance(view, int) else view.max_event_chars
    if mark_authored:
        log, visible = judge_view(events, view, mark_authored=True)
    else:  # judge_view's two halves, so the authorship scan runs once, on the view that is sent
        shown = judge_input(events, view)
        log, visible = shown.log, shown.events
    messages = render(log)
    if not window:
        return log, (visible if mark_authored else with_authored(visible)), messages, None
    # the window less the answer and, counting with cl100k, the configured margin (the model's own tokenizer
    # counts differently); with `tokenize_endpoint` the server counts in its own tokens, so no margin, only
    # the chat template's tokens around each message
    server = server_token_counter(llm_cfg)
    margin = 0.0 if server else float(llm_cfg.get("context_margin", CONTEXT_MARGIN))
    overhead = TEMPLATE_TOKENS_PER_MESSAGE if server else 0
    budget = int(int(window) * (1 - margin)) - int(llm_cfg.get("max_tokens") or 0)
    # each distinct message text is counted once per process (the system block, a view met twice, the same log in
    # every arm's requests: the cost estimate fits each arm's view and counts the requests with the same memo)
    count = count_tokens_once

    def tokens(msgs: Any) -> int:  # BPE counts: chars/4 runs 15-17 % low on these logs (bench/results/judge_input.json)
        if server:
            return sum(server.count(m.content) + overhead for m in msgs)
        return sum(count(m.content) for m in msgs)

    def fits(msgs: Any) -> bool:
        # a byte-level BPE token (or a SentencePiece piece) is at least one byte: a prompt of no more bytes than
        # the budget fits uncounted (counting was a third of a judge stage's CPU on Terminal-Bench 1; issue 29)
        return sum(len(m.content.encode("utf-8")) + overhead for m in msgs) <= budget or tokens(msgs) <= budget

    def probe(msgs: Any) -> tuple[bool, int | None]:
        # (fits, tokens when they were counted): the byte bound first, as `fits`
        if sum(len(m.content.encode("utf-8")) + overhead for m in msgs) <= budget:
            return True, None
        n = tokens(msgs)
        return n <= budget, n

    def log_at(cap: int) -> str:
        # the rendered log alone: the authorship scan is needed for it only when lines are marked
        capped = with_event_cap(view, cap)
        return judge_view(events, capped, mark_authored=True)[0] if mark_authored else judge_input(events, capped).log

    if fits(messages):
        return log, (visible if mark_authored else with_authored(visible)), messages, None
    needed = tokens(messages)
    longest = max((len(e.text) for e in events), default=0)
    lo, hi = MIN_EVENT_CHARS, min(max_chars, longest) if max_chars else longest
    smallest = tokens(render(log_at(lo)))
    if smallest > budget:
        raise LogTooLong(f"log does not fit the judge's context window ({window} tokens, {llm_cfg.get('max_tokens') or 0} "
                         f"for the answer): {smallest} tokens with every event cut to {MIN_EVENT_CHARS} characters")
    lo = _largest_fitting_cap(lo, hi, smallest, needed, budget, lambda cap: probe(render(log_at(cap))))
    log, visible = judge_view(events, with_event_cap(view, lo), mark_authored=mark_authored)
    messages = render(log)
    cut = [e.index for e in events if len(e.text) > lo]
    info = {"context_window": int(window), "tokens_before": needed, "tokens_after": tokens(messages), "event_cap_chars": lo,
            "events_cut": cut, "chars_removed": sum(len(e.text) - lo for e in events if len(e.text) > lo)}
    return log, visible, messages, info


def _largest_fitting_cap(lo: int, hi: int, t_lo: int, t_hi: int, budget: int, probe: Any) -> int:
    """The largest cap in [lo, hi] whose prompt fits, `lo` known to fit (with `t_lo` tokens) and `t_hi` the tokens at
    `hi` (a prompt that did not fit). The answer of a bisection over [lo, hi] (the prompt grows with the cap), found with
    fewer exact counts: each probe's cap is interpolated between the two nearest known counts (a prompt's tokens
    grow almost linearly with the cap), and a probe that does not at least halve the interval is followed by a
    bisection step, so no more than twice the bisection's probes are made; the interval is the same invariant as
    the bisection's (every cap <= lo fits as far as the search knows, every cap > hi does not)."""
    interpolate = True
    while lo < hi:
        width = hi - lo
        if interpolate and t_hi > t_lo:
            guess = lo + int((budget - t_lo) * (hi + 1 - lo) / (t_hi - t_lo))
            mid = min(max(guess, lo + 1), hi)
        else:
            mid = (lo + hi + 1) // 2
        ok, n = probe(mid)
        if ok:
            lo, t_lo = mid, (n if n is not None else t_lo)
        else:
            hi, t_hi = mid - 1, (n if n is not None else t_hi)
        interpolate = not interpolate or (hi - lo) * 2 <= width
    return lo


@dataclass(frozen=True)
class ArmSpec:
    """One configured arm (params.yaml `arm.<name>`).

    `template` is a Jinja file for single-prompt arms, or a folder for arms with several prompts
    (TICK: `generate.jinja` and `judge.jinja`), so dvc.yaml's `${item.template}` dep covers them all.
    """

    name: str
    kind: str
    template: Path
    evidence_gate: bool = False  # the paper's setting; the gate is the named extension arm gcpc_gate
    max_event_chars: int = 4000
    mark_authored: bool = False
    min_quote_chars: int = 4
    questions: tuple[str, ...] = ()
    feature: str | None = None
    """floor arms: which outcome-blind feature of the log is the score (judging.floor_arm.FLOORS)"""
    tail_events: int = 3
    """floor arms: how many trailing evidence events make "the last part of the log" (clean_tail)"""
    view: ViewSettings = field(default_factory=ViewSettings)
    layout: Path = LAYOUT
    """folder with the shared system block and log block (`judging.layout`; gcpc.llm.prompts.LayoutTemplate)"""
    reply_schema: str = "per_request"
    """`per_request` (default): each request carries the schema narrowed to it (gcpc.llm.schemas);
    `generic`: the response model's own schema, as before per-request schemas (for comparisons)."""
    calls_as: str = ""
    """`requests_of` in the arm's config: the arm whose requests this arm sends (configured the same but for
    settings applied to replies only, checked at composition: `gcpc.experiment.check_arms`). It names the
    requests' purpose, so both arms write byte-identical call stores, stored once (`gcpc_gate` sends
    `gcpc`'s requests; `gcpc.judging.stage.share_call_store`). Empty: the arm itself."""

    @property
    def requests_of(self) -> str:
        return self.calls_as or self.name

    def __post_init__(self) -> None:
        # `max_event_chars` is the authority for the per-event cut (callers set it directly)
        if self.view.max_event_chars != self.max_event_chars:
            object.__setattr__(self, "view", self.view.model_copy(update={"max_event_chars": self.max_event_chars}))

    def schema(self, per_request: dict[str, Any], model: type, llm_cfg: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON schema a request of this arm carries, fitted to the judge server's `schema_limits`."""
        schema = per_request if self.reply_schema == "per_request" else model.model_json_schema()
        return fit_schema_limits(schema, (llm_cfg or {}).get("schema_limits"))

    @classmethod
    def from_params(cls, name: str, cfg: dict[str, Any], judging: dict[str, Any]) -> ArmSpec:
        for key in ("kind", "template"):
            if key not in cfg:
                raise ParamsError(f"params.yaml: arm '{name}' is missing '{key}'")
        questions = cfg.get("questions") or []
        if not isinstance(questions, list) or not all(isinstance(q, str) and q.strip() for q in questions):
            raise ValueError(f"params.yaml: arm '{name}': 'questions' must be a list of non-empty strings")
        if len(set(questions)) != len(questions):
            raise ValueError(f"params.yaml: arm '{name}': 'questions' repeats a question")
        reply_schema = str(judging.get("reply_schema", "per_request"))
        if reply_schema not in REPLY_SCHEMAS:
            raise ValueError(f"params.yaml: judging.reply_schema must be one of {', '.join(REPLY_SCHEMAS)}, not {reply_schema!r}")
        return cls(name=name, kind=cfg["kind"], template=Path(cfg["template"]), reply_schema=reply_schema,
                   evidence_gate=bool(cfg.get("evidence_gate", False)),
                   max_event_chars=int(judging.get("max_event_chars", 4000)),
                   mark_authored=bool(judging.get("mark_agent_authored", False)),
                   min_quote_chars=int(judging.get("evidence_min_quote_chars", 4)),
                   questions=tuple(questions), feature=cfg.get("feature"), tail_events=int(cfg.get("tail_events", 3)),
                   view=ViewSettings.from_params(judging), layout=resolve_layout(judging.get("layout")),
                   calls_as=str(cfg.get("requests_of") or ""))

    def judge_template(self, path: Path | None = None) -> LayoutTemplate:
        """The arm's judge prompt (its template, or `path` inside a template folder) in the shared layout."""
        return LayoutTemplate(path or self.template, resolve_layout(self.layout))

    def template_file(self, name: str) -> Path:
        """A named prompt inside a template folder (e.g. TICK's 'generate.jinja')."""
        if not self.template.is_dir():
            raise NotADirectoryError(f"params.yaml: arm '{self.name}' (kind {self.kind}) needs 'template' to be a folder "
                                     f"holding {name}; got {self.template}")
        return self.template / name


@dataclass(frozen=True)
class ArmInputs:
    """Everything a judging arm may read."""

    trajectories: Sequence[Trajectory]
    checklists: dict[tuple[str, str], Checklist] = field(default_factory=dict)
    tasks: dict[tuple[str, str], Task] = field(default_factory=dict)


def task_key(traj: Trajectory) -> tuple[str, str]:
    return traj.benchmark, traj.task_id
