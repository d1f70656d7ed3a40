"""Heuristic item judging: search the displayed environment state for each item's anchors.

Rules (summarised in docs/heuristic-provider.md):
  * Anchors are the concrete tokens of the item text (see tokens.py), except bare alphabetic
    words shorter than five letters (`unit`, `code`), which match too much prose. No anchor: Abstain.
  * Only tool-output and file-content events are searched; agent messages, tool calls and
    system events are never evidence, so a claim the agent only states earns nothing.
  * A line that addresses an evaluator, judge or grader is data aimed at the judge, not displayed
    state: it is never evidence (the judging prompts tell an LLM to ignore such text; this is the rule).
  * Evidence is achieved state (`not_state_lines`): in a diff, a removed line (`-`) and an unchanged
    context line are never evidence (only added `+` lines show what the files now hold); a listing
    of program source (SOURCE_SUFFIXES; the output of `cat`, `nl`, `sed -n`, `head`, `tail`, `grep` ...
    and nothing else, or a file-content event) of a file the agent had not changed before is never
    evidence (reading
    code is not doing it); and an anchor inside text the agent wrote into a program and then
    printed (`print("SUCCESS: ...")`, authorship.program_literals) is not a mention.
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

from gcpc.corpus.authorship import Restatement, program_literals, shell_tokens
from gcpc.llm.heuristic.tokens import concrete_tokens
from gcpc.llm.schemas import QUOTE_MAX_CHARS

EVIDENCE_KINDS = {"tool_output", "file_content"}

CONTRARY = re.compile(
    r"traceback|\berror\b|errno|exception|no such file|not found|cannot|can't|could not|"
    r"\bfailed\b|\bfailure\b|permission denied|\binvalid\b|does not exist|missing|mismatch|assertionerror",
    re.IGNORECASE,
)

ADDRESSED_TO_EVALUATOR = re.compile(r"\b(?:evaluators?|judges?|graders?)\b", re.IGNORECASE)


_DISPLAY = frozenset({"cat", "nl", "head", "tail", "sed", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "awk",
                      "bat", "view", "cd", "ls", "find", "wc", "sort", "uniq", "cut", "git", "echo", "true", "xargs"})
"""Commands whose output only displays existing files (with `sed` only without -i, `git` only show/grep/blame/log)."""
_WRITE_MARK = re.compile(r"sed\s+-i|perl\s+-[a-z]*i|>>?\s*\S|\btee\b|\.write\(|write_text\(|open\([^)]*['\"][wa]\+?['\"]|"
                         r"\bpatch\b|git\s+(?:apply|checkout|stash|am)|\bmv\b|\bcp\b|str_replace|^(?:Write|Edit|MultiEdit|Create): ",
                         re.M)
_PATHLIKE = re.compile(r"[\w./-]*[\w-]\.[A-Za-z]{1,5}\b|(?:[\w.-]+/)+[\w.-]+")
_GREP_PREFIX = re.compile(r"^([\w./-]+\.[A-Za-z]{1,5})[:-]\d+[:-]")
SOURCE_SUFFIXES = frozenset("py pyx pyi c h cc cpp cxx hpp java js mjs ts jsx tsx go rs rb php pl pm scala kt swift jl lua cs "
                            "r m f f90 hs ml ex exs erl clj".split())
"""Extensions of program source: a listing of such a file the agent had not changed shows the code it read, not
what it achieved. Data and output files (json, csv, txt, logs) stay evidence when displayed: they are state."""
_NOT_STATE_MEMO: dict[int, tuple[list[dict[str, Any]], dict[int, set[int]], list[str], dict[int, set[int]]]] = {}


def _basenames(text: str) -> set[str]:
    return {m.group(0).rsplit("/", 1)[-1] for m in _PATHLIKE.finditer(text)}


def _paths(text: str) -> set[str]:
    return {m.group(0).lstrip("./") for m in _PATHLIKE.finditer(text)}


def _is_changed(path: str, changed: set[str]) -> bool:
    """The path (or a path it ends with, or that ends with it) was named by a call that writes files."""
    return any(c == path or c.endswith("/" + path) or path.endswith("/" + c) for c in changed)


def _listing_files(call: str) -> set[str] | None:
    """The files a call only displays (basenames), or None when it does more than display files."""
    first, _, _ = call.partition("\n")
    if first.startswith("Read: "):
        return _paths(first[6:])
    cmd = re.sub(r"^(?:Bash(?: \([^\n]*?\))?: |\$ )", "", call)
    if "<<" in cmd or _WRITE_MARK.search(cmd):
        return None
    try:
        tokens = shell_tokens(cmd)
    except ValueError:
        return None
    files: set[str] = set()
    starting = True
    for tok in tokens:
        if tok in ("|", "&&", ";", "||"):
            starting = True
            continue
        if starting:
            if tok not in _DISPLAY:
                return None
            starting = False
            continue
        if not tok.startswith("-"):
            files |= _paths(tok)
    return files or None


def not_state_lines(events: list[dict[str, Any]]) -> tuple[dict[int, set[int]], list[str]]:
    """(per evidence event index: line numbers that are not achieved state, program literals of the whole log):
    removed and context lines of a diff; the lines of a listing of files the agent had not changed before it."""
    skip, literals, _ = _scan(events)
    return skip, literals


def code_lines(events: list[dict[str, Any]]) -> dict[int, set[int]]:
    """Per evidence event: the lines that display program source and are kept as evidence (a diff's added
    lines; a listing of source the agent changed). Their words (`Error`, `raise`, `except`) are code, so such a
    line never reads as a failure."""
    return _scan(events)[2]


def _scan(events: list[dict[str, Any]]) -> tuple[dict[int, set[int]], list[str], dict[int, set[int]]]:
    memo = _NOT_STATE_MEMO.get(id(events))
    if memo is not None and memo[0] is events:
        return memo[1], memo[2], memo[3]
    out: dict[int, set[int]] = {}
    code: dict[int, set[int]] = {}
    literals: dict[str, None] = {}  # ordered, de-duplicated
    changed: set[str] = set()
    listing: set[str] | None = None
    for ev in events:
        kind, text = ev["kind"], ev["text"]
        if kind == "tool_call":
            if _WRITE_MARK.search(text) or "<<" in text:
                changed |= _paths(text)
            literals.update(dict.fromkeys(program_literals(text)))
            listing = _listing_files(text)
            continue
        if kind not in EVIDENCE_KINDS:
            continue
        lines = text.splitlines()
        drop: set[int] = set()
        keep_code: set[int] = set()
        in_hunk = False
        for n, line in enumerate(lines):
            if line.startswith("@@") and "@@" in line[2:]:
                in_hunk = True
                drop.add(n)
                continue
            if line.startswith(("diff --git", "--- a/", "--- /", "+++ ", "index ")):
                in_hunk = False
                drop.add(n)
                continue
            if in_hunk:
                if line.startswith(("-", " ", "\\")) or not line:
                    drop.add(n)
                elif line.startswith("+"):
                    keep_code.add(n)
                else:
                    in_hunk = False
        if kind == "file_content" or listing is not None:
            shown = listing if (listing is not None and kind != "file_content") else _paths(text.partition("\n")[0])
            for n, line in enumerate(lines):
                m = _GREP_PREFIX.match(line.strip())
                files = {m.group(1).lstrip("./")} if m else shown
                source = {f for f in files if f.rsplit(".", 1)[-1].lower() in SOURCE_SUFFIXES}
                if source and not all(_is_changed(f, changed) for f in source):
                    drop.add(n)
                elif source:
                    keep_code.add(n)
        if kind == "tool_output":
            listing = None
        if drop:
            out[ev["index"]] = drop
        if keep_code - drop:
            code[ev["index"]] = keep_code - drop
    _NOT_STATE_MEMO.clear()
    found = list(literals)
    _NOT_STATE_MEMO[id(events)] = (events, out, found, code)
    return out, found, code


def without_literals(line: str, literals: list[str]) -> str:
    """The lower-cased line with every program literal the agent wrote (and its program printed) removed."""
    low = " ".join(line.lower().replace("`", "").replace("*", "").split())
    for lit in literals:
        if lit in low:
            low = low.replace(lit, " ")
    return low


QUOTE_WINDOW = QUOTE_MAX_CHARS - 20
"""A quote is the verbatim line, or, for a longer line, the verbatim window of QUOTE_WINDOW characters around the
anchor: the schema caps a quote at QUOTE_MAX_CHARS, and a quote cut with "…" is not found in the event by the
evidence gate (the one SWE-bench downgrade of that kind, a 798-character HTML line)."""
MIN_QUOTE_CHARS = 4
"""Lines with fewer non-space characters are never evidence: the evidence gate refuses such quotes."""


def quote_of(line: str, anchor: str | None = None) -> str:
    if len(line) <= QUOTE_WINDOW:
        return line
    at = line.lower().find(anchor.lower()) if anchor else -1
    start = 0 if at < 0 else max(0, min(at - (QUOTE_WINDOW - len(anchor or "")) // 2, len(line) - QUOTE_WINDOW))
    return line[start:start + QUOTE_WINDOW].strip()


def anchors_of(text: str) -> list[str]:
    return [t for t in concrete_tokens(text) if not (t.isalpha() and len(t) < 5)]


_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")


def evidence_lines(events: list[dict[str, Any]], restated: Callable[[str], bool] | None = None, numbered: bool = False
                   ) -> Iterator[tuple[dict[str, Any], Any]]:
    """(event, stripped line) for every non-empty line of a tool output or file content, in log order,
    leaving out lines that address an evaluator, judge or grader, lines the agent wrote itself
    (the event's `authored` line numbers: echoed, heredoc, a file it wrote read back) and lines that
    restate the task (`restated`)."""
    not_state, _ = not_state_lines(events)
    for ev in events:
        if ev["kind"] not in EVIDENCE_KINDS:
            continue
        authored = set(ev.get("authored") or ()) | not_state.get(ev["index"], set())
        for n, line in enumerate(ev["text"].splitlines()):
            stripped = line.strip()
            if (len("".join(stripped.split())) >= MIN_QUOTE_CHARS and n not in authored and not ADDRESSED_TO_EVALUATOR.search(stripped)
                    and not (restated is not None and restated(stripped))):
                yield ev, ((n, stripped) if numbered else stripped)


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
    _, literals, code = _scan(events)
    numeric = re.compile(rf"(?<![\w.]){re.escape(needle)}(?![\w]|\.\d)") if _NUMERIC.fullmatch(needle) else None
    out = []
    for ev, line in evidence_lines(events, restated, numbered=True):
        n, line = line
        low = line.lower()
        if needle not in low or (numeric is not None and not numeric.search(low)):
            continue
        if literals and needle not in without_literals(line, literals):
            continue
        is_code = n in code.get(ev["index"], ())
        out.append((ev["index"], line, False if is_code else reads_as_failure(line, ev, needle)))
    return out


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
        return "No", [{"event_index": idx, "quote": quote_of(line, anchor)}], f"The latest displayed mention of '{anchor}' is a failure."
    if shown and len(shown) * 2 >= len(anchors):
        evidence = [{"event_index": idx, "quote": quote_of(line, anchor)} for anchor, idx, line in shown[:3]]
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
