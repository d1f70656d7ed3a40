"""Heuristic category audit: stated requirements mapped to a category scheme by its own words.

Rules (summarised in docs/heuristic-provider.md, "Category audit"):
  * Stated requirements are the instruction's requirement units, found by the same rule the
    heuristic generator uses on its first attempt (synthesize.requirement_units); the quote is
    the unit verbatim.
  * Cue stems of a category are the stems of the content words of its definition text, as given
    in the request (never its name, and no word list in code): lower-cased alphabetic words of
    three or more letters, minus English function words (synthesize.STOPWORDS), reduced by
    synthesize.stem.
  * A requirement is assigned the category owning the earliest word of the requirement whose stem
    is a cue stem (a stem shared by several definitions goes to the one listed first); `none`
    when no word of the requirement is a cue of any definition.
  * A checklist item covers a requirement when their quotes overlap: one (whitespace-normalised)
    contains the other.

Consequences that follow from the scheme text alone: a reduced scheme loses exactly the
requirements whose only cues were in the removed definitions (others are re-assigned to a
remaining definition that shares one of their words); a scheme about another domain covers only
requirements that happen to use its words; a scheme with permuted names covers exactly the same
requirements as the original, each assigned the name now attached to its definition.
"""

from __future__ import annotations

from typing import Any

from gcpc.llm.heuristic.synthesize import assign_category, cue_index, requirement_units


def _norm(text: str) -> str:
    return " ".join(text.split())


def covering_items(quote: str, items: list[dict[str, Any]]) -> list[str]:
    """Ids of the checklist items whose quote overlaps the requirement's quote."""
    q = _norm(quote)
    out = []
    for it in items:
        iq = _norm(it["quote"])
        if iq and (iq in q or q in iq):
            out.append(it["item_id"])
    return out


def audit_requirements(inputs: dict[str, Any]) -> dict[str, Any]:
    index = cue_index(inputs["scheme"])
    items = inputs.get("items", [])
    requirements = []
    seen: set[str] = set()
    for unit in requirement_units(inputs["instruction"]):
        if unit.text in seen:
            continue
        seen.add(unit.text)
        category, cue = assign_category(unit.text, index)
        requirements.append({
            "quote": unit.text,
            "category": category or "none",
            "item_ids": covering_items(unit.text, items),
            "reason": (f"the word '{cue}' occurs in the definition of {category}" if category else
                       "no word of the requirement occurs in any category definition"),
        })
    return {"requirements": requirements}
