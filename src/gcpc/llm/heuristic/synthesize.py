"""Heuristic checklist generation: requirement sentences of the instruction become items.

Rules (stated here once, summarised in docs/heuristic-provider.md):
  * Units: Markdown headings, tables and fenced code are not requirements; the lines of one
    paragraph or list item are joined; each list item is a unit; paragraphs split into sentences.
    A unit is a requirement when it carries a requirement cue (modal or imperative verb) or is a
    list item, has at least four word tokens and at least three whitespace-separated words (the
    quote gate's minimum span), and is not a bare lead-in ending with ':' without any concrete
    token.
  * Quote: the unit's text as it appears in the instruction (list marker excluded; a sentence
    joined from hard-wrapped lines differs from it in whitespace only).
  * Text: the unit with Markdown emphasis removed; when a fenced block follows the unit, the
    JSON-like keys it names are appended as expected fields.
  * Route: `assertion` when some verifier test is linked to the unit, referencing every linked
    test. A test is linked when its source contains one of the unit's concrete tokens (three or
    more characters), or when its function name contains a distinctive word of the unit (same
    stem, seven or more letters, not a word every test name uses). Otherwise `judge` when the unit
    has no concrete token and asks for a qualitative property or a way of working (QUALITATIVE);
    otherwise `generated` (a deterministic check of the stated outcome could be written).
  * No category: the request carries no category scheme (synthesis is blind to it); the
    category audit (heuristic/audit.py) assigns categories with `assign_category` below.
  * Count: one item per requirement unit, however many or few; an instruction with none gets an
    empty checklist (the same on every attempt: nothing is padded).
  * Regeneration, driven by the gate rejections of earlier attempts (never by the gates' code):
      - test restatement: items are stated as their quotes, without the appended expected fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gcpc.llm.base import ProviderError
from gcpc.llm.heuristic.tokens import concrete_tokens, strip_list_marker, words

_CUES = re.compile(
    r"\b(must|should|need|needs|required|requires|ensure|make sure|save|saves|write|writes|create|output|"
    r"generate|compute|calculate|produce|use|return|include|report|store|find|parse|extract|identify|"
    r"read|load|convert|implement|set|configure|add|remove|update|fix|install|run|sort|count|list|"
    r"keep|exclude|round|format|print|reference|filter|merge|validate|verify|check|please|train|fit|build|"
    r"start|compile|download|retrieve|transcribe|solve|fill|replace|rename|delete|deploy|serve|launch|"
    r"recover|restore|optimize|predict|classify|detect|translate|determine|estimate|plot|render|encode|"
    r"decode|decrypt)\b",
    re.IGNORECASE,
)

QUALITATIVE = re.compile(
    r"\b(clear|clearly|clean|readable|easy[- ]to[- ]read|concise|proper|properly|appropriate|reasonable|sensible|"
    r"meaningful|professional|polished|elegant|idiomatic|natural|high[- ]quality|quality|style|helpful|"
    r"informative|faithful|intuitive|maintainable|best practices?|good practices?|explain|describe|justify|"
    r"discuss|summari[sz]e|interpret|hard-?code|hard-?coded|by hand|manually|yourself|from scratch|"
    r"without using|do not (?:use|look|search|access|cheat|copy))\b",
    re.IGNORECASE,
)

STOPWORDS = frozenset("""
a an the and or nor but if then than else so as of to in on at by for from into onto over under
up down out off about above below between through during before after again further once per via
with within upon across along around behind beyond toward towards among against like near since
until while whether though although because whereas however thus therefore hence now
is are was were be been being am do does did doing done have has had having will would shall
should can could may might must need needs ought
it its itself this that these those there here what which who whom whose when where why how
all any each every some both either neither few many much more most less least other another
such same own very also just too even still yet already ever
i me my we us our you your he him his she her they them their one ones e g eg ie etc
""".split())
"""English function words (articles, pronouns, auxiliaries and modals, prepositions, conjunctions,
quantifiers): never cue words of a category definition. Negations and restrictions (not, no, only,
without, except, unless) are content: they state constraints."""

GENERIC_TEST_WORDS = frozenset({"test", "tests", "testing", "output", "outputs", "exists", "correct", "correctly",
                                "valid", "format", "result", "results", "basic", "works", "check", "checks"})
"""Test-name words that say nothing about which requirement a test checks."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"(])")
_KEY = re.compile(r"\"([A-Za-z_][\w\-]*)\"\s*:")
_EMPHASIS = re.compile(r"\*\*|__")
_SUFFIXES = (("ications", "i"), ("ication", "i"), ("ations", ""), ("ation", ""), ("ating", ""), ("ated", ""),
             ("ates", ""), ("ate", ""), ("ically", ""), ("ally", ""), ("ings", ""), ("ing", ""), ("ions", ""),
             ("ion", ""), ("ies", "i"), ("ied", "i"), ("acy", ""), ("ly", ""), ("ed", ""), ("es", ""), ("s", ""),
             ("e", ""), ("y", "i"))
_ALPHA = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Unit:
    text: str
    is_item: bool
    keys: tuple[str, ...] = field(default=())


# --- words, stems and category cues --------------------------------------------------------


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Crude, documented suffix stripping: at most two suffixes (the first listed that leaves three or
    more letters; -ies/-ied/-ication/-y become -i), then a doubled final consonant other than l, s, z
    is undoubled. compute/computing/computation -> comput; verify/verified/verification -> verifi;
    parse/parsing -> pars; formatting -> format."""
    w = word.lower()
    for _ in range(2):
        for suf, repl in _SUFFIXES:
            if w.endswith(suf) and len(w) - len(suf) >= 3 and w[: -len(suf)] + repl != w:
                w = w[: -len(suf)] + repl
                break
        else:
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouylsz":
        w = w[:-1]
    return w


def content_words(text: str) -> list[str]:
    """Lower-cased alphabetic words of three or more letters that are not function words, in order."""
    return [w for w in _ALPHA.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS]


def cue_index(scheme: list[dict[str, str]]) -> dict[str, str]:
    """stem -> category name, from the definition texts only; a shared stem belongs to the first listed."""
    index: dict[str, str] = {}
    for cat in scheme:
        for w in content_words(cat["definition"]):
            index.setdefault(stem(w), cat["name"])
    return index


def assign_category(text: str, index: dict[str, str]) -> tuple[str | None, str | None]:
    """(category, deciding word): the category owning the earliest word of `text` that is a cue."""
    for w in content_words(text):
        cat = index.get(stem(w))
        if cat is not None:
            return cat, w
    return None, None


# --- requirement units ---------------------------------------------------------------------


def instruction_units(instruction: str) -> list[Unit]:
    """Every candidate unit: list items and sentences outside headings, tables and fenced code.

    Lines of one paragraph or one list item are joined first (hard-wrapped text is one block), so
    a sentence broken across lines is one unit; its quote then differs from the instruction in
    whitespace only.
    """
    blocks: list[list[Any]] = []  # [text, is_item, keys]
    open_block = False
    in_fence = False
    fence_lines: list[str] = []
    for raw in instruction.splitlines():
        if _FENCE.match(raw):
            if in_fence:
                keys = _KEY.findall("\n".join(fence_lines))
                if blocks and keys:
                    blocks[-1][2] += [k for k in keys if k not in blocks[-1][2]]
                fence_lines = []
            in_fence = not in_fence
            open_block = False
            continue
        if in_fence:
            fence_lines.append(raw)
            continue
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("|"):
            open_block = False
            continue
        body = strip_list_marker(line).strip()
        if body != line:
            blocks.append([body, True, []])
            open_block = True
        elif open_block:
            blocks[-1][0] += " " + line
        else:
            blocks.append([line, False, []])
            open_block = True
    units: list[Unit] = []
    for text, is_item, keys in blocks:
        pieces = [text] if is_item else [p.strip() for p in _SENTENCE_SPLIT.split(text) if p.strip()]
        units.extend(Unit(p, is_item, tuple(keys) if i == len(pieces) - 1 else ()) for i, p in enumerate(pieces))
    return units


def is_requirement(text: str, is_item: bool) -> bool:
    if len(words(text)) < 4 or sum(bool(re.search(r"\w", w)) for w in text.split()) < 3:
        return False
    if text.rstrip().endswith(":") and not concrete_tokens(text):
        return False
    return is_item or bool(_CUES.search(text))


def requirement_units(instruction: str) -> list[Unit]:
    """The instruction's stated requirements by the first-attempt rule."""
    return [u for u in instruction_units(instruction) if is_requirement(u.text, u.is_item)]


# --- routes --------------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _name_stems(name: str) -> frozenset[str]:
    base = name.split("[", 1)[0]
    return frozenset(stem(w) for w in re.split(r"[_\W]+", base.lower()) if w and w not in GENERIC_TEST_WORDS)


def linked_tests(text: str, tokens: list[str], tests: list[dict[str, Any]]) -> list[str]:
    anchors = [t.lower() for t in tokens if len(t) >= 3]
    distinctive = {stem(w) for w in content_words(text) if len(w) >= 7 and w not in GENERIC_TEST_WORDS}
    linked = []
    for t in tests:
        name = t["id"].rsplit("::", 1)[-1]
        if any(a in t["source"].lower() for a in anchors) or distinctive & _name_stems(name):
            linked.append(t["id"])
    return linked


def route_of(quote: str, tokens: list[str], refs: list[str]) -> str:
    if refs:
        return "assertion"
    if not tokens and QUALITATIVE.search(quote):
        return "judge"
    return "generated"


# --- the handler ---------------------------------------------------------------------------


def generate_checklist(inputs: dict[str, Any]) -> dict[str, Any]:
    instruction: str = inputs["instruction"]
    tests: list[dict[str, Any]] = inputs.get("tests", [])
    if "category_scheme" in inputs:
        raise ProviderError("checklist request carries a category scheme: synthesis must not see it (paper §3.2)")
    history: list[list[str]] = inputs.get("rejection_history", [])
    rejected = set(inputs.get("previous_rejections", [])).union(*history)

    items = []
    seen: set[str] = set()
    for unit in requirement_units(instruction):
        quote = unit.text
        if quote in seen:
            continue
        seen.add(quote)
        text = _EMPHASIS.sub("", quote).rstrip(":").strip()
        if unit.keys and "no_test_restatement" not in rejected:
            text += " (expected fields: " + ", ".join(f"`{k}`" for k in unit.keys) + ")"
        tokens = concrete_tokens(quote) + list(unit.keys)
        refs = linked_tests(quote, tokens, tests)
        items.append({"text": text, "quote": quote, "route": route_of(quote, tokens, refs), "test_refs": refs})
    return {"items": items}
