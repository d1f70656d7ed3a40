"""Heuristic checklist generation: requirement sentences of the instruction become items.

Rules (stated here once, summarised in docs/heuristic-provider.md):
  * Units: Markdown headings and fenced code are not requirements; each list item is a unit;
    paragraphs split into sentences. A unit is a requirement when it carries a requirement cue
    (modal or imperative verb) or is a list item, has at least four words, and is not a bare
    lead-in ending with ':' without any concrete token.
  * Quote: the unit's text exactly as it appears in the instruction (list marker excluded).
  * Text: the unit with Markdown emphasis removed; when a fenced block follows the unit, the
    JSON-like keys it names are appended as expected fields.
  * Route: `assertion` when some verifier test's source contains one of the unit's concrete tokens
    (three or more characters), referencing every such test; otherwise `generated` when the unit has
    concrete tokens (a deterministic check could be written); otherwise `judge`.
  * Category: the category whose cue word appears earliest in the unit; comprehension by default.
  * Regeneration: told that the count gate failed low, every sentence of four or more words counts
    (no cue needed) and clauses are split at '; ', ', and ', ' and then '; told it failed high, only
    units with concrete tokens are kept, in order, up to the maximum.
"""

from __future__ import annotations

import re
from typing import Any

from gcpc.llm.heuristic.tokens import concrete_tokens, strip_list_marker, words

_CUES = re.compile(
    r"\b(must|should|need|needs|required|requires|ensure|make sure|save|saves|write|writes|create|output|"
    r"generate|compute|calculate|produce|use|return|include|report|store|find|parse|extract|identify|"
    r"read|load|convert|implement|set|configure|add|remove|update|fix|install|run|sort|count|list|"
    r"keep|exclude|round|format|print|reference|filter|merge|validate|verify|check)\b",
    re.IGNORECASE,
)

CATEGORY_CUES: dict[str, tuple[str, ...]] = {
    "acquisition": ("read", "load", "parse", "extract", "download", "fetch", "identify", "find", "look up", "reference", "open", "inspect"),
    "computation": ("calculate", "compute", "count", "sum", "average", "mean", "estimate", "formula", "total", "ratio", "round", "aggregate", "median"),
    "construction": ("save", "write", "create", "generate", "output", "produce", "build", "implement", "store", "report", "format", "configure", "install", "set up", "convert", "sort", "merge"),
    "validation": ("verify", "check", "test", "validate", "ensure", "accuracy", "tolerance", "within", "correct", "must not", "exclude"),
}

_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"(])")
_KEY = re.compile(r"\"([A-Za-z_][\w\-]*)\"\s*:")
_EMPHASIS = re.compile(r"\*\*|__")


def _units(instruction: str) -> list[tuple[str, bool, list[str]]]:
    """(unit text verbatim, is_list_item, keys of a fenced block that follows it)."""
    units: list[tuple[str, bool, list[str]]] = []
    in_fence = False
    fence_lines: list[str] = []
    for raw in instruction.splitlines():
        if _FENCE.match(raw):
            if in_fence:
                keys = _KEY.findall("\n".join(fence_lines))
                if units and keys:
                    text, is_item, old = units[-1]
                    units[-1] = (text, is_item, old + [k for k in keys if k not in old])
                fence_lines = []
            in_fence = not in_fence
            continue
        if in_fence:
            fence_lines.append(raw)
            continue
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("|"):
            continue
        is_item = strip_list_marker(line) != line
        body = strip_list_marker(line).strip()
        pieces = [body] if is_item else [s.strip() for s in _SENTENCE_SPLIT.split(body) if s.strip()]
        units.extend((p, is_item, []) for p in pieces)
    return units


def _is_requirement(text: str, is_item: bool) -> bool:
    if len(words(text)) < 4:
        return False
    if text.rstrip().endswith(":") and not concrete_tokens(text):
        return False
    return is_item or bool(_CUES.search(text))


def _split_clauses(text: str) -> list[str]:
    parts = re.split(r";\s+|,\s+and\s+|\s+and then\s+", text)
    return [p.strip() for p in parts if len(words(p)) >= 4]


def _category(text: str) -> str:
    lowered = text.lower()
    best, best_pos = "comprehension", len(lowered) + 1
    for category, cues in CATEGORY_CUES.items():
        for cue in cues:
            m = re.search(rf"\b{re.escape(cue)}", lowered)
            if m and m.start() < best_pos:
                best, best_pos = category, m.start()
    return best


def _linked_tests(tokens: list[str], tests: list[dict[str, Any]]) -> list[str]:
    anchors = [t.lower() for t in tokens if len(t) >= 3]
    return [t["id"] for t in tests if any(a in t["source"].lower() for a in anchors)]


def generate_checklist(inputs: dict[str, Any]) -> dict[str, Any]:
    instruction: str = inputs["instruction"]
    tests: list[dict[str, Any]] = inputs.get("tests", [])
    limits = inputs.get("limits", {})
    max_items = int(limits.get("max_items", 15))
    rejected: set[str] = set(inputs.get("previous_rejections", []))

    candidates: list[tuple[str, list[str]]] = []
    for text, is_item, keys in _units(instruction):
        relaxed = "count_low" in rejected and len(words(text)) >= 4
        if not (_is_requirement(text, is_item) or relaxed):
            continue
        pieces = _split_clauses(text) if "count_low" in rejected else [text]
        for piece in pieces or [text]:
            candidates.append((piece, keys))
    if "count_high" in rejected:
        candidates = [c for c in candidates if concrete_tokens(c[0])][:max_items]

    items = []
    seen: set[str] = set()
    for quote, keys in candidates:
        if quote in seen:
            continue
        seen.add(quote)
        text = _EMPHASIS.sub("", quote).rstrip(":").strip()
        if keys:
            text += " (expected fields: " + ", ".join(f"`{k}`" for k in keys) + ")"
        tokens = concrete_tokens(quote) + keys
        refs = _linked_tests(tokens, tests)
        route = "assertion" if refs else ("generated" if tokens else "judge")
        items.append({"text": text, "quote": quote, "route": route, "test_refs": refs, "category": _category(quote)})
    return {"items": items}
