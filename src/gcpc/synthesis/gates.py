"""Mechanical gates every generated item must pass before a checklist is frozen.

Each gate is deterministic and names the item it rejects. Code never repairs an item:
a task with a rejected item is regenerated (see generate.py), with every attempt logged.

Normalisation for the quote gate is whitespace only: runs of whitespace (spaces, tabs, line
breaks) compare equal to one space, and leading/trailing whitespace is ignored. Case,
punctuation and Markdown are compared exactly.

Restatement rule: an item restates test code when its text contains code syntax (`assert`,
`==`, `!=`, `def test_`, `self.`) beyond what its instruction quote already contains, or when it shares a contiguous run of at least
RESTATE_MIN_RUN word tokens with a test's code that covers at least RESTATE_MIN_SHARE of the
item's words. "Code" is the test source without docstrings and comments: verifier docstrings
often paraphrase the instruction, and quoting the instruction is what items must do.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from gcpc.corpus.models import VerifierTest
from gcpc.llm.heuristic.tokens import words
from gcpc.llm.schemas import GeneratedItem

GateName = Literal["quote_verbatim", "assertion_ref", "no_test_restatement", "item_count"]

RESTATE_MIN_RUN = 8
RESTATE_MIN_SHARE = 0.6
_CODE_SYNTAX = re.compile(r"\bassert\b|==|!=|\bdef test_|\bself\.")


class GateResult(BaseModel):
    gate: GateName
    item_index: int | None = None
    passed: bool
    message: str


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


def quote_in_instruction(quote: str, instruction: str) -> bool:
    q = normalize_ws(quote)
    return bool(q) and q in normalize_ws(instruction)


def resolve_test_ref(ref: str, tests: Sequence[VerifierTest]) -> str | None:
    """A reference resolves when it equals a test id, or is its unambiguous `Class::method` / function / param suffix."""
    ids = [t.id for t in tests]
    if ref in ids:
        return ref
    matches = [i for i in ids if i.endswith("::" + ref)]
    return matches[0] if len(matches) == 1 else None


@lru_cache(maxsize=4096)
def code_only(source: str) -> str:
    """Test source without docstrings and comments (falls back to the raw text if it does not parse)."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _longest_common_run(a: list[str], b: list[str]) -> int:
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def restates_test(text: str, tests: Sequence[VerifierTest], quote: str = "") -> str | None:
    if len(_CODE_SYNTAX.findall(text)) > len(_CODE_SYNTAX.findall(quote)):
        return "item text contains test-code syntax"
    item_words = words(text)
    if not item_words:
        return None
    for test in tests:
        run = _longest_common_run(item_words, words(code_only(test.source)))
        if run >= RESTATE_MIN_RUN and run / len(item_words) >= RESTATE_MIN_SHARE:
            return f"item text repeats {run} consecutive words of {test.id}"
    return None


def check_items(
    items: Sequence[GeneratedItem],
    instruction: str,
    tests: Sequence[VerifierTest],
    *,
    min_items: int,
    max_items: int,
) -> list[GateResult]:
    results: list[GateResult] = []
    for i, item in enumerate(items):
        ok = quote_in_instruction(item.quote, instruction)
        results.append(GateResult(gate="quote_verbatim", item_index=i, passed=ok,
                                  message="quote found in instruction" if ok else f"item {i}: quote not found verbatim in the instruction: {item.quote[:80]!r}"))
        unresolved = [r for r in item.test_refs if resolve_test_ref(r, tests) is None]
        if item.route == "assertion" and not item.test_refs:
            results.append(GateResult(gate="assertion_ref", item_index=i, passed=False,
                                      message=f"item {i}: assertion route without any test reference"))
        elif unresolved:
            results.append(GateResult(gate="assertion_ref", item_index=i, passed=False,
                                      message=f"item {i}: test reference(s) not in the verifier: {', '.join(unresolved)}"))
        else:
            results.append(GateResult(gate="assertion_ref", item_index=i, passed=True, message="references resolve"))
        why = restates_test(item.text, tests, item.quote)
        results.append(GateResult(gate="no_test_restatement", item_index=i, passed=why is None,
                                  message=f"item {i}: {why}" if why else "states a requirement"))
    n = len(items)
    ok = min_items <= n <= max_items
    results.append(GateResult(gate="item_count", passed=ok,
                              message=f"{n} items (allowed {min_items}-{max_items})" if ok else
                              f"{n} items, outside the allowed {min_items}-{max_items}"))
    return results


def failed_gate_kinds(results: Sequence[GateResult], n_items: int, min_items: int) -> list[str]:
    """Compact rejection codes a generator can act on ('count_low', 'count_high', gate names)."""
    kinds: set[str] = set()
    for r in results:
        if r.passed:
            continue
        if r.gate == "item_count":
            kinds.add("count_low" if n_items < min_items else "count_high")
        else:
            kinds.add(r.gate)
    return sorted(kinds)
