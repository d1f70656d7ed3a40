"""Mechanical gates every generated item must pass before a checklist is frozen.

Each gate is deterministic, and every rejection names the gate and the item it rejects
(`[gate] item i ("quote…"): why`; the nonempty gate names the checklist). Code never repairs an
item: a task with a rejected item is regenerated (see generate.py), with every attempt logged.

quote_verbatim
    The item's quote appears in the instruction. Normalisation is whitespace only: runs of
    whitespace (spaces, tabs, line breaks) compare equal to one space, and leading/trailing
    whitespace is ignored. Case, punctuation, Markdown and Unicode are compared exactly, so a quote
    one character off, or a quote of any other text (tests, a reference solution), fails.

assertion_ref
    Every test reference resolves to exactly one test id of the verifier: the full id
    (`file.py::test_x`, `file.py::Class::test_x`, `file.py::test_x[param]`) or an unambiguous
    suffix of it after `::` (`test_x`, `Class::test_x`, `test_x[param]`). A parametrized test's
    function name without its parameter id is not a test id and does not resolve.
    An `assertion` item needs at least one reference; references on other routes must resolve too.

no_test_restatement
    The item states a requirement rather than restating test code. It is rejected when
      (a) its text contains more code syntax (`assert`, `==`, `!=`, `def test_`, `self.`) than its
          instruction quote does, or
      (b) its text shares a contiguous run of at least RESTATE_MIN_RUN word tokens with a test's
          code that covers at least RESTATE_MIN_SHARE of the item's words, and that run of words is
          not itself in the instruction.
    Word tokens are lower-cased `[a-z0-9]+` runs. "Code" is the test source without docstrings and
    comments: verifier docstrings often paraphrase the instruction, and quoting the instruction is
    what items must do. For the same reason a run the instruction states (test authors copy command
    lines and field lists from it) is the instruction's wording, not the test's.

nonempty
    The checklist has at least one item. The item count is otherwise an observation, not a gate
    (the paper reports 4-15 items, median 8, and a 3-item checklist in its SWE-bench transfer): a
    task that states few requirements keeps its short checklist. A checklist with no item is
    unusable; it is rejected (the generator is asked again) and, if it stays empty, reported as not
    synthesizable, never padded.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from gcpc.corpus.models import VerifierTest
from gcpc.llm.heuristic.tokens import words
from gcpc.llm.schemas import GeneratedItem

GateName = Literal["quote_verbatim", "assertion_ref", "no_test_restatement", "nonempty"]
GATES: tuple[GateName, ...] = ("quote_verbatim", "assertion_ref", "no_test_restatement", "nonempty")

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
    """The one test id a reference names (full id, or unambiguous suffix after '::'), else None."""
    ids = [t.id for t in tests]
    if ref in ids:
        return ref
    matches = [i for i in ids if i.endswith("::" + ref)]
    return matches[0] if len(matches) == 1 else None


@lru_cache(maxsize=4096)
def code_only(source: str) -> str:
    """Test source without docstrings and comments (falls back to the raw text if it does not parse)."""
    try:
        with warnings.catch_warnings():  # verifier code may hold invalid escapes; parsing it must not warn
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


@lru_cache(maxsize=4096)
def _code_words(source: str) -> tuple[str, ...]:
    return tuple(words(code_only(source)))


def _longest_shared_run(item: list[str], code: Sequence[str], instruction_text: str) -> int:
    """Longest run of consecutive words shared by item and code that the instruction does not contain.

    A run ending at item word i and code word j extends every shorter run ending there, so if the
    longest one is in the instruction all of its suffixes are too: checking the maximal run at
    each end position is enough.
    """
    best = 0
    prev = [0] * (len(code) + 1)
    for i, x in enumerate(item):
        cur = [0] * (len(code) + 1)
        for j, y in enumerate(code, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                n = cur[j]
                if n > best and (not instruction_text or f" {' '.join(item[i - n + 1:i + 1])} " not in instruction_text):
                    best = n
        prev = cur
    return best


def restates_test(text: str, tests: Sequence[VerifierTest], quote: str = "", instruction: str = "") -> str | None:
    """Why the item text restates test code, or None (rule in the module docstring)."""
    extra = len(_CODE_SYNTAX.findall(text)) - len(_CODE_SYNTAX.findall(quote))
    if extra > 0:
        return "item text contains test-code syntax (assert, ==, !=, def test_, self.) that its quote does not"
    item_words = words(text)
    if not item_words:
        return None
    instruction_text = f" {' '.join(words(instruction))} " if instruction else ""
    for test in tests:
        run = _longest_shared_run(item_words, _code_words(test.source), instruction_text)
        if run >= RESTATE_MIN_RUN and run / len(item_words) >= RESTATE_MIN_SHARE:
            return f"item text repeats {run} consecutive words of the code of {test.id}"
    return None


def _label(i: int, item: GeneratedItem) -> str:
    q = normalize_ws(item.quote)
    return f'item {i} ("{q[:60]}{"…" if len(q) > 60 else ""}")'


def check_items(
    items: Sequence[GeneratedItem],
    instruction: str,
    tests: Sequence[VerifierTest],
) -> list[GateResult]:
    """Every gate on every item, then the nonempty gate; one GateResult per (gate, item)."""
    results: list[GateResult] = []
    for i, item in enumerate(items):
        label = _label(i, item)
        ok = quote_in_instruction(item.quote, instruction)
        results.append(GateResult(gate="quote_verbatim", item_index=i, passed=ok, message=(
            f"[quote_verbatim] {label}: quote found in the instruction" if ok else
            f"[quote_verbatim] {label}: quote does not appear verbatim in the instruction (whitespace is the only normalisation)")))
        unresolved = [r for r in item.test_refs if resolve_test_ref(r, tests) is None]
        if item.route == "assertion" and not item.test_refs:
            ok, why = False, "assertion route without any test reference"
        elif unresolved:
            ok, why = False, "test reference(s) that name no single test of the verifier: " + ", ".join(unresolved)
        else:
            ok, why = True, "test references resolve" if item.test_refs else "no test references"
        results.append(GateResult(gate="assertion_ref", item_index=i, passed=ok, message=f"[assertion_ref] {label}: {why}"))
        restated = restates_test(item.text, tests, item.quote, instruction)
        results.append(GateResult(gate="no_test_restatement", item_index=i, passed=restated is None, message=(
            f"[no_test_restatement] {label}: {restated or 'states a requirement'}")))
    n = len(items)
    results.append(GateResult(gate="nonempty", passed=n > 0, message=(
        f"[nonempty] checklist: {n} items" if n else
        "[nonempty] checklist: no items (if the instruction states any requirement, write it as an item; "
        "if it states none, answer with no items again: never invent one)")))
    return results


def failed_gate_kinds(results: Sequence[GateResult]) -> list[str]:
    """Compact rejection codes a generator can act on (the names of the failed gates)."""
    return sorted({r.gate for r in results if not r.passed})


def item_passes(results: Sequence[GateResult]) -> dict[int, bool]:
    """Per item index: did it pass every per-item gate?"""
    per_item: dict[int, bool] = {}
    for g in results:
        if g.item_index is not None:
            per_item[g.item_index] = per_item.get(g.item_index, True) and g.passed
    return per_item
